"""_toc.yml and book/ agree both ways; every page is a MyST notebook or Markdown page."""
from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def _toc_files(node) -> list[str]:
    out: list[str] = []
    if isinstance(node, dict):
        for key in ("root", "file"):
            if key in node:
                out.append(node[key])
        for value in node.values():
            if isinstance(value, (list, dict)):
                out.extend(_toc_files(value))
    elif isinstance(node, list):
        for item in node:
            out.extend(_toc_files(item))
    return out


def _toc() -> dict:
    return yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))


def test_toc_format():
    toc = _toc()
    assert toc["format"] == "jb-book"
    assert toc["root"] == "book/intro"


def test_every_toc_entry_exists():
    missing = [f for f in _toc_files(_toc()) if not (ROOT / f"{f}.md").is_file() and not (ROOT / f"{f}.ipynb").is_file()]
    assert not missing, f"_toc.yml names pages that do not exist: {missing}"


def test_every_page_is_in_toc():
    listed = {str(Path(f)) for f in _toc_files(_toc())}
    pages = {
        str(p.relative_to(ROOT).with_suffix(""))
        for p in (ROOT / "book").rglob("*")
        if p.suffix in {".md", ".ipynb"} and "_build" not in p.parts and not p.name.startswith(("_", "."))
    }
    orphans = sorted(pages - listed)
    assert not orphans, f"pages under book/ missing from _toc.yml: {orphans}"


def test_no_duplicate_entries():
    files = _toc_files(_toc())
    assert len(files) == len(set(files)), "a page is listed twice in _toc.yml"


def test_four_chapters_numbered_and_labelled():
    toc = _toc()
    main = toc["parts"][0]
    assert main.get("numbered") is True
    chapters = [c["file"] for c in main["chapters"]]
    assert len(chapters) >= 4
    labels = {"ch-pytorch-to-kernel", "ch-elementwise-norm-rope", "ch-gemm", "ch-perf-model"}
    text = "".join((ROOT / f"{c}.md").read_text(encoding="utf-8") for c in chapters if (ROOT / f"{c}.md").exists())
    for lab in labels:
        assert f"({lab})=" in text, f"chapter label {lab} missing"


def test_chapters_execute_code():
    """Every chapter executes code (on its landing page or its section pages), and every page of
    it that has code cells is a MyST notebook."""
    toc = _toc()
    for c in toc["parts"][0]["chapters"]:
        pages = _toc_files(c)
        texts = {f: (ROOT / f"{f}.md").read_text(encoding="utf-8") for f in pages}
        assert any("```{code-cell}" in t for t in texts.values()), f"{c['file']} has no executed code cell"
        for f, t in texts.items():
            if "```{code-cell}" in t:
                assert "kernelspec:" in t, f"{f} is not a MyST notebook"
            else:  # a notebook with no code would be offered as an empty .ipynb download
                assert "kernelspec:" not in t, f"{f} has no code cell: make it a plain MyST page"


def test_section_pages_sit_in_their_topic_folder():
    """A chapter split into section pages keeps them in one folder named by its topic."""
    for c in _toc()["parts"][0]["chapters"]:
        folders = {str(Path(f).parent) for f in _toc_files(c)[1:]}
        assert len(folders) <= 1, f"{c['file']}: sections spread over {sorted(folders)}"


def test_primer_is_the_second_chapter():
    chapters = [c["file"] for c in _toc()["parts"][0]["chapters"]]
    assert chapters[:2] == ["book/ch_pytorch_to_kernel", "book/ch_primer"]
    assert "(ch-primer)=" in (ROOT / "book" / "ch_primer.md").read_text(encoding="utf-8")
