"""The notes of the library's kernel names and of the kernel timeline (measure/suites/gemm/common.py): none without
CUDA, and a profiler that fails is recorded as an error of that note while the suite goes on; the timeline's
parsing of a profiled loop of flushes and calls."""
from measure.suites.gemm import common


class _Harness:
    def __init__(self, is_cuda):
        self.is_cuda, self.notes, self.errors = is_cuda, [], []

    def note(self, name, text, **kw):
        self.notes.append((name, text, kw))

    def error(self, name, exc):
        self.errors.append((name, str(exc)))


def test_no_note_without_cuda():
    h = _Harness(False)
    common.note_library_kernels(h, "cuBLAS kernel 8x8x8", lambda: None)
    assert h.notes == [] and h.errors == []


def test_names_are_noted_and_a_failing_profiler_is_an_error_of_the_note(monkeypatch):
    h = _Harness(True)
    monkeypatch.setattr(common, "library_kernels", lambda fn: ["nvjet_sm90_hsh_144x128_64x6_1x2_h_bz_TNN"])
    common.note_library_kernels(h, "cuBLAS kernel 1536x1536x8192", lambda: None)
    assert h.notes == [("cuBLAS kernel 1536x1536x8192", "nvjet_sm90_hsh_144x128_64x6_1x2_h_bz_TNN",
                        {"kernels": ["nvjet_sm90_hsh_144x128_64x6_1x2_h_bz_TNN"]})]

    def broken(fn):
        raise RuntimeError("CUPTI unavailable")

    monkeypatch.setattr(common, "library_kernels", broken)
    common.note_library_kernels(h, "cuBLAS kernel 1024x1024x16384", lambda: None)
    assert h.errors == [("cuBLAS kernel 1024x1024x16384", "CUPTI unavailable")] and len(h.notes) == 1


# ---------------------------------------------------------------- where one call's time goes (kernel timeline)
def _k(name, ts, dur):
    return {"name": name, "ts": ts, "dur": dur}


FLUSH = {"fill"}


def _calls(per_call, n=5, start=0.0):
    """A trace of ``n`` calls: a 60 us flush, then each (name, offset after the flush's end, duration)."""
    ev, t = [], start
    for i in range(n):
        ev.append(_k("fill", t, 60.0))
        for name, off, dur in per_call(i):
            ev.append(_k(name, t + 60.0 + off, dur))
        t += 200.0
    return ev


def test_timeline_takes_durations_gaps_and_span_per_call():
    # stream-K 54 us, 1.4 us of nothing, a 3.3 us fix-up; the third call's kernels run 1 us longer
    ev = _calls(lambda i: [("sk", 1.5, 54.0 + (i == 2)), ("fix", 1.5 + 54.0 + (i == 2) + 1.4, 3.3)])
    t = common.timeline_from_trace(list(reversed(ev)), FLUSH)  # any order
    assert t["kernels"] == ["sk", "fix"] and t["calls"] == 5 and t["kernels_per_call"] == [2]
    assert t["dur_us"] == [54.0, 3.3]
    assert abs(t["gaps_us"][0] - 1.4) < 1e-9 and abs(t["span_us"] - 58.7) < 1e-9


def test_a_dependent_launch_shows_as_a_negative_gap_and_the_span_ends_with_the_last_to_end():
    # the reduction starts 1 us into a 48 us split-K kernel and ends 3.5 us after it
    t = common.timeline_from_trace(_calls(lambda i: [("split", 1.0, 48.0), ("reduce", 2.0, 50.5)]), FLUSH)
    assert t["gaps_us"] == [-47.0] and t["span_us"] == 51.5


def test_only_the_most_common_kernel_count_is_used_and_calls_before_the_first_flush_are_not():
    ev = [_k("stray", -50.0, 5.0)] + _calls(lambda i: [("gemm", 1.0, 50.0)] + ([("extra", 52.0, 1.0)] if i == 4 else []))
    t = common.timeline_from_trace(ev, FLUSH)
    assert t["kernels"] == ["gemm"] and t["calls"] == 4 and t["kernels_per_call"] == [1, 2] and t["dur_us"] == [50.0]


def test_a_trace_without_kernels_between_flushes_is_an_error():
    import pytest

    with pytest.raises(ValueError, match="no call launched a kernel"):
        common.timeline_from_trace(_calls(lambda i: []), FLUSH)


def test_timeline_note_names_each_subject_and_a_failing_profiler_is_an_error_of_the_note(monkeypatch):
    h = _Harness(True)
    tl = {"kernels": ["sk", "fix"], "dur_us": [54.04, 3.31], "gaps_us": [1.4], "span_us": 58.75, "calls": 30}
    monkeypatch.setattr(common, "kernel_timeline", lambda h, fn, calls: tl)
    common.note_kernel_timeline(h, "stream-K ws 1536x1536x8192 timeline", {"stream-K": lambda: None})
    assert h.notes == [("stream-K ws 1536x1536x8192 timeline", "stream-K: 54.0 + 3.3 us, span 58.8",
                        {"timeline": {"stream-K": tl}})]

    def broken(h, fn, calls):
        raise RuntimeError("CUPTI unavailable")

    monkeypatch.setattr(common, "kernel_timeline", broken)
    common.note_kernel_timeline(h, "x timeline", {"cuBLAS": lambda: None})
    assert h.errors == [("x timeline", "CUPTI unavailable")] and len(h.notes) == 1
    common.note_kernel_timeline(_Harness(False), "y", {"cuBLAS": lambda: None})  # no CUDA: nothing, no error
