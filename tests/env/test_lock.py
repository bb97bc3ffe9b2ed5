"""requirements.lock installs on every supported Python: the supported range, the one-line
refusal of `make venv`, the PyPI check's logic (offline, on made-up index entries) and the check
itself against PyPI for each supported Python and distribution Python (network)."""
from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.tags import Tag
from packaging.utils import parse_wheel_filename

from coursebook import lock

ROOT = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------- the range
def test_range_comes_from_requires_python_and_the_readme_names_it():
    minors = lock.supported_minors()
    assert minors[0] == "3.10", "the README and the distributions below promise 3.10"
    assert lock.supported_minors(">=3.10,<3.14") == ["3.10", "3.11", "3.12", "3.13"]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"Python {minors[0]}–{minors[-1]}" in readme, "README's set-up section must name the supported range"
    for version, (distro, _glibc) in lock.DISTRO_PYTHONS.items():
        assert ".".join(version.split(".")[:2]) in minors, f"{distro}'s Python {version} is outside the range"
        assert distro in readme and version in readme, f"README should say {distro} ({version}) is covered"


def test_environment_yml_asks_for_the_same_pythons():
    text = (ROOT / "environment.yml").read_text(encoding="utf-8")
    m = re.search(r"^\s*-\s*python\s*([<>=!~][^\n#]*)$", text, flags=re.M)
    assert m, "environment.yml must name the Python range"
    assert m.group(1).replace(" ", "") == lock.requires_python().replace(" ", "")
    assert "-r requirements.lock" in text


@pytest.mark.parametrize("spec", [">=3.10", "<3.14", ">=3.10,<3.14,!=3.12.1", "~=3.10", ">=3.12,<3.11"])
def test_a_range_without_floor_and_ceiling_is_rejected(spec):
    with pytest.raises(ValueError, match="requires-python"):
        lock.supported_range(spec)


def test_python_problem_names_the_range():
    (major, lo), (_, hi) = lock.supported_range()
    assert lock.python_problem((major, lo, 0)) is None
    assert lock.python_problem((major, hi - 1, 12)) is None
    for bad in [(major, lo - 1, 18), (major, hi, 0), (2, 7, 18)]:
        msg = lock.python_problem(bad)
        shown = ".".join(map(str, bad))
        assert msg and f"Python {shown} is not supported" in msg and lock.range_text() in msg
        assert "\n" not in msg


def test_check_python_runs_on_this_interpreter():
    r = subprocess.run([sys.executable, "coursebook/lock.py", "check-python"], cwd=ROOT, capture_output=True, text=True)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")


def _make(*args, timeout=120):
    """`make` as a person runs it at a shell (not as a sub-make of `make test`, which would add
    its Entering/Leaving directory lines)."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    return subprocess.run(["make", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=env)


def _interpreters_outside_the_range() -> list[str]:
    """Real interpreters of unsupported versions on this machine (pyenv's, the system's)."""
    roots = [os.environ.get("PYENV_ROOT", ""), os.path.expanduser("~/.pyenv")]
    found = [p for r in roots if r for p in glob.glob(os.path.join(r, "versions", "3.*", "bin", "python3"))]
    found += [p for p in (shutil.which(f"python3.{m}") for m in range(6, 20)) if p and "/shims/" not in p]
    out = {}
    for p in found:
        r = subprocess.run([p, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True, text=True)
        if r.returncode == 0 and lock.python_problem(tuple(int(x) for x in r.stdout.split("."))):
            out.setdefault(r.stdout.strip(), p)
    return sorted(out.values())


def test_make_venv_refuses_an_unsupported_python_in_one_line(tmp_path):
    pythons = _interpreters_outside_the_range()
    if not pythons:
        pytest.skip("no interpreter outside the supported range on this machine (pyenv or /usr/bin)")
    for py in pythons:
        r = _make("venv", f"PYTHON={py}", f"VENV={tmp_path / 'venv'}")
        lines = [line for line in (r.stdout + r.stderr).splitlines() if line.strip()]
        assert r.returncode != 0 and len(lines) == 1, (py, lines)
        assert "is not supported" in lines[0] and lock.range_text() in lines[0], lines[0]
        assert not (tmp_path / "venv").exists(), "no environment may be made for an unsupported Python"


def test_make_venv_names_a_missing_interpreter(tmp_path):
    r = _make("venv", f"PYTHON={tmp_path / 'no-such-python'}", f"VENV={tmp_path / 'venv'}")
    lines = [line for line in (r.stdout + r.stderr).splitlines() if line.strip()]
    assert r.returncode != 0 and len(lines) == 1 and "no-such-python" in lines[0], lines


def test_make_venv_goes_ahead_on_this_python(tmp_path):
    r = _make("-n", "venv", f"PYTHON={sys.executable}", f"VENV={tmp_path / 'venv'}")
    assert r.returncode == 0 and "-r requirements.lock" in r.stdout, r.stdout + r.stderr


# --------------------------------------------------------------------------- the lock file
def test_lock_pins_exactly_and_one_pin_per_package_applies_to_every_target():
    reqs = lock.read_lock()
    assert len(reqs) > 100
    for version, _label, _glibc in lock.targets():
        for arch in lock.ARCHES:
            pins = lock.pins_for(reqs, version, arch)  # raises on two pins of one package
            assert {"tilelang", "torch", "jupyter-book", "numpy", "pytest"} <= set(pins), (version, arch)
            assert not any(lock.TORCH_GPU_RUNTIME.match(n) for n in pins), "torch's CUDA runtime is left to torch"
            # the SASS disassembler of the instruction-count tests: pinned where its wheel exists, nowhere else
            assert ("nvidia-cuda-nvdisasm" in pins) == (arch == "x86_64"), (version, arch)


def test_the_disassembler_is_not_taken_for_torchs_cuda_runtime():
    assert not lock.TORCH_GPU_RUNTIME.match("nvidia-cuda-nvdisasm")
    for name in ("nvidia-cublas", "nvidia-cuda-runtime", "nvidia-cuda-nvdisasm-cu12", "triton", "cuda-bindings"):
        assert lock.TORCH_GPU_RUNTIME.match(name), name


def test_overlapping_markers_are_caught(tmp_path):
    f = tmp_path / "requirements.lock"
    f.write_text("numpy==2.2.6 ; python_full_version < '3.12'\nnumpy==2.4.6 ; python_full_version >= '3.11'\n")
    reqs = lock.read_lock(f)
    assert lock.pins_for(reqs, "3.10.12") == {"numpy": "2.2.6"}
    with pytest.raises(ValueError, match="two pins of numpy apply to Python 3.11.2"):
        lock.pins_for(reqs, "3.11.2")
    f.write_text("numpy>=2\n")
    with pytest.raises(ValueError, match="not an exact pin"):
        lock.read_lock(f)


def test_targets_cover_each_minor_the_distributions_and_each_marker_boundary():
    versions = [v for v, _l, _g in lock.targets()]
    for m in lock.supported_minors():
        assert f"{m}.0" in versions
    for v in lock.DISTRO_PYTHONS:
        assert v in versions
    bounds = re.findall(r"python_full_version\s*[<>=!]+\s*'(\d+\.\d+\.\d+)'", lock.LOCK.read_text())
    inside = [b for b in bounds if ".".join(b.split(".")[:2]) in lock.supported_minors()]
    assert set(inside) <= set(versions)


# --------------------------------------------------------------------------- the check's logic, offline
def _file(filename, requires_python=None):
    tags = parse_wheel_filename(filename)[3] if filename.endswith(".whl") else None
    return {"filename": filename, "url": f"https://files.example/{filename}", "requires-python": requires_python,
            "size": 1, "tags": tags}


def test_supported_tags_follow_abi_and_glibc():
    t = lock.supported_tags("3.12.3", "x86_64", (2, 39))
    assert Tag("cp312", "cp312", "manylinux_2_39_x86_64") in t
    assert Tag("cp39", "abi3", "manylinux_2_28_x86_64") in t          # stable ABI of an older Python
    assert Tag("py3", "none", "any") in t and Tag("cp312", "cp312", "manylinux2014_x86_64") in t
    assert Tag("cp313", "cp313", "manylinux_2_28_x86_64") not in t
    assert Tag("cp312", "cp312t", "manylinux_2_28_x86_64") not in t  # free-threaded build
    assert Tag("cp312", "cp312", "manylinux_2_40_x86_64") not in t   # newer glibc than Ubuntu 24.04's
    assert Tag("cp312", "cp312", "manylinux_2_28_aarch64") not in t


def test_usable_file_prefers_a_wheel_and_refuses_a_compile():
    sup = lock.supported_tags("3.10.12", "x86_64", (2, 35))
    wheel = _file("numpy-2.2.6-cp310-cp310-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", ">=3.10")
    sdist = _file("numpy-2.2.6.tar.gz", ">=3.10")
    assert lock.usable_file([sdist, wheel], "3.10.12", sup) == (wheel, "wheel")
    other = _file("numpy-2.2.6-cp311-cp311-manylinux_2_17_x86_64.whl", ">=3.10")
    f, why = lock.usable_file([other, sdist], "3.10.12", sup)
    assert f is None and "compile the sdist" in why
    pure_sdist = _file("jieba-0.42.1.tar.gz")
    assert lock.usable_file([pure_sdist], "3.10.12", sup) == (pure_sdist, "sdist")
    newer = _file("contourpy-1.3.3-cp311-cp311-manylinux_2_27_x86_64.whl", ">=3.11")
    f, why = lock.usable_file([newer], "3.10.12", sup)
    assert f is None and "requires-python >=3.11 excludes 3.10.12" in why
    patch = _file("soupsieve-4.1.3-py3-none-any.whl", ">=3.11.5")
    assert lock.usable_file([patch], "3.11.2", sup)[0] is None
    assert lock.usable_file([patch], "3.11.7", sup)[0] is patch
    glibc = _file("tilelang-0.1.15-cp39-abi3-manylinux_2_39_x86_64.whl", ">=3.10")
    assert lock.usable_file([glibc], "3.10.12", sup)[0] is None
    assert lock.usable_file([], "3.10.12", sup) == (None, "no such release on PyPI")


def _meta(*requires):
    return "Metadata-Version: 2.1\nName: x\n" + "".join(f"Requires-Dist: {r}\n" for r in requires)


def test_closure_finds_missing_and_conflicting_pins():
    from packaging.requirements import Requirement

    env = lock.marker_env("3.10.12")
    roots = [Requirement("app[extra1]"), Requirement("winonly ; sys_platform == 'win32'")]
    pins = {"app": "1.0", "dep": "2.0", "old": "1.0", "torch": "2.13.0", "extradep": "1.0"}
    metadata = {
        "app": _meta("dep>=2", "old>=1.5", "tomli ; python_version < '3.11'", "extradep ; extra == 'extra1'",
                     "neverdep ; extra == 'extra2'", "later ; python_version >= '3.11'"),
        "dep": _meta("old"),
        "torch": _meta("nvidia-cublas==13.1.1.3 ; platform_system == 'Linux'", "triton==3.7.1"),
        "extradep": _meta("dep[fast]"),
    }
    problems = lock.closure_problems(pins, metadata, env, roots)
    assert problems == [
        "app==1.0 needs old>=1.5, the lock pins 1.0",
        "app==1.0 needs tomli, and no pin applies here",
    ]
    pins["old"], pins["tomli"] = "1.5", "2.5.0"
    assert lock.closure_problems(pins, metadata, env, roots) == []
    assert lock.closure_problems(pins, metadata, lock.marker_env("3.11.7"), roots) == [
        "app==1.0 needs later, and no pin applies here"]


# --------------------------------------------------------------------------- against PyPI
def test_only_an_unreachable_index_counts_as_offline():
    with pytest.raises(lock.PyPIUnreachable, match="unreachable"):
        lock.Index(base="https://127.0.0.1:9/simple", timeout=5, tries=1).probe()  # nothing listens on port 9


TARGETS = [(v, label, arch) for v, label, _g in lock.targets() for arch in lock.ARCHES]


@pytest.fixture(scope="session")
def pypi_check():
    """The whole check once per session: every index page and wheel metadata is fetched once,
    in parallel, and every target reads them."""
    index = lock.Index()
    try:
        index.probe()
    except lock.PyPIUnreachable as e:
        pytest.skip(f"PyPI cannot be reached, so the lock's availability check did not run: {e}")
    return lock.check(index=index)


@pytest.mark.network
@pytest.mark.parametrize("version,label,arch", TARGETS,
                         ids=[f"{v}-{arch}" + (f"-{label.replace(' ', '')}" if label else "") for v, label, arch in TARGETS])
def test_every_pin_is_served_and_complete_for(pypi_check, version, label, arch):
    problems = pypi_check[(version, arch)]
    assert problems == [], f"Python {version} {label} on Linux {arch}:\n  " + "\n  ".join(problems)


# --------------------------------------------------------------------------- Python 3.10 and tilelang

def _project_python_files():
    """The checkout's own Python files: what git tracks or would track (ignored scratch such as
    a GPU work folder or the venv is not the project's code); every file below the root when
    the checkout is not a git work tree."""
    import subprocess

    try:
        out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "*.py"],
                             cwd=ROOT, capture_output=True, check=True).stdout
        return [ROOT / p for p in out.decode().split("\0") if p and (ROOT / p).is_file()]
    except (OSError, subprocess.CalledProcessError):
        skip = {".venv", "_build", ".git", "node_modules"}
        return [p for p in ROOT.rglob("*.py") if not skip & set(p.relative_to(ROOT).parts)]


def test_no_prim_func_module_postpones_its_annotations():
    """tilelang 0.1.15 evaluates a prim_func's string annotations through typing's ForwardRef;
    Python 3.10's typing rejects one that evaluates to a buffer (3.11 accepts it), so on 3.10 a
    kernel in a module with `from __future__ import annotations` fails to build ("Forward
    references must evaluate to types. Got buffer.")."""
    offenders = []
    for path in _project_python_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        if re.search(r"^from __future__ import annotations", text, flags=re.M) and re.search(r"@\w+\.prim_func", text):
            offenders.append(str(path.relative_to(ROOT)))
    assert offenders == [], f"prim_func modules with postponed annotations (fail on Python 3.10): {offenders}"
