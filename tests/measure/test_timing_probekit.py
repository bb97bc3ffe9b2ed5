"""CPU checks of the timing probes' shared helper (measure/results/timing/probekit.py): a whole kernel that misses the
fp32 reference is left out of the search and its error recorded, one that matches and a timing probe (wrong by
design, not checked) are searched beside cuBLAS, and the search is recorded as it lands with the harness back on the
write flush."""

import json
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "measure" / "results" / "timing"))
import probekit  # noqa: E402

from kernels.gemm.w4a16 import config, label, w4a16_ref  # noqa: E402
from measure.harness import Harness  # noqa: E402


def test_candidates_checked_and_search_recorded(tmp_path, monkeypatch):
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    h = Harness(device="cpu", log=None)
    right, wrong = config(64, 128, 8, stages_w=8), config(64, 256, 4, stages_w=8)

    def ok(a, w, s, o):
        o.copy_(w4a16_ref(a, w, s, 128).to(o.dtype))

    def zero(a, w, s, o):
        o.zero_()

    built = {(64, label(right), ""): ok, (64, label(wrong), ""): zero, (64, label(right), "loadonly"): zero}
    forms = [(right, ""), (wrong, ""), (right, "loadonly")]
    res = {}
    cc = probekit.shape_candidates(h, res, 64, 256, 256, forms, built, 3, prefix="M=64 ")
    assert sorted(cc) == ["M=64 cuBLAS fp16 weights", f"M=64 {label(right)}:loadonly", f"M=64 {label(right)}:whole"]
    assert res["errors"][f"M=64 {label(right)}:whole #3"] < 1e-3
    assert res["errors"][f"M=64 {label(wrong)}:whole #3"] == pytest.approx(1.0)
    out = tmp_path / "probe.json"
    probekit.flush_search(h, res, "clean #3", "clean flush: test", cc, "clean", str(out))
    assert h.protocol["flush_mode"] == "write"
    rec = json.loads(out.read_text())["searches"]["clean #3"]
    assert rec["best"] in cc and set(rec["us"]) == set(cc)
