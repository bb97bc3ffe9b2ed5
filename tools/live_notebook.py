"""Run a chapter of the book as Jupyter notebooks on a GPU machine, live, and record what it glued.

The proof that the book is live on a GPU: every page of a chapter is converted from MyST Markdown
to a notebook, executed in a Jupyter kernel (``nbclient`` + ``ipykernel``) with ``LIVE=1`` -- the
first page runs the chapter's suites on the GPU (:mod:`coursebook.live`), the others read the same
live run -- and the glued values of every page, with the page's live header, are written as one
JSON record beside the executed notebooks.

Here (network; once)::

    python -m tools.live_notebook wheels            # .whl/: the Jupyter stack for CPython 3.12 + a CJK font

On the GPU machine (no network; ``.bundle`` and ``.whl`` carried)::

    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
    python3 -m tools.bundle unpack .bundle/tilelang-0.1.15-cp312-manylinux_x86_64.tar.xz --prefix /tmp/site
    PYTHONPATH=/tmp/site:$PWD python3 -m tools.live_notebook run --topic elementwise --out $OUT

``run`` writes into ``--out``: ``live_<topic>.json`` (the record: device, date, versions, command,
and per page its header, the values the GPU run decided -- ``rec.*``, ``derived.*``, ``claim.*`` --
and seconds), ``notebooks_<topic>.zip`` (the executed
notebooks), ``<topic>.<digest>.json`` and ``.log`` (the suites' raw results and console output).
Commit the record as ``measure/results/live/<device>.<topic>.notebook.json``;
:func:`check_record` is what the test checks it with.

The converter (:func:`md_to_notebook`) needs only the standard library and PyYAML, so the GPU
machine needs no part of the book's build stack; a CPU test checks that it reads every page of the
book exactly as myst-nb does.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import re
import subprocess
import sys
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WHEEL_DIR = REPO / ".whl"
FONT_NAME = "NotoSansCJKsc-course-subset.otf"
RECORD_SCHEMA = 1
#: Glue keys whose values come from the GPU run (the analytic ledger figures are left out of the record).
MEASURED_PREFIXES = ("rec.", "derived.", "claim.")

#: topic -> the chapter's landing page (the pages follow in ``_toc.yml``'s order)
CHAPTERS = {"pytorch": "ch_pytorch_to_kernel.md", "primer": "ch_primer.md",
            "elementwise": "ch_elementwise_norm_rope.md", "gemm": "ch_gemm.md", "perfmodel": "ch_perf_model.md"}

#: What a notebook needs to run in a Jupyter kernel that a CUDA PyTorch image lacks (the GPU image
#: already has pygments, python-dateutil, packaging, psutil, pyyaml, attrs, six).  Versions are
#: read from requirements.lock for the target Python.
JUPYTER_STACK = ("nbclient", "nbformat", "fastjsonschema", "jsonschema", "jsonschema-specifications", "referencing",
                 "rpds-py", "jupyter-client", "jupyter-core", "platformdirs", "traitlets", "pyzmq", "tornado",
                 "ipykernel", "comm", "ipython", "ipython-pygments-lexers", "matplotlib-inline",
                 "pexpect", "ptyprocess", "prompt-toolkit", "wcwidth", "stack-data", "executing", "asttokens",
                 "pure-eval", "nest-asyncio2")


# ------------------------------------------------------------------ MyST Markdown -> notebook
_FENCE = re.compile(r"^(`{3,}|~{3,})\{code-cell\}\s*(\S*)\s*(.*)$")


def _yaml(text: str) -> dict:
    import yaml

    out = yaml.safe_load(text) if text.strip() else {}
    return out or {}


def md_to_notebook(text: str) -> dict:
    """A MyST Markdown notebook as an nbformat-4 dict: front matter -> notebook metadata,
    ``{code-cell}`` blocks (options as ``:key: value`` lines or a ``---`` YAML block) -> code cells,
    the text between them (split at ``+++`` lines) -> markdown cells."""
    lines = text.split("\n")
    meta: dict = {}
    i = 0
    if lines and lines[0].strip() == "---":
        end = next(j for j in range(1, len(lines)) if lines[j].strip() == "---")
        meta = _yaml("\n".join(lines[1:end]))
        i = end + 1
    cells: list[dict] = []
    md: list[str] = []
    md_meta: dict = {}

    def flush_md():
        nonlocal md, md_meta
        src = "\n".join(md).strip("\n")
        if src.strip():
            cells.append({"cell_type": "markdown", "metadata": md_meta, "source": src})
        md, md_meta = [], {}

    while i < len(lines):
        line = lines[i]
        m = _FENCE.match(line)
        if m:
            flush_md()
            fence = m.group(1)
            i += 1
            body: list[str] = []
            while i < len(lines) and lines[i].rstrip() != fence:
                body.append(lines[i])
                i += 1
            i += 1  # the closing fence
            cmeta: dict = {}
            if body and body[0].strip() == "---":
                end = next(j for j in range(1, len(body)) if body[j].strip() == "---")
                cmeta = _yaml("\n".join(body[1:end]))
                body = body[end + 1:]
            else:
                opts = []
                while body and re.match(r"^:[\w-]+:", body[0]):
                    opts.append(body.pop(0))
                if opts:
                    cmeta = _yaml("\n".join(re.sub(r"^:([\w-]+):", r"\1:", o) for o in opts))
                if body and opts and not body[0].strip():
                    body = body[1:]
            cells.append({"cell_type": "code", "metadata": cmeta, "source": "\n".join(body),
                          "execution_count": None, "outputs": []})
            continue
        if line.startswith("+++"):
            flush_md()
            rest = line[3:].strip()
            md_meta = json.loads(rest) if rest else {}
            i += 1
            continue
        md.append(line)
        i += 1
    flush_md()
    nb_meta = {k: v for k, v in meta.items() if k in ("kernelspec", "language_info")}
    if "jupytext" in meta:
        nb_meta["jupytext"] = meta["jupytext"]
    return {"nbformat": 4, "nbformat_minor": 5, "metadata": nb_meta, "cells": cells}


# ------------------------------------------------------------------ glued values of an executed notebook
def _shown_text(plain: str) -> str:
    """What ``{glue:text}`` prints for a ``text/plain`` output (myst-nb literal-evaluates it; a
    glued text that it would change is stored quoted, see ``coursebook.glue.shown_text``)."""
    import ast

    try:
        return str(ast.literal_eval(plain))
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        return plain


def glued_values(nb: dict) -> dict[str, str]:
    """``{key: text}`` of every value the notebook glued (myst-nb's ``scrapbook`` outputs; the
    ``text/plain`` form, as ``{glue:text}`` prints it)."""
    out: dict[str, str] = {}
    for cell in nb.get("cells", []):
        for o in cell.get("outputs", []) or []:
            sb = (o.get("metadata") or {}).get("scrapbook")
            if not sb:
                continue
            prefix = sb.get("mime_prefix", "")
            text = (o.get("data") or {}).get(prefix + "text/plain")
            if text is not None:
                text = "".join(text) if isinstance(text, list) else str(text)
                out[sb["name"]] = _shown_text(text)
    return out


def chapter_pages(topic: str) -> list[str]:
    """The pages of ``topic``'s chapter in reading order (relative to ``book/``), from ``_toc.yml``."""
    import yaml

    if topic not in CHAPTERS:
        raise SystemExit(f"unknown topic {topic!r}; topics are {sorted(CHAPTERS)}")
    toc = yaml.safe_load((REPO / "_toc.yml").read_text(encoding="utf-8"))

    def files(entry):
        out = [entry["file"]] if "file" in entry else []
        for sub in entry.get("sections") or []:
            out += files(sub)
        return out

    for part in toc.get("parts", []):
        for ch in part.get("chapters", []):
            pages = [f[len("book/"):] + ".md" for f in files(ch)]
            if pages[0] == CHAPTERS[topic]:
                return pages
    raise SystemExit(f"_toc.yml has no chapter {CHAPTERS[topic]}")


# ------------------------------------------------------------------ the record
def check_record(rec: dict) -> list[str]:
    """What is wrong with a live-notebook record (``[]`` when nothing): its fields, a live header on
    every page naming the device, and live GPU values glued on every page that glues any."""
    bad = []
    for k in ("schema", "kind", "topic", "mode", "device", "date", "command", "versions", "pages"):
        if k not in rec:
            bad.append(f"missing {k!r}")
    if bad:
        return bad
    if rec["schema"] != RECORD_SCHEMA or rec["kind"] != "live-notebook":
        bad.append(f"schema/kind {rec['schema']!r}/{rec['kind']!r}")
    if rec["mode"] != "live":
        bad.append(f"mode {rec['mode']!r}, not live")
    if rec["topic"] not in CHAPTERS:
        bad.append(f"topic {rec['topic']!r}")
    if not re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", str(rec["date"])):
        bad.append(f"date {rec['date']!r}")
    for k in ("torch", "tilelang", "cuda", "driver"):
        if not rec["versions"].get(k):
            bad.append(f"versions lack {k}")
    if not rec["pages"]:
        bad.append("no page")
    measured = 0
    for p in rec["pages"]:
        name = p.get("page", "?")
        if p.get("errors"):
            bad.append(f"{name}: errors {p['errors'][:2]}")
        vals = p.get("values") or {}
        if not any(k.startswith("rec.") for k in vals):
            continue  # a page that shows no GPU number (a landing page) needs no header
        measured += 1
        head = vals.get("rec.header", "")
        if not head.startswith("现场实测（live）") or rec["device"] not in head:
            bad.append(f"{name}: header is not live on {rec['device']}: {head[:60]!r}")
        if vals.get("rec.mode") != "live":
            bad.append(f"{name}: rec.mode is {vals.get('rec.mode')!r}")
    if not measured or not any(k.startswith("rec.") and k.endswith(".us") for p in rec["pages"]
                               for k in (p.get("values") or {})):
        bad.append("no page glued a measured time")
    return bad


def _versions() -> dict:
    import importlib

    out = {"python": platform.python_version()}
    for mod in ("torch", "tilelang", "triton", "nbclient", "ipykernel"):
        try:
            out[mod] = importlib.import_module(mod).__version__
        except Exception as exc:
            out[mod] = f"unavailable ({type(exc).__name__})"
    try:
        import torch

        out["cuda"] = torch.version.cuda
        if torch.cuda.is_available():
            out["device"] = torch.cuda.get_device_name(0)
    except Exception:
        pass
    try:
        drv = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30).stdout.strip().splitlines()
        out["driver"] = drv[0] if drv else None
    except Exception:
        out["driver"] = None
    return out


def run(topic: str, out: Path, timeout: int = 1200, pages: list[str] | None = None, mode: str = "live") -> dict:
    """Execute every page of ``topic``'s chapter live (``mode="recorded"``: with the recorded
    results, to try the machinery on a machine without a GPU); write the record, the notebooks and
    the suites' results into ``out``; return the record."""
    import nbformat
    from nbclient import NotebookClient

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    os.environ["LIVE"] = "1" if mode == "live" else "0"
    os.environ["COURSE_LIVE_DIR"] = str(out)
    font = WHEEL_DIR / "fonts" / FONT_NAME
    if not os.environ.get("COURSEBOOK_CJK_FONT") and font.is_file():
        os.environ["COURSEBOOK_CJK_FONT"] = str(font)
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(
        [str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    versions = _versions()
    rec = {"schema": RECORD_SCHEMA, "kind": "live-notebook", "topic": topic, "mode": mode,
           "device": versions.get("device", "no CUDA device"),
           "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "command": "python -m tools.live_notebook " + " ".join(sys.argv[1:]), "versions": versions, "pages": []}
    zpath = out / f"notebooks_{topic}.zip"
    with zipfile.ZipFile(zpath, "w", zipfile.ZIP_DEFLATED) as zf:
        for page in pages or chapter_pages(topic):
            src = REPO / "book" / page
            nb = nbformat.from_dict(md_to_notebook(src.read_text(encoding="utf-8")))
            t0 = time.time()
            errors = []
            print(f"[live_notebook] {page}: executing", flush=True)
            try:
                NotebookClient(nb, timeout=timeout, kernel_name="python3",
                               resources={"metadata": {"path": str(src.parent)}}).execute()
            except Exception as exc:  # the record says which page failed and why; the rest still run
                errors.append(f"{type(exc).__name__}: {str(exc)[-2000:]}")
            vals = glued_values(nb)
            # what the GPU decided: measured values, texts derived from them, claims chosen by them
            measured = {k: v for k, v in vals.items() if k.startswith(MEASURED_PREFIXES)}
            rec["pages"].append({"page": page, "seconds": round(time.time() - t0, 1), "errors": errors,
                                 "glued": len(vals), "header": vals.get("rec.header"), "values": measured})
            zf.writestr(page.replace("/", "__").replace(".md", ".ipynb"), nbformat.writes(nb))
            print(f"[live_notebook] {page}: {len(vals)} values glued in {time.time() - t0:.0f} s"
                  + (f"; ERROR {errors[0][:300]}" if errors else ""), flush=True)
    path = out / f"live_{topic}.json"
    path.write_text(json.dumps(rec, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    problems = check_record(rec)
    print(f"[live_notebook] wrote {path} and {zpath}" + (f"; record problems: {problems}" if problems else "; record ok"))
    return rec


# ------------------------------------------------------------------ wheels and font (here, with network)
def _lock_pins(python: str) -> dict[str, str]:
    from packaging.markers import Marker

    env = {"python_version": python, "python_full_version": python + ".3", "sys_platform": "linux",
           "os_name": "posix", "platform_system": "Linux", "implementation_name": "cpython",
           "platform_machine": "x86_64", "platform_python_implementation": "CPython"}
    pins = {}
    for line in (REPO / "requirements.lock").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        m = re.match(r"^([A-Za-z0-9_.\-]+)==([^\s;]+)\s*(?:;\s*(.+))?$", line)
        if not m:
            continue
        if m.group(3) and not Marker(m.group(3)).evaluate(env):
            continue
        pins[m.group(1).lower().replace("_", "-")] = m.group(2)
    return pins


def subset_font(dest: Path, roots: tuple[str, ...] = ("coursebook", "ledger", "measure", "kernels", "book")) -> Path:
    """The plotting style's CJK font cut down to the characters of the repository's sources and the
    common characters of GB 2312 (what a figure can show): about 2 MB instead of 16 MB."""
    from fontTools import subset

    from_font = None
    import mplfonts

    from_font = Path(mplfonts.__file__).parent / "fonts" / "NotoSansCJKsc-Regular.otf"
    chars = set()
    for top in roots:
        for p in (REPO / top).rglob("*"):
            if p.suffix in (".py", ".md", ".json") and "__pycache__" not in p.parts:
                chars |= set(p.read_text(encoding="utf-8", errors="ignore"))
    chars |= {chr(c) for c in range(0x20, 0x7f)} | set("，。、；：？！“”‘’（）《》【】—…·×÷≤≥≈±µ→←↑↓℃")
    # and the 3755 common characters of GB 2312 level 1, for labels written after the subset was cut
    for hi in range(0xB0, 0xD8):
        for lo in range(0xA1, 0xFF):
            try:
                chars.add(bytes([hi, lo]).decode("gb2312"))
            except UnicodeDecodeError:
                pass
    dest.parent.mkdir(parents=True, exist_ok=True)
    opts = subset.Options()
    opts.layout_features = ["*"]
    opts.name_IDs = ["*"]  # keep the typographic family name (ID 16) the plotting style asks for
    opts.name_languages = ["*"]
    font = subset.load_font(str(from_font), opts)
    sub = subset.Subsetter(opts)
    sub.populate(unicodes=sorted(ord(c) for c in chars))
    sub.subset(font)
    subset.save_font(font, str(dest), opts)
    return dest


def wheels(dest: Path = WHEEL_DIR, python: str = "3.12") -> Path:
    """Download the Jupyter stack's wheels for ``python`` (pins of requirements.lock) into ``dest``
    and write the CJK font subset beside them; print the total size."""
    from tools.bundle import download_cmd

    pins = _lock_pins(python)
    missing = [n for n in JUPYTER_STACK if n not in pins]
    if missing:
        raise SystemExit(f"requirements.lock pins no version of {missing} for Python {python}")
    dest.mkdir(parents=True, exist_ok=True)
    reqs = [f"{n}=={pins[n]}" for n in JUPYTER_STACK]
    subprocess.run(download_cmd(dest, python, reqs), check=True)
    subset_font(dest / "fonts" / FONT_NAME)
    total = sum(p.stat().st_size for p in dest.rglob("*") if p.is_file())
    print(f"{dest}: {total / 2**20:.1f} MiB ({len(list(dest.glob('*.whl')))} wheels and the font subset)")
    return dest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.live_notebook", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("wheels", help="download the Jupyter stack for the GPU machine into .whl/ (needs network)")
    w.add_argument("--dest", default=str(WHEEL_DIR))
    w.add_argument("--python", default="3.12")
    r = sub.add_parser("run", help="execute a chapter's pages live in Jupyter and record what they glued")
    r.add_argument("--topic", required=True, choices=sorted(CHAPTERS))
    r.add_argument("--out", required=True)
    r.add_argument("--timeout", type=int, default=1200, help="seconds per cell")
    r.add_argument("--page", action="append", help="only these pages (relative to book/)")
    r.add_argument("--recorded", action="store_true", help="use the recorded results (try it without a GPU)")
    c = sub.add_parser("convert", help="write a page as .ipynb (to look at what run executes)")
    c.add_argument("page")
    c.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    if a.cmd == "wheels":
        wheels(Path(a.dest), a.python)
        return 0
    if a.cmd == "convert":
        Path(a.out).write_text(json.dumps(md_to_notebook((REPO / "book" / a.page).read_text(encoding="utf-8")),
                                          indent=1, ensure_ascii=False), encoding="utf-8")
        return 0
    rec = run(a.topic, Path(a.out), a.timeout, a.page, "recorded" if a.recorded else "live")
    return 1 if check_record(rec) else 0


if __name__ == "__main__":
    sys.exit(main())
