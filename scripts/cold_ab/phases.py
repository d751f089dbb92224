"""Where a cold `rein run` spends the time a warm one does not, stretch by stretch
(docs/benchmarks.md, "Twelfth pass").

    python3 scripts/cold_ab/phases.py N DIR

DIR holds a `rein` and a `reind`. For each of N rounds: a fresh REIN_HOME, one cold run (no
daemon: `rein` starts it), one untimed run, one warm run, then `rein daemon stop`. The timed
runs go under `perf trace` on `rein` alone (its exec, connects, sends and exit only, so the tracing
costs little), which splits each run at its requests: the start to the first connect, the
first connect to the first request (on a cold run, the daemon's start), `initialize` and
`daemon/info`, `session/create`, `session/subscribe`, and the prompt to the exit.
Prints each stretch's median, cold and warm. Needs `perf` and permission to trace (root, or
perf_event_paranoid at most 1). The provider is fake_provider.py on 127.0.0.1.
"""
import os, re, statistics, subprocess, sys, tempfile
import fixture

N = int(sys.argv[1]); build = sys.argv[2]
fake, base_url, _ = fixture.start_provider()
project = tempfile.mkdtemp()
trace_file = os.path.join(tempfile.mkdtemp(), "trace.txt")
EVENT = re.compile(r"\s*([\d.]+) \(.*?\): (?:\S+ )?(\w+)\(")
STRETCHES = ["start to first connect", "first connect to first request",
             "initialize and daemon/info", "session/create",
             "subscribe", "prompt to exit", "whole run"]

def traced_run(env):
    subprocess.run(["perf", "trace", "--no-inherit", "-o", trace_file,
                    "-e", "execve,connect,sendto,exit_group", os.path.join(build, "rein"), "run",
                    "--approve", "yolo", "say ok"], cwd=project, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    events = [(float(m.group(1)), m.group(2)) for m in map(EVENT.match, open(trace_file)) if m]
    connects = [t for t, name in events if name == "connect"]
    sends = [t for t, name in events if name == "sendto"]
    end = next(t for t, name in events if name == "exit_group")
    # Requests 1 to 5 are the first five sends; each answer comes before the next request.
    marks = [0.0, connects[0], sends[0], sends[2], sends[3], sends[4], end]
    return [b - a for a, b in zip(marks, marks[1:])] + [end]

results = {"cold": [], "warm": []}
for _ in range(N):
    home = tempfile.mkdtemp()
    fixture.write_config(home, base_url)
    env = fixture.client_env(home, build)
    rein = os.path.join(build, "rein")
    results["cold"].append(traced_run(env))
    subprocess.run([rein, "run", "--approve", "yolo", "say ok"], cwd=project, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    results["warm"].append(traced_run(env))
    subprocess.run([rein, "daemon", "stop"], env=env, stdout=subprocess.DEVNULL)
fake.kill()
for i, stretch in enumerate(STRETCHES):
    cold = statistics.median(run[i] for run in results["cold"])
    warm = statistics.median(run[i] for run in results["warm"])
    print(f"{stretch:34s} cold {cold:6.2f} ms  warm {warm:6.2f} ms  difference {cold - warm:6.2f} ms")
