"""Fill the git-ignored ``.gpuwork/`` for one device call (CPU machine, repository root):

    .venv/bin/python measure/results/timing/prebuild.py [--suite gemm.flush] [--extra sk8h,...]

copies ``drive.py`` and every probe script of this folder into ``.gpuwork/``, writes the commit the call
runs (``.gpuwork/COMMIT``; refused with uncommitted changes outside this folder), compiles for sm_90a every kernel
the named suites and probes build into a fresh tilelang cache, and packs it as ``.gpuwork/tlcache.tar.xz``, which
``drive.py`` unpacks on the GPU machine so nothing compiles there.  Probes compile through their own
``--prebuild`` argument; a suite needs a ``build_thunks`` the table below knows how to call."""
import argparse, glob, os, shutil, subprocess, sys, tarfile, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
WORK = os.path.join(ROOT, ".gpuwork")
SMS = 132  # the H200's (and H100 SXM's) SM count, which the persistent kernels are built for

#: suite -> thunks of every kernel it compiles (the suite's own list, so the cache cannot miss one)
SUITES = {
    "gemm.flush": lambda: __import__("measure.suites.gemm.flush", fromlist=["x"]).build_thunks(SMS),
    "gemm.streamk_ws": lambda: __import__("measure.suites.gemm.streamk_ws", fromlist=["x"]).build_thunks(SMS),
    "gemm.w4a16": lambda: (lambda m: m.build_thunks(m.SHAPES))(__import__("measure.suites.gemm.w4a16", fromlist=["x"])),
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", default="", help="comma-separated suites: " + ", ".join(SUITES))
    ap.add_argument("--extra", default="", help="comma-separated probe scripts of this folder")
    args = ap.parse_args(argv)
    suites = [s for s in args.suite.split(",") if s]
    extras = [e.removesuffix(".py") for e in args.extra.split(",") if e]
    unknown = [s for s in suites if s not in SUITES] + [e for e in extras if not os.path.exists(f"{HERE}/{e}.py")]
    if unknown:
        sys.exit(f"prebuild: unknown suite or probe: {', '.join(unknown)}")
    dirty = subprocess.run(["git", "status", "--porcelain", "--", ".", ":!measure/results/timing"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.strip()
    if dirty:
        sys.exit(f"prebuild: commit first; the records name the commit and these are uncommitted:\n{dirty}")
    os.makedirs(WORK, exist_ok=True)
    for f in glob.glob(f"{HERE}/*.py"):
        shutil.copy(f, WORK)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.strip()
    cache = tempfile.mkdtemp(prefix="tlcache-")
    env = dict(os.environ, TILELANG_CACHE_DIR=cache, PYTHONPATH=ROOT)
    t0 = time.time()
    for s in suites:
        code = (f"import sys; sys.path.insert(0, {HERE!r}); from prebuild import SUITES; from measure.search import par_build;"
                f"b = par_build(SUITES[{s!r}](), workers=4); e = {{k: v['error'] for k, v in b.items() if v['error']}};"
                "print(len(b), 'kernels', e); sys.exit(1 if e else 0)")
        subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True)
    for e in extras:
        subprocess.run([sys.executable, f"{WORK}/{e}.py", "--prebuild"], cwd=ROOT, env=env, check=True)
    with tarfile.open(f"{WORK}/tlcache.tar.xz", "w:xz") as t:
        t.add(cache, arcname=".")
    shutil.rmtree(cache)
    with open(f"{WORK}/COMMIT", "w") as f:
        f.write(commit + "\n")
    size = os.path.getsize(f"{WORK}/tlcache.tar.xz")
    print(f"prebuild: {commit[:7]}, {len(suites)} suites, {len(extras)} probes, cache {size / 2**20:.1f} MiB, "
          f"{time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
