"""Where a cold `rein run` goes, step by step inside both processes, from uprobes: no
instrumented build, and a few microseconds per step (docs/benchmarks.md, "Nineteenth pass").

    python3 scripts/cold_ab/probes.py N DIR

DIR holds a `rein` and a `reind` (release builds: their symbol tables name the functions
probed). They are copied first, so the probes touch no other copy. For each of N rounds: a
fresh REIN_HOME, one cold run (no daemon: `rein` starts it), two warm runs, then `rein daemon
stop`, all under `perf record -a` of the probes and of the system calls that split a run at
its requests. Printed: the median time of each step after `rein`'s exec, cold and warm. The
steps are the dynamic loader's (`_dl_start`, each `_dl_relocate_object`, `_dl_init`),
`__libc_start_main`, `main` of both programs, the daemon's start (`reind::main`, the
start helper, the home's lock, the log, the socket, the ready byte, the hand-over of the
runtime, the method table, the first connection accepted) and its requests (a connection's
task polled, each request line, and session/create's steps: the project context, the new
session file, its `mkdir`s and `fsync`s, the session built, its settings recorded). Events of
every thread of the daemon count (its runtime's threads are not named `reind`); `rein daemon
stop` is not counted as a warm run. A step not reached in most runs is left out. Needs `perf`
and permission to add probes (root). The provider is fake_provider.py on 127.0.0.1.
"""
import collections, os, re, shutil, statistics, subprocess, sys, tempfile, time
import fixture

LOADER = "/lib64/ld-linux-x86-64.so.2"
LIBC_START = "__libc_start_main"
CLIENT = {"rmain": "main", "spawn": "rein_launch::spawn_connected"}
DAEMON = {
    "dmain": "main", "reind_main": "reind::main", "begin": "reind::startup::StartHelper::begin",
    "lock": "rein_daemon::home_lock::acquire", "log": "rein_daemon::logging::init",
    "bind": "rein_daemon::server::listener::bind", "tell": "reind::tell_the_starter",
    "started": "reind::startup::StartHelper::started", "methods": "rein_daemon::methods::build",
    "accepting": "rein_daemon::server::listener::BoundSocket::accepting",
    "connection": "rein_daemon::server::connection::serve::{{closure}}",
    "request": "rein_daemon::server::dispatch::handle_frame",
    "context": "rein_coding::session::context_sources",
    "file": "rein_session::store::SessionStore::create",
    "session": "rein_coding::session::CodingSession::load",
    "settings": "rein_coding::session::CodingSession::record_settings",
}
SYSCALLS = ["execve", "connect", "sendto", "exit_group", "mkdir", "fsync"]


def file_offset(binary, name):
    """The file offset of function `name` (demangled, exact) in `binary`, for `perf probe`."""
    symbols = subprocess.run(["nm", "-C", "--defined-only", binary], capture_output=True,
                             text=True, check=True).stdout
    address = next((int(line.split(None, 2)[0], 16) for line in symbols.splitlines()
                    if line.split(None, 2)[1:] and line.split(None, 2)[1] in "tT"
                    and line.split(None, 2)[2] == name), None)
    if address is None:
        return None
    headers = subprocess.run(["readelf", "-lW", binary], capture_output=True, text=True).stdout
    for line in headers.splitlines():
        fields = line.split()
        if fields[:1] == ["LOAD"]:
            offset, vaddr, filesz = int(fields[1], 16), int(fields[2], 16), int(fields[4], 16)
            if vaddr <= address < vaddr + filesz:
                return address - vaddr + offset
    return None


def add_probes(copy):
    added = []
    for binary, probes, group in ((os.path.join(copy, "rein"), CLIENT, "rein"),
                                  (os.path.join(copy, "reind"), DAEMON, "reind")):
        for event, name in probes.items():
            offset = file_offset(binary, name)
            if offset is None:
                print(f"not probed (no symbol): {name}", file=sys.stderr)
                continue
            subprocess.run(["perf", "probe", "-q", "-x", binary, "-a",
                            f"{group}_{event}={offset:#x}"], check=True)
            added.append(f"probe_{group}:{group}_{event}")
    loader = os.path.realpath(LOADER)
    for event in ("_dl_start", "_dl_relocate_object", "_dl_init"):
        subprocess.run(["perf", "probe", "-q", "-x", loader, "-a", f"ld{event}={event}"], check=True)
    libc = subprocess.run(["ldd", os.path.join(copy, "reind")], capture_output=True,
                          text=True).stdout
    libc = re.search(r"libc\.so\.6 => (\S+)", libc).group(1)
    subprocess.run(["perf", "probe", "-q", "-x", os.path.realpath(libc), "-a",
                    f"libc_start={LIBC_START}"], check=True)
    return added


def remove_probes():
    for group in ("probe_rein", "probe_reind", "probe_ld", "probe_libc"):
        subprocess.run(["perf", "probe", "-q", "-d", f"{group}:*"], capture_output=True)


def rounds(n, copy):
    """The runs recorded (the child of `perf record`)."""
    fake, base_url, _ = fixture.start_provider()
    project = tempfile.mkdtemp()
    rein = os.path.join(copy, "rein")
    for _ in range(n):
        home = tempfile.mkdtemp()
        fixture.write_config(home, base_url)
        env = fixture.client_env(home, copy)
        for _ in range(3):
            subprocess.run([rein, "run", "--approve", "yolo", "say ok"], cwd=project, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.01)
        subprocess.run([rein, "daemon", "stop"], env=env, stdout=subprocess.DEVNULL)
        shutil.rmtree(home, ignore_errors=True)
    fake.kill()


EVENT = re.compile(r"\s*(.+?)\s+(\d+)/(\d+)\s+([\d.]+):\s+(\S+):")


def steps(script):
    """Per `rein run`: whether it started the daemon, and each step's time after its exec."""
    runs, current, exec_at, daemons = [], None, {}, set()
    for line in script.splitlines():
        match = EVENT.match(line)
        if not match:
            continue
        comm, pid, tid = match.group(1).strip(), int(match.group(2)), int(match.group(3))
        at, event = float(match.group(4)) * 1000, match.group(5).split(":", 1)[1]
        if event == "sys_enter_execve":
            exec_at[tid] = at
            continue
        if event == "rein_rmain":
            current = {"pid": pid, "start": exec_at.get(tid, at), "steps": {}, "cold": False}
            runs.append(current)
        if current is None or current.get("done"):
            continue
        if pid == current["pid"]:
            if event == "sys_enter_exit_group" and tid == pid:
                current["done"] = True
                name = "rein exits"
            else:
                name = "rein " + event.replace("sys_enter_", "").replace("rein_", "")
            current["cold"] |= name == "rein spawn"
        elif comm.startswith("reind") or pid in daemons:
            daemons.add(pid)
            name = "reind " + event.replace("reind_", "")
            if current["cold"] and tid in exec_at:
                current["steps"].setdefault("reind exec", exec_at[tid])
        else:
            continue
        key, count = name, 1
        while key in current["steps"]:
            count += 1
            key = f"{name} #{count}"
        current["steps"][key] = at
    return [run for run in runs if run.get("done")]


def report(runs, label):
    times = collections.defaultdict(list)
    for run in runs:
        for step, at in run["steps"].items():
            times[step].append(at - run["start"])
    print(f"{label} runs: {len(runs)} (ms after rein's exec, medians)")
    for median, step in sorted((statistics.median(v), k) for k, v in times.items()
                               if len(v) >= 0.8 * len(runs)):
        print(f"  {median:7.3f}  {step}")


def main():
    if sys.argv[1] == "--rounds":
        rounds(int(sys.argv[2]), sys.argv[3])
        return
    n, build = int(sys.argv[1]), sys.argv[2]
    copy = tempfile.mkdtemp()
    for binary in ("rein", "reind"):
        shutil.copy2(os.path.join(build, binary), copy)
    data = os.path.join(copy, "perf.data")
    remove_probes()
    try:
        events = add_probes(copy) + ["probe_ld:*", "probe_libc:*"]
        events += [f"syscalls:sys_enter_{call}" for call in SYSCALLS]
        subprocess.run(["perf", "record", "-q", "-a", "-o", data, "-e", ",".join(events), "--",
                        sys.executable, os.path.abspath(__file__), "--rounds", str(n), copy],
                       check=True)
        script = subprocess.run(["perf", "script", "-i", data, "-F", "comm,pid,tid,time,event"],
                                capture_output=True, text=True, check=True).stdout
    finally:
        remove_probes()
    runs = steps(script)
    report([run for run in runs if run["cold"]], "cold")
    # `rein daemon stop` sends no request line the daemon handles as a run's would.
    report([run for run in runs if not run["cold"] and "reind request #2" in run["steps"]],
           "warm")
    shutil.rmtree(copy, ignore_errors=True)


if __name__ == "__main__":
    main()
