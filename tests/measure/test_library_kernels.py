"""The note of the library's kernel names (measure/suites/gemm/common.py): none without CUDA, and a profiler
that fails is recorded as an error of that note while the suite goes on."""
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
