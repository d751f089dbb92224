"""Cold and warm one-shot `rein run`, interleaved across builds, for comparing builds under
the same load (docs/benchmarks.md, "Cost per turn as history grows", cold start).

    python3 scripts/cold_ab/ab.py [--kept-home] [--key] [--tls] N DIR [DIR...]

Each DIR holds a `rein` and a `reind` (copies of target/release). For each of N rounds and
each DIR: a REIN_HOME, one cold `rein run --approve yolo "say ok"` (no daemon: `rein`
starts it), two untimed runs, one timed warm run on the daemon the cold run started, then
`rein daemon stop`. The home is a fresh one each round (a first run ever: the daemon also
makes its directories), or with --kept-home one per DIR kept across rounds (a daemon that is
not running, after a reboot or an upgrade, on a home that already holds sessions). With
--key, `rein` runs with a provider key exported (ANTHROPIC_API_KEY, as most users have one),
which the daemon must keep out of its environment; without it, no key variable is set. The
provider is fake_provider.py (one streamed "ok" per request) on 127.0.0.1, over plain HTTP, or
with --tls over HTTPS, as the hosted providers are: its certificate (made here with openssl) is
added to a copy of the system's bundle, which the runs use through SSL_CERT_FILE, with
SSL_CERT_DIR still the system's directory, so the daemon reads as many root certificates as
it does by default. Timing is perf_counter around the child process.
"""
import os, subprocess, sys, tempfile, time, statistics, shutil
args = sys.argv[1:]
kept = "--kept-home" in args
key = "--key" in args
tls = "--tls" in args
args = [a for a in args if a not in ("--kept-home", "--key", "--tls")]
N = int(args[0]); builds = args[1:]
here = os.path.dirname(os.path.abspath(__file__))
certs = tempfile.mkdtemp()
serve = [sys.executable, os.path.join(here, "fake_provider.py")]
if tls:
    cert, key_file, bundle = (os.path.join(certs, n) for n in ("cert.pem", "key.pem", "bundle.pem"))
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1",
                    "-addext", "basicConstraints=critical,CA:FALSE",
                    "-addext", "extendedKeyUsage=serverAuth",
                    "-keyout", key_file, "-out", cert], check=True, capture_output=True)
    with open(bundle, "w") as out:
        out.write(open("/etc/ssl/certs/ca-certificates.crt").read() + open(cert).read())
    serve += [cert, key_file]
fake = subprocess.Popen(serve, stdout=subprocess.PIPE, text=True)
port = int(fake.stdout.readline())
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
    open(f"{home}/config.toml", "w").write(
        f'model = "fake/test-model"\n[providers.fake]\napi = "openai-chat"\n'
        f'base_url = "{"https" if tls else "http"}://127.0.0.1:{port}/v1"\napi_key_env = ""\n')
    homes[b] = home
    return home
for i in range(N):
    for b in builds:
        home = home_for(b)
        env = {name: value for name, value in os.environ.items()
               if not name.endswith("_API_KEY")}
        env.update(REIN_HOME=home, REIN_SOCKET=f"{home}/run/reind.sock",
                   REIN_DAEMON_BIN=os.path.join(b, "reind"), NO_COLOR="1")
        if key:
            env["ANTHROPIC_API_KEY"] = "sk-ant-benchmark-not-a-real-key"
        if tls:
            env.update(SSL_CERT_FILE=bundle, SSL_CERT_DIR="/etc/ssl/certs")
        rein = os.path.join(b, "rein")
        res[(b, "cold")].append(run(env, rein))
        run(env, rein); run(env, rein)
        res[(b, "warm")].append(run(env, rein))
        subprocess.run([rein, "daemon", "stop"], env=env, stdout=subprocess.DEVNULL)
        if not kept:
            shutil.rmtree(home, ignore_errors=True)
for home in homes.values():
    shutil.rmtree(home, ignore_errors=True)
fake.kill()
for b in builds:
    c = statistics.median(res[(b, "cold")]); w = statistics.median(res[(b, "warm")])
    for k in ("cold", "warm"):
        xs = sorted(res[(b, k)])
        print(f"{b} {k}: n={len(xs)} min={xs[0]:.1f} median={statistics.median(xs):.1f} max={xs[-1]:.1f} ms")
    print(f"{b}: cold/warm = {c / w:.2f}x")
