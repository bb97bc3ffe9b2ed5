"""GPU driver (device machine): unpack the tilelang bundle and a CPU-compiled tilelang cache, then run
EXTRA probe scripts (.gpuwork/<name>.py $OUT/<name>.json) and/or SUITE REPS times (measure.runner --out); the probes
first unless SUITE_FIRST=1."""
import glob, os, subprocess, sys, tarfile, time
sys.path.insert(0, os.getcwd())
from tools.bundle import unpack, _cuda_env

OUT = os.environ.get("OUT", "/tmp/out")
os.makedirs(OUT, exist_ok=True)
t0 = time.time()
unpack(sorted(glob.glob(".bundle/tilelang-*.tar.xz"))[-1], "/tmp/site")
env = _cuda_env(dict(os.environ))
env["PYTHONPATH"] = os.pathsep.join(["/tmp/site", os.getcwd(), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
if os.path.exists(".gpuwork/tlcache.tar.xz"):
    os.makedirs("/tmp/tlc", exist_ok=True)
    with tarfile.open(".gpuwork/tlcache.tar.xz") as t:
        t.extractall("/tmp/tlc")
    env["TILELANG_CACHE_DIR"] = "/tmp/tlc"
if os.path.exists(".gpuwork/COMMIT"):
    env["COURSE_GIT_COMMIT"] = open(".gpuwork/COMMIT").read().strip()
    env["COURSE_GIT_DIRTY"] = "0"
print(f"[drive] unpacked in {time.time() - t0:.1f}s", flush=True)
rc = 0


def extras():
    global rc
    for name in filter(None, os.environ.get("EXTRA", "").split(",")):
        name = os.path.basename(name).removesuffix(".py")
        t = time.time()
        try:
            r = subprocess.run([sys.executable, f".gpuwork/{name}.py", f"{OUT}/{name}.json"], env=env,
                               timeout=float(os.environ.get("XLIMIT", "480")))
            rc = rc or r.returncode
        except subprocess.TimeoutExpired:
            print(f"[drive] {name} timed out", flush=True); rc = 124
        print(f"[drive] {name} rc={rc} in {time.time() - t:.0f}s", flush=True)


def suites():
    global rc
    suite, tag = os.environ.get("SUITE"), os.environ.get("TAG", "s")
    for i in range(int(os.environ.get("REPS", "1")) if suite else 0):
        t = time.time()
        log = open(f"{OUT}/{tag}{i}.log", "w")
        try:
            r = subprocess.run([sys.executable, "-m", "measure.runner", "--suite", suite, "--out", f"{OUT}/{tag}{i}.json"],
                               env=env, stdout=log, stderr=subprocess.STDOUT, timeout=float(os.environ.get("LIMIT", "560")))
            rc = rc or r.returncode
        except subprocess.TimeoutExpired:
            rc = 124
        print(f"[drive] suite {suite} #{i} rc={rc} in {time.time() - t:.0f}s", flush=True)


# SUITE_FIRST=1: the suite before the probes (a record the pages read is not left to whatever time the probes leave)
for step in ((suites, extras) if os.environ.get("SUITE_FIRST") == "1" else (extras, suites)):
    step()
sys.exit(rc)
