"""Instructions per element of a generated kernel, counted on the CPU: the record behind the first
chapter's explanation of why the fused ``sin(cos(x))`` stays far from copy bandwidth.

The ledger prices ``sin(cos(x))`` at 2 FLOP per element (one per transcendental), which puts it
deep in the memory-bound corner.  The machine executes something else: accurate ``sinf``/``cosf``
(tilelang compiles without ``--use_fast_math``) each reduce the argument by ``pi/2`` in three FMAs
(Cody-Waite), test it against 105615 (beyond that a slow Payne-Hanek path takes over), pick the
quadrant and evaluate a polynomial.  This module compiles the chapter's kernel for ``sm_90a`` with
nvcc, disassembles the cubin (``nvdisasm``) and counts the instructions a thread executes when every
argument is small -- the path of every element here, since ``cos(x)`` lies in [-1, 1] and ``x`` is a
normal sample: the regions a ``|x| < 105615`` test branches over are left out.  The PTX (nvcc alone)
is counted the same way as a second view.  The same source compiled with ``--use_fast_math`` is
counted too: ``__sinf``/``__cosf`` on the special function unit (``MUFU``).

    python -m measure.instructions            # writes measure/results/lowered/pytorch_sincos.json
    python -m measure.instructions --check    # compiles again and compares with the record

``nvdisasm`` is looked up in ``$NVDISASM``, on ``PATH`` and in the ``nvidia-cuda-nvdisasm`` wheel (part of the
test extra and of requirements.lock on x86-64 Linux; elsewhere ``pip install --target DIR nvidia-cuda-nvdisasm``,
then ``NVDISASM=DIR/nvidia/cu13/bin/nvdisasm``); without it the record keeps its SASS counts and only the PTX is
compared.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Instr", "parse_sass", "parse_ptx", "fast_path", "classify", "count", "sincos_record", "RECORD"]

RECORD = Path(__file__).resolve().parent / "results" / "lowered" / "pytorch_sincos.json"
#: The huge-argument threshold of CUDA's sinf/cosf: beyond it the Payne-Hanek reduction runs.
HUGE = 105615.0
_HUGE_PTX = "0f47CE4780"  # 105615.0f


@dataclass(frozen=True)
class Instr:
    pred: str  # "" or "@!P0", "@%p9"
    op: str  # opcode with modifiers: "FFMA", "LDG.E.128.CONSTANT", "fma.rn.f32"
    args: str


# ------------------------------------------------------------------ parsing
def parse_sass(text: str) -> tuple[list[Instr], dict[str, int]]:
    """Instructions and labels (label -> index of the next instruction) of nvdisasm/cuobjdump output."""
    ins: list[Instr] = []
    labels: dict[str, int] = {}
    for ln in text.splitlines():
        m = re.match(r"^\s*(\.L_x_\d+):", ln)
        if m:
            labels[m.group(1)] = len(ins)
            continue
        m = re.match(r"^\s+/\*[0-9a-f]{4,}\*/\s+(@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_.]*)\s*(.*?)\s*;", ln)
        if m:
            ins.append(Instr((m.group(1) or "").strip(), m.group(2), m.group(3)))
    return ins, labels


def parse_ptx(text: str, entry: str = "main_kernel") -> tuple[list[Instr], dict[str, int]]:
    """Instructions and labels of one entry's body in PTX (declarations, comments and inline-asm
    braces left out; an inline-asm block's instructions count)."""
    body = text[text.index(f".entry {entry}("):]
    body = body[body.index("{") + 1:]
    ins: list[Instr] = []
    labels: dict[str, int] = {}
    for ln in body.splitlines():
        s = ln.strip()
        if not s or s.startswith("//") or s.startswith(".") or s in ("{", "}"):
            continue
        m = re.match(r"^(\$L__\w+):$", s)
        if m:
            labels[m.group(1)] = len(ins)
            continue
        s = s.lstrip("{").strip()
        if not s or s.startswith(".reg") or s == "}":
            continue
        for part in [p.strip() for p in s.split(";") if p.strip() and p.strip() != "}"]:
            m = re.match(r"^(@!?%p\d+\s+)?([a-z][\w.]*)\s*(.*)$", part)
            if m:
                ins.append(Instr((m.group(1) or "").strip(), m.group(2), m.group(3)))
    return ins, labels


# ------------------------------------------------------------------ the executed path
def _sass_slow_regions(ins: list[Instr], labels: dict[str, int]) -> set[int]:
    slow: set[int] = set()
    for k, i in enumerate(ins):
        if i.op.startswith("FSETP") and "105615" in i.args:
            pred = re.search(r"\b(P\d)\b", i.args).group(1)
            negated = ".GE." in i.op  # |x| >= 105615 sets P: the fast path branches when !P
            want = f"@!{pred}" if negated else f"@{pred}"
            for j in range(k + 1, len(ins)):
                if ins[j].op == "BRA" and ins[j].pred == want:
                    target = re.search(r"\((\.L_x_\d+)\)", ins[j].args).group(1)
                    slow.update(range(j + 1, labels[target]))
                    break
    return slow


def _ptx_slow_regions(ins: list[Instr], labels: dict[str, int]) -> set[int]:
    slow: set[int] = set()
    for k, i in enumerate(ins):
        if i.op.startswith("setp.") and _HUGE_PTX in i.args:
            pred = re.search(r"(%p\d+)", i.args).group(1)
            want = f"@{pred}" if (".lt" in i.op) else f"@!{pred}"  # setp.ltu: small argument sets p
            for j in range(k + 1, len(ins)):
                if ins[j].op.startswith("bra") and ins[j].pred == want:
                    target = ins[j].args.strip().rstrip(";")
                    # the slow region runs from the branch to its target, and the target rejoins
                    slow.update(range(j + 1, labels[target]))
                    break
    return slow


def fast_path(ins: list[Instr], labels: dict[str, int], kind: str = "sass") -> list[Instr]:
    """The instructions a thread executes up to its exit when every argument is small: the regions a
    huge-argument test branches over are left out, and so is what follows the first exit (the
    trailing self-branch and the alignment NOPs)."""
    slow = (_sass_slow_regions if kind == "sass" else _ptx_slow_regions)(ins, labels)
    end = next((k for k, i in enumerate(ins) if i.op in ("EXIT", "ret")), len(ins) - 1)
    return [i for k, i in enumerate(ins[:end + 1]) if k not in slow]


#: SASS opcode (first component) -> class
_CLASSES = {
    "fp32 arithmetic": ("FFMA", "FMUL", "FADD", "FSEL", "FSETP", "FMNMX", "FSET"),
    "special function (MUFU)": ("MUFU",),
    "conversion": ("F2I", "I2F", "I2FP", "F2F", "HADD2", "F2FP", "FRND"),
    "integer and logic": ("IMAD", "IADD3", "VIADD", "LOP3", "SHF", "ISETP", "LEA", "IABS", "SEL", "PRMT", "MOV"),
    "memory": ("LDG", "STG", "LDL", "STL", "LDS", "STS", "LDC", "ULDC"),
    "control": ("BRA", "BSSY", "BSYNC", "EXIT", "NOP", "BAR", "S2R", "S2UR", "UMOV", "UIADD3"),
}


def classify(op: str) -> str:
    head = op.split(".")[0]
    for name, ops in _CLASSES.items():
        if head in ops:
            return name
    return "other"


def count(ins: list[Instr], per: int, kind: str = "sass") -> dict:
    """Totals of an executed path: per thread, per element (``per`` elements a thread), by class
    (SASS) or by opcode (PTX)."""
    out = {"per_thread": len(ins), "per_element": round(len(ins) / per, 3)}
    if kind == "sass":
        c = Counter(classify(i.op) for i in ins)
        out["by_class_per_element"] = {k: round(v / per, 3) for k, v in sorted(c.items())}
        out["opcodes_per_thread"] = dict(sorted(Counter(i.op.split(".")[0] for i in ins).items()))
    else:
        out["opcodes_per_thread"] = dict(sorted(Counter(i.op.split(".")[0] for i in ins).items()))
    return out


# ------------------------------------------------------------------ compiling
def _tilelang_includes() -> list[str]:
    from tilelang.env import CUTLASS_INCLUDE_DIR, TILELANG_TEMPLATE_PATH

    return ["-I" + CUTLASS_INCLUDE_DIR, "-I" + TILELANG_TEMPLATE_PATH]


def nvcc(src: str, fmt: str, arch: str = "sm_90a", fast_math: bool = False) -> bytes:
    """Compile a tilelang CUDA source with the flags tilelang uses (C++20, explicit gencode) to
    ``fmt`` (``ptx`` or ``cubin``)."""
    exe = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    with tempfile.TemporaryDirectory() as tmp:
        cu = Path(tmp) / "k.cu"
        cu.write_text(src, encoding="utf-8")
        out = Path(tmp) / f"k.{fmt}"
        num = arch.removeprefix("sm_")
        cmd = [exe, "-std=c++20", "-w", "-Xcudafe", "--diag_suppress=177", f"--{fmt}",
               "-gencode", f"arch=compute_{num},code=sm_{num}", *_tilelang_includes(), "-o", str(out), str(cu)]
        if fast_math:
            cmd.append("--use_fast_math")
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        return out.read_bytes()


def find_nvdisasm() -> str | None:
    if os.environ.get("NVDISASM"):
        return os.environ["NVDISASM"]
    found = shutil.which("nvdisasm")
    if found:
        return found
    try:
        import nvidia  # the nvidia-cuda-nvdisasm wheel's namespace package

        for base in getattr(nvidia, "__path__", []):
            for cand in Path(base).glob("cu*/bin/nvdisasm"):
                return str(cand)
    except ImportError:
        pass
    return None


def _version(exe: str) -> str:
    out = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"release ([0-9.]+)|V([0-9.]+)", out)
    return (m.group(1) or m.group(2)) if m else "?"


def sass(cubin: bytes, nvdisasm: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "k.cubin"
        p.write_bytes(cubin)
        return subprocess.run([nvdisasm, "-c", str(p)], check=True, capture_output=True, text=True).stdout


def _counts(src: str, per: int, fast_math: bool, nvdisasm: str | None) -> dict:
    ptx = nvcc(src, "ptx", fast_math=fast_math).decode()
    out = {"ptx": count(fast_path(*parse_ptx(ptx), kind="ptx"), per, "ptx")}
    if nvdisasm:
        ins, labels = parse_sass(sass(nvcc(src, "cubin", fast_math=fast_math), nvdisasm))
        out["sass"] = count(fast_path(ins, labels, "sass"), per, "sass")
        out["sass"]["static"] = len(ins)
    return out


def sincos_record(nvdisasm: str | None | bool = None) -> dict:
    """Compile the first chapter's fused kernel at the book's shape and count its executed
    instructions per element (accurate and fast-math builds); SASS counts need ``nvdisasm`` (found
    by :func:`find_nvdisasm` when None; ``False``: PTX only)."""
    from kernels import pytorch as K

    threads, npt = 256, 8
    n = K.SINCOS_SHAPE[0] * K.SINCOS_SHAPE[1]
    src = K.sincos_fused(n, "float16", threads, npt).get_kernel_source()
    nvd = None if nvdisasm is False else (nvdisasm or find_nvdisasm())
    rec = {
        "kernel": "kernels.pytorch.sincos_fused", "shape": list(K.SINCOS_SHAPE), "dtype": "float16",
        "threads": threads, "elements_per_thread": npt, "arch": "sm_90a",
        "cuda_sha256": hashlib.sha256(src.encode()).hexdigest(),
        "nvcc": _version(shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"),
        "nvdisasm": _version(nvd) if nvd else None,
        "path": f"every argument below {HUGE:g} (the huge-argument reduction is branched over)",
        "accurate": _counts(src, npt, False, nvd),
        "fast_math": _counts(src, npt, True, nvd),
    }
    return rec


def compare(old: dict, new: dict) -> list[str]:
    """Differences that matter between a record and a fresh count (SASS only where both have it)."""
    bad = []
    if old.get("cuda_sha256") != new.get("cuda_sha256"):
        bad.append("the kernel's CUDA source changed")
    for build in ("accurate", "fast_math"):
        for view in ("ptx", "sass"):
            a, b = old.get(build, {}).get(view), new.get(build, {}).get(view)
            if a is None or b is None:
                continue
            if a.get("per_thread") != b.get("per_thread"):
                bad.append(f"{build} {view}: {a.get('per_thread')} -> {b.get('per_thread')} instructions a thread")
    return bad


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m measure.instructions", description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(RECORD))
    ap.add_argument("--check", action="store_true", help="compile again and compare with the record")
    a = ap.parse_args(argv)
    new = sincos_record()
    if a.check:
        old = json.loads(Path(a.out).read_text(encoding="utf-8"))
        bad = compare(old, new)
        print("record matches the compiler" if not bad else "record differs:\n  " + "\n  ".join(bad))
        return 1 if bad else 0
    if "sass" not in new["accurate"]:
        print("nvdisasm not found: the record would lose its SASS counts (see the module's docstring)")
        return 1
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(new, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {a.out}: {new['accurate']['sass']['per_element']} SASS instructions an element "
          f"(fast math {new['fast_math']['sass']['per_element']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
