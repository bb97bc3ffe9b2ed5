"""Offline bundle: carry tilelang to a GPU machine that has no package index.

On a machine with network access (any OS; pip only downloads)::

    python -m tools.bundle pack                       # -> .bundle/tilelang-0.1.15-cp312-manylinux.tar.xz
    python -m tools.bundle pack --python 3.11 --out /tmp/tl.tar.xz

``pack`` downloads manylinux x86_64 wheels for the target Python -- tilelang 0.1.15
and the dependencies it needs that a CUDA PyTorch image usually lacks
(apache-tvm-ffi, z3-solver, torch-c-dlpack-ext) -- unzips them into one
``site/`` tree and writes a single ``.tar.xz`` (tilelang's native libraries, its
CUDA templates ``tl_templates`` and the CUTLASS headers come inside the tilelang
wheel).  It skips what the GPU image already has (``--skip``; default torch,
numpy, psutil, tqdm, typing-extensions, cloudpickle, ml-dtypes) and writes a
``MANIFEST.json`` (wheel names, sha256, sizes) into the archive.

On the GPU machine (no network)::

    python -m tools.bundle unpack ARCHIVE --prefix /tmp/site
    export PYTHONPATH=/tmp/site:$PYTHONPATH
    python -m measure.runner --topic elementwise

or in one step (unpacks into a temporary prefix, runs the runner there with the
machine's own torch, removes the prefix)::

    python -m tools.bundle run ARCHIVE -- --topic elementwise

tilelang compiles kernels with ``nvcc`` at run time: ``run`` sets ``CUDA_HOME`` to
``/usr/local/cuda`` (or the newest ``/usr/local/cuda-*``) when neither ``CUDA_HOME``
nor an ``nvcc`` on ``PATH`` is there.
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BUNDLE_DIR = REPO / ".bundle"
TILELANG = "tilelang==0.1.15"
# Needed at import/compile time and usually missing from a CUDA PyTorch image.
EXTRA = ("apache-tvm-ffi==0.1.12", "z3-solver==4.15.4.0", "torch-c-dlpack-ext==0.1.5")
SKIP = ("torch", "numpy", "psutil", "tqdm", "typing-extensions", "cloudpickle", "ml-dtypes")
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64",
             "manylinux2014_x86_64")
MAX_MB = 60


def _norm(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def download_cmd(dest: Path, python: str, reqs: list[str]) -> list[str]:
    cmd = [sys.executable, "-m", "pip", "download", "--only-binary=:all:", "--no-deps",
           "--python-version", python, "--implementation", "cp", "-d", str(dest)]
    for p in PLATFORMS:
        cmd += ["--platform", p]
    return cmd + reqs


def _requires(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        text = z.read(meta).decode("utf-8", "replace")
    return [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Requires-Dist:")]


def pack(out: Path | None = None, python: str = "3.12", skip=SKIP, extra=EXTRA, keep_wheels: bool = False) -> Path:
    """Download the wheels, unzip them into site/, write one .tar.xz; returns its path."""
    tag = "cp" + python.replace(".", "")
    out = Path(out) if out else BUNDLE_DIR / f"tilelang-0.1.15-{tag}-manylinux_x86_64.tar.xz"
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        wheels = Path(tmp) / "wheels"
        wheels.mkdir()
        subprocess.run(download_cmd(wheels, python, [TILELANG, *extra]), check=True)
        tl = next(wheels.glob("tilelang-*.whl"))
        reqs = _requires(tl)
        have = {_norm(w.name.split("-")[0]) for w in wheels.glob("*.whl")}
        skipped = {_norm(s) for s in skip}
        missing = []
        for r in reqs:
            if "extra ==" in r or "platform_system" in r:
                continue
            name = _norm(r.split(";")[0].split("<")[0].split(">")[0].split("=")[0].split("!")[0].split("[")[0].strip())
            if name not in have and name not in skipped:
                missing.append(r.split(";")[0].strip())
        if missing:  # a dependency this file does not know yet: bundle it too
            subprocess.run(download_cmd(wheels, python, missing), check=True)
        site = Path(tmp) / "site"
        site.mkdir()
        manifest = {"python": python, "platforms": list(PLATFORMS), "skipped": sorted(skip),
                    "tilelang_requires": reqs, "wheels": []}
        for w in sorted(wheels.glob("*.whl")):
            data = w.read_bytes()
            manifest["wheels"].append({"file": w.name, "bytes": len(data),
                                       "sha256": hashlib.sha256(data).hexdigest()})
            with zipfile.ZipFile(w) as z:
                for info in z.infolist():
                    z.extract(info, site)
                    mode = (info.external_attr >> 16) & 0o777
                    if mode:
                        os.chmod(site / info.filename, mode)
        (site / "TILELANG_BUNDLE_MANIFEST.json").write_text(json.dumps(manifest, indent=1) + "\n")
        with tarfile.open(out, "w:xz", preset=9) as tar:
            tar.add(site, arcname="site")
        if keep_wheels:
            for w in wheels.glob("*.whl"):
                os.replace(w, out.parent / w.name)
    size_mb = out.stat().st_size / 1e6
    print(f"wrote {out} ({size_mb:.1f} MB): " + ", ".join(w["file"] for w in manifest["wheels"]))
    if size_mb > MAX_MB:
        print(f"warning: bundle is {size_mb:.1f} MB, more than {MAX_MB} MB", file=sys.stderr)
    return out


def unpack(archive: Path, prefix: Path) -> Path:
    """Extract the archive's site/ tree into ``prefix`` (created); returns prefix."""
    prefix = Path(prefix)
    prefix.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive, "r:xz") as tar:
        members = []
        for m in tar.getmembers():
            if not m.name.startswith("site/") or ".." in Path(m.name).parts or m.islnk() or m.issym():
                continue
            m.name = m.name[len("site/"):]
            members.append(m)
        try:
            tar.extractall(prefix, members=members, filter="fully_trusted")
        except TypeError:  # Python < 3.12
            tar.extractall(prefix, members=members)
    return prefix


def _cuda_env(env: dict) -> dict:
    import shutil

    if env.get("CUDA_HOME") or env.get("CUDA_PATH") or shutil.which("nvcc", path=env.get("PATH")):
        return env
    cands = [Path("/usr/local/cuda"), *sorted(Path("/usr/local").glob("cuda-*"), reverse=True)]
    for c in cands:
        if (c / "bin" / "nvcc").exists():
            env["CUDA_HOME"] = str(c)
            env["PATH"] = f"{c}/bin:" + env.get("PATH", "")
            break
    return env


def run(archive: Path, runner_args: list[str], keep: bool = False) -> int:
    """Unpack into a temporary prefix and run ``python -m measure.runner`` with it."""
    tmp = Path(tempfile.mkdtemp(prefix="tilelang-site-"))
    try:
        unpack(archive, tmp)
        env = _cuda_env(dict(os.environ))
        env["PYTHONPATH"] = os.pathsep.join([str(tmp), str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        print(f"[bundle] tilelang unpacked in {tmp}; CUDA_HOME={env.get('CUDA_HOME', '(nvcc on PATH)')}")
        return subprocess.call([sys.executable, "-m", "measure.runner", *runner_args], env=env, cwd=str(REPO))
    finally:
        if not keep:
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.bundle", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pack", help="download wheels and write one .tar.xz")
    p.add_argument("--out", default=None)
    p.add_argument("--python", default="3.12", help="target Python version (default 3.12)")
    p.add_argument("--skip", default=",".join(SKIP), help="comma list of packages the GPU image has")
    p.add_argument("--keep-wheels", action="store_true")
    u = sub.add_parser("unpack", help="extract the bundle into a prefix (then set PYTHONPATH)")
    u.add_argument("archive")
    u.add_argument("--prefix", required=True)
    r = sub.add_parser("run", help="unpack into a temporary prefix and run measure.runner")
    r.add_argument("archive")
    r.add_argument("--keep", action="store_true")
    r.add_argument("runner_args", nargs=argparse.REMAINDER)
    args = ap.parse_args(argv)
    if args.cmd == "pack":
        pack(args.out, args.python, tuple(s for s in args.skip.split(",") if s), keep_wheels=args.keep_wheels)
        return 0
    if args.cmd == "unpack":
        prefix = unpack(Path(args.archive), Path(args.prefix))
        print(f"unpacked into {prefix}\nexport PYTHONPATH={prefix}:$PYTHONPATH")
        return 0
    rest = args.runner_args[1:] if args.runner_args[:1] == ["--"] else args.runner_args
    return run(Path(args.archive), rest, args.keep)


if __name__ == "__main__":
    sys.exit(main())
