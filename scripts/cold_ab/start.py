"""How long `reind` takes from being spawned to listening, against the floor of spawning the
same binary to print its version, interleaved across builds (docs/benchmarks.md, "Cost per
turn as history grows", cold start).

    python3 scripts/cold_ab/start.py N REIND [REIND...]

For each of N rounds and each REIND (a `reind` binary): a fresh REIN_HOME, `reind` started the
way `rein` starts it (`--foreground --detached --ready-fd`), timed until it writes its ready
byte (its socket listens), then stopped with SIGTERM; then `REIND --version`, timed to its
exit. Nothing connects to the daemon, so no provider is needed (the configured one is never
contacted). Timing is perf_counter around the child process.
"""
import os, shutil, signal, statistics, subprocess, sys, tempfile, time
import fixture

N = int(sys.argv[1]); binaries = sys.argv[2:]
listening = {b: [] for b in binaries}
version = {b: [] for b in binaries}
for _ in range(N):
    for binary in binaries:
        home = tempfile.mkdtemp()
        fixture.write_config(home, "http://127.0.0.1:9/v1")
        env = dict(os.environ, REIN_HOME=home)
        ready, ready_w = os.pipe()
        start = time.perf_counter()
        daemon = subprocess.Popen(
            [binary, "--foreground", "--detached", "--socket", f"{home}/run/reind.sock",
             "--ready-fd", "1"],
            stdout=ready_w, stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        os.close(ready_w)
        if os.read(ready, 1) != b"\n":
            print(f"{binary}: exited before listening", file=sys.stderr)
        listening[binary].append((time.perf_counter() - start) * 1000)
        os.close(ready)
        daemon.send_signal(signal.SIGTERM)
        daemon.wait()
        shutil.rmtree(home, ignore_errors=True)
        start = time.perf_counter()
        subprocess.run([binary, "--version"], stdout=subprocess.DEVNULL, check=True)
        version[binary].append((time.perf_counter() - start) * 1000)
for binary in binaries:
    listen = statistics.median(listening[binary]); floor = statistics.median(version[binary])
    print(f"{binary}: spawn to listening median {listen:.2f} ms (min {min(listening[binary]):.2f}),"
          f" --version median {floor:.2f} ms, set-up before listening {listen - floor:.2f} ms")
