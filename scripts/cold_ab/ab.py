"""Cold and warm one-shot `rein run`, interleaved across builds, for comparing builds under
the same load (docs/benchmarks.md, "Cost per turn as history grows", cold start).

    python3 scripts/cold_ab/ab.py [--kept-home] [--key] [--tls] N DIR [DIR...]

Each DIR holds a `rein` and a `reind` (copies of target/release); the runs use copies of
them made at the start, all at once, so no build runs from an older page cache than another. For each of N rounds and
each DIR, in an order drawn afresh each round: a REIN_HOME, one cold `rein run --approve
yolo "say ok"` (no daemon: `rein` starts it), two untimed runs, one timed warm run on the
daemon the cold run started, then `rein daemon stop`. The home is a fresh one each round (a
first run ever: the daemon also makes its directories), or with --kept-home one per DIR kept across rounds (a daemon that is
not running, after a reboot or an upgrade, on a home that already holds sessions). With
--key, `rein` runs with a provider key exported (ANTHROPIC_API_KEY, as most users have one),
which the daemon must keep out of its environment; without it, no key variable is set. The
provider is fake_provider.py (one streamed "ok" per request) on 127.0.0.1, over plain HTTP, or
with --tls over HTTPS, as the hosted providers are: its certificate (made here with openssl) is
added to a copy of the system's bundle, which the runs use through SSL_CERT_FILE, with
SSL_CERT_DIR still the system's directory, so the daemon reads as many root certificates as
it does by default. A DIR may also hold a file
named `env` of NAME=VALUE lines, added to its runs' environment (which `reind` inherits from
`rein`): the same binaries with, say, other allocator options (`_RJEM_MALLOC_CONF=...`).
Timing is perf_counter around the child process. Printed per DIR: the cold and warm runs'
medians and their ratio, and the median (and quartiles) of each round's own cold/warm ratio.
"""
import os, random, subprocess, sys, tempfile, time, statistics, shutil
import fixture
args = sys.argv[1:]
kept = "--kept-home" in args
key = "--key" in args
tls = "--tls" in args
args = [a for a in args if a not in ("--kept-home", "--key", "--tls")]
N = int(args[0]); given = args[1:]
# Each build runs from a copy made now, all at once: how long a binary has sat in the page
# cache moved a build's cold run by 1.6 ms and its warm run by 0.9 ms here (the same bytes,
# copied 45 minutes apart, took 916 and 807 page faults to start; docs/benchmarks.md,
# "Eighteenth pass"), more than most changes measured with this script.
copies = tempfile.mkdtemp()
builds = []
for index, build in enumerate(given):
    copy = os.path.join(copies, str(index))
    os.mkdir(copy)
    for binary in ("rein", "reind"):
        shutil.copy2(os.path.join(build, binary), copy)
    if os.path.exists(os.path.join(build, "env")):
        shutil.copy2(os.path.join(build, "env"), copy)
    builds.append(copy)
names = dict(zip(builds, given))
fake, base_url, trust = fixture.start_provider(tls)
proj = tempfile.mkdtemp()
res = {(b, k): [] for b in builds for k in ("cold", "warm")}
def run(env, rein):
    s = time.perf_counter()
    r = subprocess.run([rein, "run", "--approve", "yolo", "say ok"], cwd=proj, env=env,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    t = (time.perf_counter() - s) * 1000
    if r.returncode != 0:
        print("failed", r.stderr[-300:])
    return t
homes = {}
def home_for(b):
    if kept and b in homes:
        return homes[b]
    home = tempfile.mkdtemp()
    fixture.write_config(home, base_url)
    homes[b] = home
    return home
for i in range(N):
    # A fresh order each round: what runs first in a round meets the machine the previous
    # round's `daemon stop` and home removal left, which in a fixed order favours one build.
    order = random.sample(builds, len(builds))
    for b in order:
        home = home_for(b)
        env = fixture.client_env(home, b)
        if key:
            env["ANTHROPIC_API_KEY"] = "sk-ant-benchmark-not-a-real-key"
        env.update(trust)
        env_file = os.path.join(b, "env")
        if os.path.exists(env_file):
            env.update(line.split("=", 1) for line in open(env_file).read().split("\n")
                       if "=" in line)
        rein = os.path.join(b, "rein")
        res[(b, "cold")].append(run(env, rein))
        run(env, rein); run(env, rein)
        res[(b, "warm")].append(run(env, rein))
        subprocess.run([rein, "daemon", "stop"], env=env, stdout=subprocess.DEVNULL)
        if not kept:
            shutil.rmtree(home, ignore_errors=True)
for home in homes.values():
    shutil.rmtree(home, ignore_errors=True)
shutil.rmtree(copies, ignore_errors=True)
fake.kill()
for b in builds:
    c = statistics.median(res[(b, "cold")]); w = statistics.median(res[(b, "warm")])
    for k in ("cold", "warm"):
        xs = sorted(res[(b, k)])
        print(f"{names[b]} {k}: n={len(xs)} min={xs[0]:.1f} median={statistics.median(xs):.1f} max={xs[-1]:.1f} ms")
    # Each round's cold run over the warm run made a moment later on the same daemon: the
    # machine's drift over a run (other load, thermal, the host) cancels in each pair.
    paired = [x / y for x, y in zip(res[(b, "cold")], res[(b, "warm")])]
    q = statistics.quantiles(paired, n=4)
    print(f"{names[b]}: cold/warm = {c / w:.2f}x (medians); per round: median {statistics.median(paired):.2f}x, quartiles {q[0]:.2f}x-{q[2]:.2f}x")
