"""requirements.lock: one pinned stack for every supported Python, and the checks that keep it so.

Three commands::

    python coursebook/lock.py check-python     # run by `make venv` on the bare interpreter
    python -m coursebook.lock compile [--upgrade]   # `make lock`: rewrite requirements.lock
    python -m coursebook.lock check [VERSION ...]   # is every pin served by PyPI for each target?

The supported range is pyproject.toml's ``requires-python`` (``>=3.A,<3.B``): the one place it is
written. ``check-python`` uses only the standard library and runs on Python 3.6 and later (its
annotations are strings), so that an unsupported interpreter is told so in one line before a
virtual environment is made.

The lock is a universal resolution (``uv pip compile --universal``) with the range's floor as
the lowest Python: where a package's newest release drops an older Python, the lock pins two
releases with ``python_full_version`` markers. ``compile`` passes the current lock to uv as the
preferred versions, so re-locking keeps every pin that is still valid.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements.lock"
PYPROJECT = ROOT / "pyproject.toml"
PYPI_SIMPLE = "https://pypi.org/simple"

# Python releases that distributions ship as their system Python, with that distribution's
# glibc (which bounds the manylinux wheels it can install).
DISTRO_PYTHONS = {
    "3.10.12": ("Ubuntu 22.04", (2, 35)),
    "3.11.2": ("Debian 12", (2, 36)),
    "3.12.3": ("Ubuntu 24.04", (2, 39)),
}
# The glibc assumed for the other targets: the oldest among the distributions above.
DEFAULT_GLIBC = (2, 35)
ARCHES = ("x86_64", "aarch64")

# torch's CUDA runtime wheels. torch's Linux wheels require them themselves (most with ==), and a
# CPU build of torch needs none of them, so the lock leaves them to torch: pinning them here would
# make pip fetch several GB of CUDA libraries beside a CPU torch.
# nvidia-cuda-nvdisasm is not one of them: the test extra asks for it itself (a disassembler, no runtime).
TORCH_GPU_RUNTIME = re.compile(r"^(nvidia-(?!cuda-nvdisasm$).*|cuda-bindings|cuda-pathfinder|cuda-toolkit|triton)$")

HEADER = """\
# Exact pins of the course's Python stack, one file for every supported Python (requires-python
# in pyproject.toml): where a package's versions differ between Pythons, a marker picks one.
# make venv installs this, then the project with --no-deps. Regenerate with: make lock
# (a universal resolution by uv against PyPI, keeping the pins below wherever still valid).
# torch's CUDA runtime (nvidia-*, cuda-*, triton) is left to torch's own pins: a CPU build of
# torch (e.g. 2.13.0+cpu, which satisfies torch==2.13.0) needs none of it.
"""


# --------------------------------------------------------------------------- supported range
def requires_python(pyproject: Path = PYPROJECT) -> str:
    """The ``requires-python`` string of pyproject.toml (read with a regex: no tomllib on 3.9/3.10)."""
    m = re.search(r'^requires-python\s*=\s*"([^"]+)"', pyproject.read_text(encoding="utf-8"), flags=re.M)
    if not m:
        raise ValueError(f"{pyproject}: no requires-python")
    return m.group(1)


def supported_range(spec: "str | None" = None) -> "tuple[tuple[int, int], tuple[int, int]]":
    """(floor, ceiling) minor versions of ``>=3.A,<3.B``; the ceiling is excluded."""
    spec = requires_python() if spec is None else spec
    floor = re.search(r">=\s*(\d+)\.(\d+)(?![.\d])", spec)
    ceil = re.search(r"<\s*(\d+)\.(\d+)(?![.\d])", spec)
    if not floor or not ceil or len(spec.split(",")) != 2:
        raise ValueError(f"requires-python must read '>=3.A,<3.B' (a floor and an excluded ceiling), got {spec!r}")
    lo = (int(floor.group(1)), int(floor.group(2)))
    hi = (int(ceil.group(1)), int(ceil.group(2)))
    if hi <= lo:
        raise ValueError(f"requires-python {spec!r} admits no Python")
    return lo, hi


def supported_minors(spec: "str | None" = None) -> "list[str]":
    """["3.10", "3.11", ...]: every minor version the range admits."""
    (major, lo), (_, hi) = supported_range(spec)
    return [f"{major}.{minor}" for minor in range(lo, hi)]


def range_text(spec: "str | None" = None) -> str:
    minors = supported_minors(spec)
    return f"{minors[0]} to {minors[-1]}"


def python_problem(version: "tuple[int, ...]", spec: "str | None" = None) -> "str | None":
    """None if ``version`` is supported, else the one line that says why not."""
    (major, lo), (_, hi) = supported_range(spec)
    if (major, lo) <= tuple(version[:2]) < (major, hi):
        return None
    shown = ".".join(str(p) for p in version[:3])
    return (
        f"Python {shown} is not supported: this course needs Python {range_text(spec)} "
        f"(requires-python in pyproject.toml); point make at one (e.g. make PYTHON=python{major}.{hi - 1} book)"
    )


# --------------------------------------------------------------------------- the lock file
def read_lock(path: Path = LOCK):
    """The lock's requirements (``packaging.requirements.Requirement``), each an exact pin."""
    from packaging.requirements import Requirement

    reqs = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        req = Requirement(line)
        spec = list(req.specifier)
        if len(spec) != 1 or spec[0].operator != "==" or "*" in spec[0].version:
            raise ValueError(f"{path.name}:{n}: not an exact pin: {line}")
        reqs.append(req)
    return reqs


def pin_version(req) -> str:
    return next(iter(req.specifier)).version


def marker_env(version: str, arch: str = "x86_64") -> "dict[str, str]":
    """The PEP 508 marker environment of CPython ``version`` on Linux ``arch``."""
    major_minor = ".".join(version.split(".")[:2])
    return {
        "implementation_name": "cpython",
        "implementation_version": version,
        "os_name": "posix",
        "platform_machine": arch,
        "platform_python_implementation": "CPython",
        "platform_release": "",
        "platform_system": "Linux",
        "platform_version": "",
        "python_full_version": version,
        "python_version": major_minor,
        "sys_platform": "linux",
    }


def pins_for(reqs, version: str, arch: str = "x86_64") -> "dict[str, str]":
    """{normalized name: version} of the pins that apply to ``version`` on Linux ``arch``.

    Raises ValueError when two pins of one package both apply (overlapping markers)."""
    from packaging.utils import canonicalize_name

    env = marker_env(version, arch)
    out: "dict[str, str]" = {}
    for req in reqs:
        if req.marker is not None and not req.marker.evaluate(env):
            continue
        name = canonicalize_name(req.name)
        if name in out:
            raise ValueError(f"two pins of {name} apply to Python {version} on {arch}: {out[name]} and {pin_version(req)}")
        out[name] = pin_version(req)
    return out


# --------------------------------------------------------------------------- targets
def targets(spec: "str | None" = None) -> "list[tuple[str, str, tuple[int, int]]]":
    """(python_full_version, label, glibc) to check: each supported minor's first release, the
    distributions' system Pythons, and every python_full_version boundary the lock's markers draw
    inside the range (e.g. 3.11.5), so each side of every marker is checked."""
    minors = supported_minors(spec)
    out: "dict[str, tuple[str, tuple[int, int]]]" = {f"{m}.0": ("", DEFAULT_GLIBC) for m in minors}
    for v, (distro, glibc) in DISTRO_PYTHONS.items():
        out[v] = (distro, glibc)
    if LOCK.is_file():
        for v in re.findall(r"python_full_version\s*[<>=!]+\s*'([0-9.]+)'", LOCK.read_text(encoding="utf-8")):
            parts = (v.split(".") + ["0", "0"])[:3]
            full = ".".join(parts)
            if ".".join(parts[:2]) in minors and full not in out:
                out[full] = ("", DEFAULT_GLIBC)
    key = lambda v: tuple(int(p) for p in v.split("."))  # noqa: E731
    return [(v, out[v][0], out[v][1]) for v in sorted(out, key=key)]


def platform_tags(arch: str, glibc: "tuple[int, int]") -> "list[str]":
    """manylinux platform tags a Linux with ``glibc`` on ``arch`` installs, newest first."""
    legacy = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
    tags = []
    for minor in range(glibc[1], 4, -1):
        tags.append(f"manylinux_{glibc[0]}_{minor}_{arch}")
        if minor in legacy and (arch in ("x86_64", "i686") or minor == 17):
            tags.append(f"{legacy[minor]}_{arch}")
    return tags


def supported_tags(version: str, arch: str, glibc: "tuple[int, int]") -> frozenset:
    from packaging import tags

    major, minor = (int(p) for p in version.split(".")[:2])
    platforms = platform_tags(arch, glibc)
    interp = f"cp{major}{minor}"
    return frozenset(
        list(tags.cpython_tags((major, minor), abis=[interp], platforms=platforms))
        + list(tags.compatible_tags((major, minor), interpreter=interp, platforms=platforms))
    )


# --------------------------------------------------------------------------- PyPI
class PyPIUnreachable(RuntimeError):
    """PyPI could not be reached at all (offline): the only reason to skip the check."""


class Index:
    """PEP 691 JSON pages of PyPI's simple index and PEP 658 wheel metadata, fetched in
    parallel over kept-alive connections (one per thread and host) and kept for the session."""

    ACCEPT = "application/vnd.pypi.simple.v1+json"

    def __init__(self, base: str = PYPI_SIMPLE, timeout: float = 60.0, workers: int = 16, tries: int = 4):
        import ssl
        import threading

        self.base, self.timeout, self.workers, self.tries = base.rstrip("/"), timeout, workers, tries
        self.pages: "dict[str, dict]" = {}
        self.metadata: "dict[str, str | None]" = {}
        self._ctx = ssl.create_default_context()  # loading the CA bundle once, not per request
        self._local = threading.local()
        self._files: "dict[tuple[str, str], list[dict]]" = {}

    def _conn(self, host: str):
        import http.client

        pool = self._local.__dict__.setdefault("pool", {})
        if host not in pool:
            proxy = urllib.request.getproxies().get("https")
            if proxy and not urllib.request.proxy_bypass(host):
                p = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
                cls = http.client.HTTPSConnection if p.scheme == "https" else http.client.HTTPConnection
                kw = {"context": self._ctx} if p.scheme == "https" else {}
                conn = cls(p.hostname, p.port or (443 if p.scheme == "https" else 80), timeout=self.timeout, **kw)
                conn.set_tunnel(host)
            else:
                conn = http.client.HTTPSConnection(host, timeout=self.timeout, context=self._ctx)
            pool[host] = conn
        return pool[host]

    def _get(self, url: str, accept: str = ACCEPT, byte_range: "tuple[int, int] | None" = None) -> bytes:
        import http.client
        import time

        u = urllib.parse.urlsplit(url)
        path = u.path + (f"?{u.query}" if u.query else "")
        last: "Exception | None" = None
        for attempt in range(self.tries):
            conn = self._conn(u.netloc)
            try:
                headers = {"Accept": accept, "User-Agent": "tilelang-course-lock-check"}
                if byte_range:
                    headers["Range"] = f"bytes={byte_range[0]}-{byte_range[1] - 1}"
                conn.request("GET", path, headers=headers)
                r = conn.getresponse()
                body = r.read()
            except (OSError, http.client.HTTPException) as e:  # DNS, refused, reset, timeout
                conn.close()
                self._local.pool.pop(u.netloc, None)
                last = e
                time.sleep(0.5 * (attempt + 1))
                continue
            if r.status != (206 if byte_range else 200):
                raise urllib.error.HTTPError(url, r.status, r.reason, r.headers, None)
            return body
        raise last  # type: ignore[misc]

    def probe(self) -> None:
        """Raise PyPIUnreachable when the index cannot be reached (no network, DNS, proxy)."""
        try:
            self._get(f"{self.base}/pip/")
        except urllib.error.HTTPError as e:
            raise RuntimeError(f"PyPI answered {e.code} for {self.base}/pip/") from e
        except OSError as e:
            raise PyPIUnreachable(f"{self.base} unreachable: {e}") from e

    def _map(self, fn, items) -> None:
        with ThreadPoolExecutor(self.workers) as ex:
            list(ex.map(fn, items))

    def fetch(self, names) -> None:
        def one(name):
            self.pages[name] = json.loads(self._get(f"{self.base}/{name}/"))

        self._map(one, sorted(set(names) - set(self.pages)))

    def fetch_metadata(self, files) -> None:
        """Core metadata (PEP 658) of the given wheel files, by URL."""
        def one(f):
            try:  # tried for every wheel: a mirror's index may omit the core-metadata key
                text = self._get(f["url"] + ".metadata", accept="*/*")
            except urllib.error.HTTPError as e:
                if e.code != 404:
                    raise
                text = self._wheel_member(f, ".dist-info/METADATA")  # read out of the wheel by byte ranges
            self.metadata[f["url"]] = text.decode("utf-8", "replace")

        wheels = {f["url"]: f for f in files if f["filename"].endswith(".whl")}
        self._map(one, [wheels[u] for u in sorted(set(wheels) - set(self.metadata))])

    def _wheel_member(self, f: dict, suffix: str) -> bytes:
        """One member of a remote wheel, read through HTTP range requests (the zip's tail, then
        the member), without downloading the wheel."""
        import io
        import zipfile

        index = self

        class Remote(io.RawIOBase):
            def __init__(self):
                self.pos, self.size = 0, int(f["size"])
                start = max(0, self.size - (1 << 16))
                self.tail_at, self.tail = start, index._get(f["url"], accept="*/*", byte_range=(start, self.size))

            def readable(self):
                return True

            def seekable(self):
                return True

            def tell(self):
                return self.pos

            def seek(self, offset, whence=0):
                self.pos = {0: offset, 1: self.pos + offset, 2: self.size + offset}[whence]
                return self.pos

            def read(self, n=-1):
                end = self.size if n is None or n < 0 else min(self.size, self.pos + n)
                if end <= self.pos:
                    return b""
                if self.pos >= self.tail_at:
                    data = self.tail[self.pos - self.tail_at:end - self.tail_at]
                else:
                    data = index._get(f["url"], accept="*/*", byte_range=(self.pos, end))
                self.pos += len(data)
                return data

        with zipfile.ZipFile(Remote()) as zf:
            names = [n for n in zf.namelist() if n.endswith(suffix) and n.count("/") == 1]
            if len(names) != 1:
                raise ValueError(f"{f['filename']}: no single *{suffix}")
            return zf.read(names[0])

    def files(self, name: str, version: str) -> "list[dict]":
        """The files of release ``version`` of ``name`` (wheels and sdists)."""
        if (name, version) in self._files:
            return self._files[(name, version)]
        from packaging.utils import InvalidSdistFilename, InvalidWheelFilename, parse_sdist_filename, parse_wheel_filename
        from packaging.version import InvalidVersion, Version

        want = Version(version)
        out = []
        for f in self.pages[name]["files"]:
            fn = f["filename"]
            try:
                if fn.endswith(".whl"):
                    _, v, _, wtags = parse_wheel_filename(fn)
                else:
                    _, v = parse_sdist_filename(fn)
                    wtags = None
            except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
                continue
            if v == want:
                out.append({**f, "tags": wtags})
        self._files[(name, version)] = out
        return out


def _requires_python_ok(spec: "str | None", version: str) -> bool:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    if not spec:
        return True
    try:
        return SpecifierSet(spec).contains(version, prereleases=True)
    except InvalidSpecifier:
        return True  # pip ignores a requires-python it cannot parse


def usable_file(files: "list[dict]", version: str, supported: frozenset) -> "tuple[dict | None, str]":
    """The file pip would take for this target (a matching wheel, else an sdist of a project
    that ships no binary wheels for this release), or None and why not."""
    if not files:
        return None, "no such release on PyPI"
    ok_py = [f for f in files if _requires_python_ok(f.get("requires-python"), version)]
    if not ok_py:
        return None, f"requires-python {files[0].get('requires-python')} excludes {version}"
    wheels = [f for f in ok_py if f["tags"] is not None and f["tags"] & supported]
    if wheels:
        return wheels[0], "wheel"
    sdists = [f for f in ok_py if f["tags"] is None]
    binary = [f for f in files if f["tags"] is not None and any(t.platform != "any" for t in f["tags"])]
    if sdists and not binary:
        return sdists[0], "sdist"
    if sdists:
        return None, "binary wheels exist, none for this Python/platform: pip would have to compile the sdist"
    return None, "no wheel for this Python/platform and no sdist"


def root_requirements(pyproject: Path = PYPROJECT):
    """The requirements of pyproject's ``all`` extra, with the project's self-references expanded."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: tomli is pinned there
        import tomli as tomllib
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    me, extras = canonicalize_name(project["name"]), project.get("optional-dependencies", {})
    out, seen = [Requirement(r) for r in project.get("dependencies", [])], set()

    def expand(extra):
        if extra in seen:
            return
        seen.add(extra)
        for text in extras[extra]:
            req = Requirement(text)
            if canonicalize_name(req.name) == me:
                for e in sorted(req.extras):
                    expand(e)
            else:
                out.append(req)

    expand("all")
    return out


def closure_problems(pins: "dict[str, str]", metadata: "dict[str, str | None]", env: "dict[str, str]", roots) -> "list[str]":
    """What pip would miss or reject installing the pins on this target: walking the
    requirements from ``roots`` through each pin's Requires-Dist (with the extras asked of it),
    every package needed must be pinned, at a version the asker accepts. torch's CUDA runtime is
    left to torch (see TORCH_GPU_RUNTIME); a pin without served metadata (sdist only) ends a path."""
    from email.parser import Parser

    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    requested: "dict[str, set[str]]" = {}
    queue: "list[str]" = []
    problems: "list[str]" = []

    def applies(req, extras) -> bool:
        return req.marker is None or any(req.marker.evaluate({**env, "extra": e}) for e in extras)

    def need(req, by: str) -> None:
        name = canonicalize_name(req.name)
        if TORCH_GPU_RUNTIME.match(name):
            return
        if name not in pins:
            problems.append(f"{by} needs {req.name}{req.specifier or ''}, and no pin applies here")
            return
        if not req.specifier.contains(pins[name], prereleases=True):
            problems.append(f"{by} needs {name}{req.specifier}, the lock pins {pins[name]}")
        asked = set(req.extras)
        if name not in requested or not asked <= requested[name]:
            requested.setdefault(name, set()).update(asked)
            queue.append(name)

    for req in roots:
        if applies(req, {""}):
            need(req, "pyproject.toml")
    while queue:
        name = queue.pop()
        text = metadata.get(name)
        if not text:
            continue
        extras = {""} | requested[name]
        for line in Parser().parsestr(text).get_all("Requires-Dist") or []:
            try:
                req = Requirement(line)
            except InvalidRequirement:
                continue
            if applies(req, extras):
                need(req, f"{name}=={pins[name]}")
    return sorted(set(problems))


def check(reqs=None, versions=None, arches=ARCHES, index: "Index | None" = None,
          closure: bool = True) -> "dict[tuple[str, str], list[str]]":
    """{(python_full_version, arch): [problem, ...]} for every target; an empty list is a pass.

    Each pin that applies to the target (markers evaluated for CPython on Linux) must have a
    file pip would install there: requires-python admits the version, and a wheel's tags match
    (CPython ABI, abi3, pure Python; manylinux up to the target's glibc) or, for a project that
    ships no binary wheels, an sdist. With ``closure``, the pins must also be complete and
    consistent there (closure_problems), read from each wheel's served metadata (one wheel per
    release: the first target's)."""
    from packaging.utils import canonicalize_name

    reqs = read_lock() if reqs is None else reqs
    index = Index() if index is None else index
    tgts = [t for t in targets() if versions is None or t[0] in versions]
    if versions is not None:
        tgts += [(v, "", DEFAULT_GLIBC) for v in versions if v not in {t[0] for t in tgts}]
    index.fetch(canonicalize_name(r.name) for r in reqs)
    result: "dict[tuple[str, str], list[str]]" = {}
    first: "dict[tuple[str, str], dict]" = {}
    for version, _label, glibc in tgts:
        for arch in arches:
            supported = supported_tags(version, arch, glibc)
            problems = []
            for name, pinned in sorted(pins_for(reqs, version, arch).items()):
                f, why = usable_file(index.files(name, pinned), version, supported)
                if f is None:
                    problems.append(f"{name}=={pinned}: {why}")
                else:
                    first.setdefault((name, pinned), f)
            result[(version, arch)] = problems
    if closure:
        index.fetch_metadata(first.values())
        roots = root_requirements()
        for version, _label, _glibc in tgts:
            for arch in arches:
                pins = pins_for(reqs, version, arch)
                meta = {n: index.metadata.get(first[(n, v)]["url"]) for n, v in pins.items() if (n, v) in first}
                result[(version, arch)] += closure_problems(pins, meta, marker_env(version, arch), roots)
    return result


# --------------------------------------------------------------------------- compile
def compile_lock(upgrade: bool = False, out: Path = LOCK) -> Path:
    """Rewrite ``out`` by a universal resolution of pyproject's ``all`` extra with uv."""
    (major, lo), _ = supported_range()
    uv = Path(sys.executable).with_name("uv")
    cmd = [str(uv) if uv.exists() else "uv", "pip", "compile", str(PYPROJECT), "--extra", "all", "--universal",
           "--python-version", f"{major}.{lo}", "--default-index", PYPI_SIMPLE, "--no-config",
           "--no-header", "--no-annotate", "--quiet"]
    if upgrade:
        cmd.append("--upgrade")
    with tempfile.TemporaryDirectory() as tmp:
        draft = Path(tmp) / "requirements.txt"
        if out.is_file():  # uv keeps the pins of an existing output file where they still resolve
            draft.write_text(out.read_text(encoding="utf-8"), encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith("UV_")}
        subprocess.run([*cmd, "-o", str(draft)], check=True, cwd=ROOT, env=env)
        lines = draft.read_text(encoding="utf-8").splitlines()
    kept = []
    for line in lines:
        name = re.split(r"[=<>;\s\[]", line.strip(), maxsplit=1)[0].lower()
        if not line.strip() or line.startswith("#") or TORCH_GPU_RUNTIME.match(name) or name == "tilelang-course":
            continue
        kept.append(line.strip())
    out.write_text(HEADER + "\n".join(kept) + "\n", encoding="utf-8")
    return out


# --------------------------------------------------------------------------- CLI
def main(argv: "list[str] | None" = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    cmd = argv[0] if argv else ""
    if cmd == "check-python":
        problem = python_problem(sys.version_info)
        if problem:
            print(problem)
            return 1
        return 0
    if cmd == "compile":
        compile_lock(upgrade="--upgrade" in argv[1:])
        print(f"wrote {LOCK.name}")
        return 0
    if cmd == "check":
        versions = argv[1:] or None
        index = Index()
        try:
            index.probe()
        except PyPIUnreachable as e:
            print(f"cannot check: {e}", file=sys.stderr)
            return 2
        results = check(versions=versions, index=index)
        bad = 0
        labels = {v: label for v, label, _ in targets()}
        for (version, arch), problems in results.items():
            label = f" ({labels[version]})" if labels.get(version) else ""
            print(f"Python {version}{label} {arch}: {'ok' if not problems else f'{len(problems)} problem(s)'}")
            for p in problems:
                print(f"    {p}")
            bad += bool(problems)
        return 1 if bad else 0
    print("\n\n".join(__doc__.split("\n\n")[1:3]), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
