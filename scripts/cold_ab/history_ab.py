"""A warm task on a long session, alternated across builds: what the per-request cost that
grows with history comes to, build against build, under the same load (docs/benchmarks.md,
"Twenty-second pass").

    python3 scripts/cold_ab/history_ab.py [--checkpoints] ENTRIES ROUNDS DIR [DIR...]

Each DIR holds a `rein` and a `reind` (copies of target/release). For each, a REIN_HOME with
its own daemon and one session of ENTRIES message entries (whole turns of a prompt, a `bash`
call, its output and an answer, about 200 bytes an entry, as in the growth benchmark), a
context window of 10^9 tokens so nothing is compacted, and the same fake provider
(fake_provider.py with TOOL_FIRST: a `bash` call, then "ok"). After three untimed runs per
DIR, each of ROUNDS rounds times `rein run --session ID --approve yolo go` once per DIR, the
order reversed every other round. Printed per DIR: the median and quartiles of the task's
time (perf_counter around the child process).

With --checkpoints, each turn of the grown session is followed by the checkpoint record rein
writes after a turn's tools ran (a `rein.checkpoint` custom entry, counted in ENTRIES), as in
a session that has worked on a project, instead of message entries only.
"""
import json, os, statistics, subprocess, sys, tempfile, time
import fixture


def grow(path, entries, checkpoints=False):
    """Appends `entries` entries to the session file at `path`, each hanging off the one
    before, after its last entry: whole turns of messages, each followed by a checkpoint
    record if `checkpoints`."""
    lines = [json.loads(line) for line in open(path) if line.strip()]
    parent = next((line["id"] for line in reversed(lines) if "parent_id" in line), None)
    usage = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0, "total_tokens": 0,
             "cost": {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0, "total": 0}}

    def reply(content, stop):
        return {"role": "assistant", "content": content, "api": "openai-chat",
                "provider": "fake", "model": "test-model", "usage": usage,
                "stop_reason": stop, "timestamp": 0}

    with open(path, "a") as out:
        written, n = 0, 0
        while written < entries:
            call = f"call_{n}"
            turn = [
                {"role": "user", "content": [{"type": "text", "text": f"step {n}: look " + "u" * 80}],
                 "timestamp": 0},
                reply([{"type": "tool_call", "id": call, "name": "bash",
                        "arguments": {"command": f"ls -la src/{n}"}}], "tool_use"),
                {"role": "tool_result", "tool_call_id": call, "tool_name": "bash",
                 "content": [{"type": "text", "text": f"total {n}\n" + "f" * 120}],
                 "is_error": False, "timestamp": 0},
                reply([{"type": "text", "text": f"done with step {n} " + "a" * 80}], "stop"),
            ]
            kinds = [{"type": "message", "message": message} for message in turn]
            if checkpoints:
                kinds.append({"type": "custom", "custom_type": "rein.checkpoint",
                              "data": {"turn": n + 1, "run_id": f"run-{n}", "run_turn": 1,
                                       "before": f"{n:040x}", "after": f"{n + 1:040x}"}})
            for kind in kinds[:entries - written]:
                entry = f"g{written:07}"
                out.write(json.dumps({"id": entry, "parent_id": parent,
                                      "timestamp": "2026-12-01T10:00:00Z", **kind}) + "\n")
                parent, written = entry, written + 1
            n += 1


def main():
    args = sys.argv[1:]
    checkpoints = "--checkpoints" in args
    args = [a for a in args if a != "--checkpoints"]
    entries, rounds, builds = int(args[0]), int(args[1]), args[2:]
    provider, base_url, _ = fixture.start_provider(tool_first=True)
    project = tempfile.mkdtemp()
    runs = []
    try:
        for build in builds:
            home = tempfile.mkdtemp()
            fixture.write_config(home, base_url, top='approval_policy = "yolo"\n',
                                 model="context_window = 1000000000\n")
            env = fixture.client_env(home, build)
            rein = os.path.join(build, "rein")

            def rpc(method, params, rein=rein, env=env):
                out = subprocess.run([rein, "rpc", method, json.dumps(params)], env=env,
                                     cwd=project, capture_output=True, text=True, check=True)
                return json.loads(out.stdout)

            session = rpc("session/create", {"cwd": project})["session_id"]
            rpc("session/close", {"session_id": session})
            listed = rpc("session/list", {"cwd": project})["sessions"]
            grow(next(s["path"] for s in listed if s["session_id"] == session), entries,
                 checkpoints)
            runs.append((build, [rein, "run", "--session", session, "--approve", "yolo", "go"],
                         env, []))

        def run(command, env):
            started = time.perf_counter()
            subprocess.run(command, env=env, cwd=project, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=True)
            return (time.perf_counter() - started) * 1000

        for _, command, env, _ in runs:
            for _ in range(3):
                run(command, env)
        for round in range(rounds):
            for _, command, env, times in (runs if round % 2 == 0 else runs[::-1]):
                times.append(run(command, env))
        for build, _, _, times in runs:
            q = statistics.quantiles(times, n=4)
            print(f"{build}: {entries} entries, n={len(times)}: median "
                  f"{statistics.median(times):.1f} ms, quartiles {q[0]:.1f}-{q[2]:.1f} ms")
    finally:
        for build, command, env, _ in runs:
            subprocess.run([command[0], "daemon", "stop"], env=env, capture_output=True)
        provider.kill()


main()
