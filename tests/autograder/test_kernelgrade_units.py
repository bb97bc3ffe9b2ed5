"""Kernel grading, piece by piece on the CPU: the checks a GPU run applies (with stand-in
launches that behave like the known-bad kernels), the physical-bound flag, the rubric,
what the build refuses, and the reading of generated code."""

import pytest

torch = pytest.importorskip("torch")

from autograder.kernelgrade import evaluate as EV  # noqa: E402
from autograder.kernelgrade import rubric, structure, tirsafe  # noqa: E402
from autograder.kernelgrade.measure import make_harness  # noqa: E402
from autograder.kernelgrade.tasks import (EW_ADD, GEMM_PIPELINED, P_ROWSUM, P_SCALE, RMSNORM,  # noqa: E402
                                          TASKS, get_task, variant_params, variant_values)


@pytest.fixture()
def h():
    return make_harness(seed=1234, device="cpu")


def _add(A, B, C):
    C.copy_((A.float() + B.float()).to(C.dtype))


SHAPE = {"N": 4097, "dtype": "float16"}


def test_a_correct_launch_passes_every_check(h):
    r = EV.check_shape(h, EW_ADD, SHAPE, _add, "aligned")
    assert r["ok"] and r["outputs"][0]["unwritten"] == 0 and not r["inputs_changed"]


@pytest.mark.parametrize("launch, field", [
    (lambda A, B, C: None, "unwritten"),                                                 # empty kernel
    (lambda A, B, C: C[: C.numel() // 2].copy_(A[: C.numel() // 2] + B[: C.numel() // 2]), "unwritten"),  # partial
    (lambda A, B, C: C.copy_((A.to(torch.bfloat16) + B.to(torch.bfloat16)).to(C.dtype)), "mismatched"),   # low precision
    (lambda A, B, C: C.copy_(C), "unwritten"),                                           # "reads the expected output"
])
def test_known_bad_behaviours_fail_with_the_right_count(h, launch, field):
    r = EV.check_shape(h, EW_ADD, SHAPE, launch, "x")
    assert not r["ok"]
    assert r["outputs"][0][field] > 0


def test_a_kernel_that_overwrites_its_input_fails_even_with_the_right_output(h):
    def launch(A, B, C):
        _add(A, B, C)
        A.zero_()

    r = EV.check_shape(h, EW_ADD, SHAPE, launch, "x")
    assert not r["ok"] and r["inputs_changed"] == ["A"] and r["outputs"][0]["ok"]


def test_the_reference_is_computed_after_the_launch_from_untouched_copies(h):
    seen = {}

    def launch(A, B, C):  # a kernel that scribbles on B after reading it still gets judged against the real B
        _add(A, B, C)
        seen["B"] = B.clone()
        B.mul_(0)

    r = EV.check_shape(h, EW_ADD, SHAPE, launch, "x")
    assert r["outputs"][0]["ok"] and r["inputs_changed"] == ["B"]


def test_every_call_gets_fresh_inputs():
    a = make_harness(seed=7, device="cpu")
    x1, x2 = a.rand(16, torch.float32), a.rand(16, torch.float32)
    assert not torch.equal(x1, x2)


def test_tolerances_come_from_the_course_and_catch_fp16_accumulation(h):
    shape = {"M": 128, "N": 128, "K": 1024}

    def fp16_acc(A, B, C):
        acc = torch.zeros((A.shape[0], B.shape[0]), dtype=torch.float16)
        for k in range(0, A.shape[1], 16):
            acc = (acc.float() + A[:, k:k + 16].float() @ B[:, k:k + 16].float().t()).half()
        C.copy_(acc)

    def fp32_acc(A, B, C):
        C.copy_((A.float() @ B.float().t()).half())

    assert EV.check_shape(h, GEMM_PIPELINED, shape, fp32_acc, "ok")["ok"]
    bad = EV.check_shape(h, GEMM_PIPELINED, shape, fp16_acc, "lowp")
    assert not bad["ok"] and bad["outputs"][0]["mismatched"] > 0


def test_rmsnorm_reference_divides_by_the_true_row_length(h):
    shape = {"M": 5, "N": 1000, "dtype": "float16"}

    def padded(X, W, Y):
        xf = X.float()
        Y.copy_((xf * (xf.pow(2).sum(-1, keepdim=True) / 1024 + 1e-6).rsqrt() * W.float()).to(Y.dtype))

    def right(X, W, Y):
        xf = X.float()
        Y.copy_((xf * (xf.pow(2).mean(-1, keepdim=True) + 1e-6).rsqrt() * W.float()).to(Y.dtype))

    assert EV.check_shape(h, RMSNORM, shape, right, "ok")["ok"]
    assert not EV.check_shape(h, RMSNORM, shape, padded, "padded")["ok"]


@pytest.mark.parametrize("key", sorted(k for k, t in TASKS.items() if t.kind == "cuda"))
def test_every_task_reference_accepts_its_own_fp32_math(h, key):
    """The reference, the tolerance and the input builder of each task agree: a launch that
    computes the task in fp32 (from the same rounded inputs) passes on every fixed shape."""
    task = get_task(key)
    shape = min(task.check_shapes, key=lambda s: sum(v for v in s.values() if isinstance(v, int)))

    def launch(*args):
        params = task.signature(shape)
        inputs = {p.name: a for p, a in zip(params, args) if not p.output}
        want = task.reference({k: v.clone() if p_tensor(v) else v for k, v in inputs.items()}, shape)
        for p, a in zip(params, args):
            if p.output:
                a.copy_(want[p.name].to(a.dtype))

    assert EV.check_shape(h, task, shape, launch, "fp32")["ok"]


def p_tensor(v) -> bool:
    return isinstance(v, torch.Tensor)


def test_a_scalar_parameter_is_passed_by_value_and_fresh_per_call(h):
    """The primer's scale takes s as a T.float32 scalar: the grader draws a new factor per call,
    passes it as a number, and judges against x * s computed in fp64."""
    shape = {"N": 1000, "dtype": "float16"}
    seen = []

    def scale(X, Y, s):
        assert isinstance(s, float)
        seen.append(s)
        Y.copy_((X.float() * s).to(Y.dtype))

    assert EV.check_shape(h, P_SCALE, shape, scale, "a")["ok"]
    assert EV.check_shape(h, P_SCALE, shape, scale, "b")["ok"]
    assert seen[0] != seen[1]
    wrong = EV.check_shape(h, P_SCALE, shape, lambda X, Y, s: Y.copy_(X * 0.5), "fixed factor")
    assert not wrong["ok"]


def test_a_row_sum_in_low_precision_fails_the_fp32_tolerance(h):
    shape = {"M": 64, "N": 4096, "dtype": "float16"}

    def fp32(X, Y):
        Y.copy_(X.float().sum(-1))

    def fp16(X, Y):  # tile-wise partial sums kept in fp16
        acc = torch.zeros(X.shape[0], dtype=torch.float16)
        for k in range(0, X.shape[1], 128):
            acc = (acc.float() + X[:, k:k + 128].float().sum(-1)).half()
        Y.copy_(acc.float())

    assert EV.check_shape(h, P_ROWSUM, shape, fp32, "ok")["ok"]
    assert not EV.check_shape(h, P_ROWSUM, shape, fp16, "fp16")["ok"]


# ----------------------------------------------------------------------------- speed and flags
def test_a_time_below_the_copy_bound_is_flagged():
    nbytes = 3 * (1 << 27) * 2  # 805 MB
    assert EV.physical_flags(EW_ADD, 0.200, nbytes, None, 4500.0, None) == []  # 4 TB/s: plausible
    flags = EV.physical_flags(EW_ADD, 0.050, nbytes, None, 4500.0, None)  # 16 TB/s: impossible
    assert len(flags) == 1 and "copy bound" in flags[0]


def test_a_time_below_the_flop_bound_is_flagged():
    flops = 2 * 4096 ** 3
    assert EV.physical_flags(GEMM_PIPELINED, 0.2, None, flops, None, 989.5e12) == []
    assert EV.physical_flags(GEMM_PIPELINED, 0.05, None, flops, None, 989.5e12)


def test_measure_speed_flags_a_launch_that_does_nothing_after_the_first(h):
    calls = {"n": 0}

    def lazy(A, B, C):  # computes once, then returns at once: the timed launches are empty
        calls["n"] += 1
        if calls["n"] == 1:
            _add(A, B, C)

    import dataclasses

    # a byte count no kernel could move in the time a do-nothing launch takes
    task = dataclasses.replace(EW_ADD, cost=lambda s: (1e12, 1e9, "test: a huge byte count"))
    h._copy_bw = 100.0  # GB/s, as if measured
    sp = EV.measure_speed(h, task, {"N": 1 << 12, "dtype": "float16"}, lazy, rounds=1)
    assert sp["after_timing_ok"] and sp["flags"]
    v = rubric.score_speed(2, task, {"elaborate": {"tirs": ["x"], "errors": {}}, "interface": {}, "build": {},
                                     "gpu": True, "correct": [{"ok": True, "label": "x"}], "speed": sp})
    assert v.status == "flagged" and v.score == 0


# ----------------------------------------------------------------------------- rubric
def _R(**kw):
    R = {"elaborate": {"errors": {}, "tirs": ["a"]}, "interface": {}, "build": {}, "structure": None,
         "correct": None, "speed": None, "crash": None, "timeout": None, "ascend": None, "gpu": True}
    R.update(kw)
    return R


def test_speed_levels_give_the_highest_reached_fraction():
    assert rubric.speed_fraction(None, EW_ADD.levels) == 0
    assert rubric.speed_fraction(0.5, EW_ADD.levels) == 0
    assert rubric.speed_fraction(0.75, EW_ADD.levels) == 0.5
    assert rubric.speed_fraction(1.01, EW_ADD.levels) == 1.0


def test_speed_points_only_for_a_correct_kernel():
    sp = {"ms": 0.2, "metric": 0.95, "after_timing_ok": True, "flags": [], "shape": {"N": 1}, "baseline_ms": 0.2,
          "copy_gbps": 4000.0}
    wrong = _R(correct=[{"ok": False, "label": "a", "outputs": [{"ok": False, "unwritten": 3, "nonfinite": 0,
                                                                  "mismatched": 0, "numel": 9, "atol": 1e-3,
                                                                  "rtol": 1e-3, "max_abs_err": 0.0}]}], speed=sp)
    assert rubric.score_speed(2, EW_ADD, wrong).score == 0
    right = _R(correct=[{"ok": True, "label": "a"}], speed=sp)
    assert rubric.score_speed(2, EW_ADD, right).score == 2
    assert rubric.score_speed(2, EW_ADD, _R(correct=[{"ok": True, "label": "a"}],
                                            speed={**sp, "metric": 0.8})).status == "partial"


def test_without_a_gpu_correctness_and_speed_are_skipped_not_zeroed_for_cause():
    R = _R(gpu=False)
    for aspect in ("correct", "speed"):
        v = rubric.score(aspect, 3, EW_ADD, R)
        assert v.status == "skipped" and "GPU" in v.message


def test_wrong_feedback_names_counts_and_tolerances_never_expected_values():
    R = _R(correct=[{"ok": False, "label": "N=5", "inputs_changed": [], "outputs": [
        {"ok": False, "unwritten": 0, "nonfinite": 0, "mismatched": 2, "numel": 5, "atol": 2e-3, "rtol": 2e-3,
         "max_abs_err": 0.5}]}])
    v = rubric.score_correct(3, EW_ADD, R)
    assert v.status == "wrong" and "2 of 5" in v.message and "expected" not in v.message.lower()


def test_interface_and_elaboration_failures_are_named():
    v = rubric.score_correct(3, EW_ADD, _R(elaborate={"errors": {"*": {"status": "malformed", "error": "expected a "
                                                                                "@tilelang.jit factory"}}, "tirs": []}))
    assert v.status == "malformed" and "factory" in v.message
    v = rubric.score_correct(3, EW_ADD, _R(interface={"N=1": "parameter 2 (C) must be float16, got float32"}))
    assert v.status == "malformed" and "float16" in v.message


# ----------------------------------------------------------------------------- what the build refuses
def _tir(body: str, params: str = "A: T.Tensor((16,), 'float16'), B: T.Tensor((16,), 'float16'), "
                                   "C: T.Tensor((16,), 'float16')"):
    import tilelang.language as T  # noqa: F401

    from autograder.kernelgrade.worker import _compiled

    ns = {"T": T}
    src = (f"@T.prim_func\ndef main({params}):\n    with T.Kernel(1, threads=32) as bx:\n" +
           "\n".join("        " + ln for ln in body.splitlines()))
    exec(_compiled(src, f"test cell {abs(hash(src))}"), ns)
    return ns["main"]


def test_the_build_refuses_pasted_source_and_odd_extern_names():
    pytest.importorskip("tilelang")
    ok = _tir("for i in T.Parallel(16):\n    C[i] = A[i] + B[i]")
    tirsafe.check_body(ok)
    with pytest.raises(tirsafe.TirError, match="pragma_import_c"):
        tirsafe.check_body(_tir("T.import_source('int x;')\nfor i in T.Parallel(16):\n    C[i] = A[i]"))
    with pytest.raises(tirsafe.TirError, match="string constant"):
        tirsafe.check_body(_tir("for i in T.Parallel(16):\n    C[i] = T.call_extern('float16', 'f(); system(\"x\")', A[i])"))
    with pytest.raises(tirsafe.TirError, match="not a function name"):
        tirsafe.check_body(_tir("for i in T.Parallel(16):\n    C[i] = T.call_extern('float16', 'f(A[0]) + g', A[i])"))
    with pytest.raises(tirsafe.TirError, match="call_packed"):
        tirsafe.check_body(_tir("T.evaluate(T.call_packed('runtime.ModuleLoadFromFile', 'x.so'))\n"
                                "for i in T.Parallel(16):\n    C[i] = A[i]"))


def test_the_interface_is_checked_by_position_shape_and_dtype():
    pytest.importorskip("tilelang")
    f = _tir("for i in T.Parallel(16):\n    C[i] = A[i] + B[i]")
    tirsafe.check_interface(f, EW_ADD.signature({"N": 16, "dtype": "float16"}))
    with pytest.raises(tirsafe.TirError, match="shape"):
        tirsafe.check_interface(f, EW_ADD.signature({"N": 17, "dtype": "float16"}))
    with pytest.raises(tirsafe.TirError, match="bfloat16"):
        tirsafe.check_interface(f, EW_ADD.signature({"N": 16, "dtype": "bfloat16"}))
    two = _tir("for i in T.Parallel(16):\n    B[i] = A[i]", "A: T.Tensor((16,), 'float16'), B: T.Tensor((16,), 'float16')")
    with pytest.raises(tirsafe.TirError, match="3 parameters"):
        tirsafe.check_interface(two, EW_ADD.signature({"N": 16, "dtype": "float16"}))


def test_compile_options_allow_only_listed_flags_and_no_out_idx():
    assert tirsafe.compile_options({"out_idx": None, "compile_flags": ["-O3"], "pass_configs": {"tl.disable_tma_lower": True}})
    with pytest.raises(tirsafe.TirError, match="out_idx"):
        tirsafe.compile_options({"out_idx": [-1]})
    with pytest.raises(tirsafe.TirError, match="not allowed"):
        tirsafe.compile_options({"compile_flags": ["-Xcompiler", "-fplugin=/tmp/x.so"]})
    with pytest.raises(tirsafe.TirError, match="pass_configs"):
        tirsafe.compile_options({"pass_configs": {"tir.something": 1}})


def test_the_course_kernels_pass_the_build_checks():
    """No false alarm on what the course itself writes (every family, several schedules)."""
    pytest.importorskip("tilelang")
    from kernels import elementwise as E, fused as FU, norm as N, primer as PR, quant as Q, rope as R
    from kernels.gemm import ladder as L

    funcs = [E.add_per_thread.get_tir(4096, "float16"), E.scale_cast.get_tir(4096), N.rmsnorm_rows.get_tir(64, 4096),
             N.rmsnorm_splitk.get_tir(4, 16384), R.rope_blocked.get_tir(64, 8, 128, 128, "neox", "float16", 2, 256),
             FU.rmsnorm_rope.get_tir(64, 4096, 128), FU.rmsnorm_rope_fp8.get_tir(64, 4096, 128),
             Q.quant_fp8.get_tir(64, 4096, 128), L.rung3_pipelined.get_tir(1024, 1024, 1024),
             L.rung4_annotated.get_tir(1024, 1024, 1024), L.rung5_mma.get_tir(1024, 1024, 1024),
             PR.copy_kernel.get_tir(4097, "float16"), PR.scale_kernel.get_tir(4097, "bfloat16", 256, 8),
             PR.row_sum_kernel.get_tir(1000, 1000, "float16")]
    for f in funcs:
        tirsafe.check_body(tirsafe.load(__import__("tvm").ir.save_json(f)))


# ----------------------------------------------------------------------------- reading generated code
SRC = '''extern "C" __global__ void __launch_bounds__(256, 1) main_kernel(const half_t* __restrict__ A, const half_t* __restrict__ B, half_t* __restrict__ C) {
  uint4 v_ = *(uint4*)(A + (((int)threadIdx.x) * 8));
  uint4 v__1 = *(uint4*)(B + (((int)threadIdx.x) * 8));
  C[((int)threadIdx.x)] = A[((int)threadIdx.x)];
  *(uint2*)(C + (((int)threadIdx.x) * 8)) = v_;
}'''


def test_global_accesses_are_read_per_parameter_and_direction():
    acc = structure.global_accesses(SRC)
    assert max(acc["A"]["load"]) == 16 and max(acc["B"]["load"]) == 16
    assert sorted(acc["C"]["store"]) == [2, 8] and acc["C"]["load"] == []


def test_width_expectations_use_the_task_names_and_the_heavy_operands():
    a = {"accesses": {"A": {"load": 16, "store": 0}, "B": {"load": 16, "store": 0}, "C": {"load": 0, "store": 8}},
         "paths": {}, "stages": []}
    params = EW_ADD.signature({"N": 1 << 20, "dtype": "float16"})
    res = {e["key"]: e["ok"] for e in structure.evaluate(("vector_load_16B", "vector_store_16B"), a, params)}
    assert res == {"vector_load_16B": True, "vector_store_16B": False}


def test_kernel_variants_are_lab_parameters_drawn_per_student():
    """The variant shape of a kernel exercise is made of the lab's own parameters (drawn by
    autograder.variants, so they are shown in P and signed in the tag); the book's shape is the
    default and no student gets it."""
    from autograder.labs import load_lab
    from autograder.variants import variant_for

    spec, _ = load_lab("elementwise")
    keys = {p.key for p in spec.params}
    assert {"K1.N", "K1.dtype", "K3.rotate"} <= keys
    a, b = variant_for(spec, "alice"), variant_for(spec, "bob")
    assert a != b and a == variant_for(spec, "alice")
    assert variant_values("K1", "ew_add", a) == {"N": a["K1.N"], "dtype": a["K1.dtype"]}
    shapes = EW_ADD.shapes_for(variant_values("K1", "ew_add", a))
    assert shapes[-1][0].startswith("variant") and shapes[-1][1]["N"] == a["K1.N"]
    for p in variant_params("K1", "ew_add"):
        if p.key == "K1.N":
            assert p.default not in p.choices


@pytest.mark.parametrize("key", sorted(k for k, t in TASKS.items() if t.kind == "cuda"))
def test_every_variant_shape_keeps_the_interface_constraints(key):
    """Whatever a student draws stays inside what the interface promises (ragged where it may be,
    aligned where it must be): the reference kernels handle every drawn shape."""
    import itertools

    task = get_task(key)
    names = [n for n, _, _ in task.variant_pools]
    pools = [sorted({d, *pool}, key=str) for _, d, pool in task.variant_pools]
    for combo in itertools.product(*pools):
        s = task.variant_shape(dict(zip(names, combo)))
        assert set(task.factory_args) <= set(s), s
        if key == "ew_add":
            assert s["N"] % 2 == 1  # never a whole block
        if key == "gemm_shared":
            assert all(s[k] % 128 == 0 for k in "MNK")
        if key == "gemm_pipelined":
            assert s["N"] % 8 == 0 and s["K"] % 8 == 0 and s["K"] >= 384
        if key == "rope":
            assert s["rope_dim"] in (s["D"], s["D"] // 2) and s["rope_dim"] % 2 == 0
        if key == "primer_row_sum":
            assert s["N"] % 8 == 0  # a 16-byte row for TMA in every dtype
        if key in ("primer_copy", "primer_scale"):
            assert s["N"] % 256  # a ragged tail


def test_the_interface_accepts_a_scalar_only_where_the_task_has_one():
    pytest.importorskip("tilelang")
    sig = P_SCALE.signature({"N": 16, "dtype": "float16"})
    ok = _tir("for i in T.Parallel(16):\n    Y[i] = X[i]", "X: T.Tensor((16,), 'float16'), Y: T.Tensor((16,), 'float16'), "
              "s: T.float32")
    tirsafe.check_interface(ok, sig)
    as_tensor = _tir("for i in T.Parallel(16):\n    Y[i] = X[i]", "X: T.Tensor((16,), 'float16'), "
                     "Y: T.Tensor((16,), 'float16'), s: T.Tensor((1,), 'float32')")
    with pytest.raises(tirsafe.TirError, match="scalar"):
        tirsafe.check_interface(as_tensor, sig)
    as_int = _tir("for i in T.Parallel(16):\n    Y[i] = X[i]", "X: T.Tensor((16,), 'float16'), "
                  "Y: T.Tensor((16,), 'float16'), s: T.int32")
    with pytest.raises(tirsafe.TirError, match="float32 scalar"):
        tirsafe.check_interface(as_int, sig)


# ----------------------------------------------------------------------------- non-finite numbers on the wire
@pytest.mark.parametrize("launch", [
    lambda A, B, C: None,                      # the empty kernel: every element still poison
    lambda A, B, C: C.copy_(C + A.to(C.dtype)),  # reads the (poisoned) output: NaN everywhere
], ids=["empty", "reads_output"])
def test_a_never_written_output_travels_through_the_worker_events_and_is_wrong(h, launch, monkeypatch, tmp_path):
    """The recorded H200 run graded add_empty and add_reads_output ``error``: the max |err| of
    an output that is all poison is NaN and the worker's JSON send refused it.  Here the GPU
    phase of one part runs (CPU harness), its events go out through the worker's own ``send``,
    are read back line by line as strict JSON (as the sandbox reads the result pipe), folded
    by the pipeline and scored: ``wrong``, with no crash."""
    import json
    import os

    from autograder.kernelgrade import pipeline, worker

    out = tmp_path / "events"
    fd = os.open(out, os.O_WRONLY | os.O_CREAT)
    monkeypatch.setattr(worker, "_FD", fd)
    monkeypatch.setattr(worker, "_SENT", [0])
    shape = {"N": 4097, "dtype": "float16"}
    pre = {"gid": "k1_add", "task": EW_ADD, "built": {"x": {"kernel": launch}}, "errors": {}, "funcs": {},
           "tirs": [{"label": "x", "shape": shape, "role": "check"}], "time_label": "x"}
    EV.gpu_part(pre, h, worker.send)
    os.close(fd)

    def no_constant(c):
        raise AssertionError(f"the worker sent {c}, which is not JSON")

    events = [json.loads(line, parse_constant=no_constant) for line in out.read_text().splitlines()]
    assert [e["event"] for e in events] == ["start", "correct"]
    assert events[1]["shapes"][0]["outputs"][0]["max_abs_err"] == "nan"
    R = _R()
    pipeline._fold_evaluate(events, {"k1_add": R}, {})
    assert R["crash"] is None
    v = rubric.score_correct(3, EW_ADD, R)
    assert v.status == "wrong" and v.score == 0 and "unwritten" in v.message and "not finite" in v.message
    assert rubric.score_speed(2, EW_ADD, R).status == "wrong"


def test_a_non_finite_max_error_fails_the_comparison_whatever_its_flag_says():
    out = {"ok": True, "unwritten": 0, "nonfinite": 0, "mismatched": 0, "numel": 5, "atol": 2e-3, "rtol": 2e-3}
    for err in ("nan", "inf", float("nan")):
        R = _R(correct=[{"ok": True, "label": "a", "outputs": [{**out, "max_abs_err": err}]}])
        assert rubric.score_correct(3, EW_ADD, R).status == "wrong", err
    R = _R(correct=[{"ok": True, "label": "a", "outputs": [{**out, "max_abs_err": 1e-4}]}])
    assert rubric.score_correct(3, EW_ADD, R).status == "right"
    sp = {"ms": "nan", "metric": "nan", "after_timing_ok": True, "flags": [], "shape": {"N": 1}}
    v = rubric.score_speed(2, EW_ADD, _R(correct=[{"ok": True, "label": "a"}], speed=sp))
    assert v.status == "wrong" and v.score == 0
