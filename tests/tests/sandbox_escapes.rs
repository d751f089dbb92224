//! End-to-end: the `workspace-write` sandbox holds. The real `reind` runs with
//! `sandbox = "workspace-write"` and `approval_policy = "auto-edit"` in its configuration, the
//! real `rein run --json` drives a session whose model (the scripted fake) has `bash` try each
//! way out (docs/sandbox.md lists them), and every attempt must fail while ordinary work in
//! the project still succeeds. With no client able to answer approvals, the command running
//! at all also proves that auto-edit lets sandboxed commands through without asking.
//!
//! These tests need bubblewrap (`scripts/test-deps.sh` installs it). Without it they fail:
//! a sandbox that silently is not there is what they guard against.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use rein_testkit::background::BackgroundFake;
use rein_testkit::daemon::DaemonFixture;
use rein_testkit::fake_provider::Reply;
use serde_json::{Value, json};

/// A directory outside `/tmp` (which the sandbox replaces with a private tmpfs), so a write
/// that escaped would land on the real file system.
fn scratch_dir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// Writes the daemon's configuration: the fake provider, `policy`, and `extra` lines.
fn configure(daemon: &DaemonFixture, fake: &BackgroundFake, policy: &str, extra: &str) {
    let config = format!(
        "model = \"local/test-model\"\napproval_policy = \"{policy}\"\n{extra}\n\
         [providers.local]\napi = \"openai-chat\"\nbase_url = \"{}\"\n\n[retry]\nmax_retries = 0\n",
        fake.base_url()
    );
    std::fs::write(daemon.home().join("config.toml"), config).unwrap();
}

/// Runs `rein run --json PROMPT` in `project` with `args` before the prompt.
fn rein_run(daemon: &DaemonFixture, project: &Path, args: &[&str]) -> Output {
    let mut rein = daemon.rein();
    rein.current_dir(project).arg("run").arg("--json").args(args).arg("try to get out");
    rein.stdin(Stdio::null()).output().unwrap()
}

/// The text of every tool result in a `rein run --json` transcript, in order.
fn tool_results(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["event"]["kind"] == "tool_execution_end")
        .map(|event| {
            event["event"]["result"]["content"][0]["text"].as_str().unwrap_or_default().to_string()
        })
        .collect()
}

/// Pids of live host processes whose command line is exactly `argv`.
fn processes_running(argv: &[&str]) -> Vec<i32> {
    let wanted: Vec<u8> = argv.iter().flat_map(|a| a.bytes().chain([0])).collect();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            let zombie = stat.rsplit(')').next()?.trim_start().starts_with('Z');
            (cmdline == wanted && !zombie).then_some(pid)
        })
        .collect()
}

/// Whether this machine lets the daemon give a sandboxed command a pids cgroup (root, or a
/// delegated cgroup tree); without one a fork bomb is bounded only by the namespace dying.
fn pids_cgroup_available() -> bool {
    let v1 = Path::new("/sys/fs/cgroup/pids");
    let root = if v1.is_dir() { v1.to_path_buf() } else { PathBuf::from("/sys/fs/cgroup") };
    let probe = root.join(format!("rein-probe-{}", std::process::id()));
    let made = std::fs::create_dir(&probe).is_ok();
    let _ = std::fs::remove_dir(&probe);
    made
}

/// The attempts, one per line of output: `NAME: ok` when it got through, `NAME: refused`
/// when it did not.
fn escape_script(outside: &Path, home: &Path, daemon_pid: u32, port: u16, sleeper: &str) -> String {
    let outside = outside.display();
    let auth = home.join("auth.toml");
    let auth = auth.display();
    format!(
        r##"try() {{ name=$1; shift; if "$@" >/dev/null 2>&1; then echo "$name: ok"; else echo "$name: refused"; fi; }}
try outside-write sh -c 'echo x > {outside}/escaped.txt'
try home-write sh -c 'echo x > "$HOME/.rein-sandbox-escape"'
try daemon-environ cat /proc/{daemon_pid}/environ
try daemon-memory head -c 1 /proc/{daemon_pid}/mem
try loopback-tcp bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}'
ln -s {outside} out-link
try symlink-write sh -c 'echo x > out-link/via-link.txt'
try git-hooks-write sh -c 'echo "#!/bin/sh" > .git/hooks/pre-commit'
try rein-dir-write sh -c 'echo x > .rein/planted'
try remount mount -o remount,rw /
try auth-read grep -q sk-stored {auth}
setsid nohup sleep {sleeper} >/dev/null 2>&1 &
try project-write sh -c 'echo made > inside.txt'
try tmp-write sh -c 'echo x > /tmp/scratch'
echo "env-count: $(env | grep -c -v -E '^(PATH|HOME|LANG|TERM|TMPDIR|PAGER|GIT_PAGER|GIT_TERMINAL_PROMPT|PWD|OLDPWD|SHLVL|_)=')"
sh -c 'i=0; while [ $i -lt 3000 ]; do sleep 60 >/dev/null 2>&1 & i=$((i+1)); done; echo fork-bomb-spawned-all' 2>/dev/null | tail -n 1
echo attempts-done"##
    )
}

#[test]
fn every_escape_fails_under_workspace_write_and_work_in_the_project_succeeds() {
    let fake = BackgroundFake::start(Vec::new());
    let mut daemon = DaemonFixture::new();
    configure(&daemon, &fake, "auto-edit", "sandbox = \"workspace-write\"\n");
    daemon.spawn();
    let daemon_pid = daemon.pid().unwrap();

    let project = scratch_dir();
    let outside = scratch_dir();
    std::fs::create_dir_all(project.path().join(".git/hooks")).unwrap();
    std::fs::create_dir_all(project.path().join(".rein")).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    // A sleep nobody else runs: its duration is unique to this test run.
    let sleeper = format!("4242.{}", std::process::id());

    std::fs::write(daemon.home().join("auth.toml"), "[local]\napi_key = \"sk-stored\"\n").unwrap();
    let script = escape_script(outside.path(), daemon.home(), daemon_pid, port, &sleeper);
    fake.push(Reply::tool_call("bash", json!({ "command": script })));
    fake.push(Reply::text("stayed inside"));
    let output = rein_run(&daemon, project.path(), &[]);
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let results = tool_results(&stdout);
    let shown = results.first().unwrap_or_else(|| panic!("no tool result in {stdout}"));
    assert!(shown.contains("attempts-done"), "the attempts did not run (asked?): {shown}");

    for refused in [
        "outside-write",
        "home-write",
        "daemon-environ",
        "daemon-memory",
        "loopback-tcp",
        "symlink-write",
        "git-hooks-write",
        "rein-dir-write",
        "remount",
        "auth-read",
    ] {
        assert!(shown.contains(&format!("{refused}: refused")), "{refused} got through: {shown}");
    }
    for allowed in ["project-write", "tmp-write"] {
        assert!(shown.contains(&format!("{allowed}: ok")), "{allowed} failed: {shown}");
    }
    assert!(shown.contains("env-count: 0"), "the environment was not scrubbed: {shown}");
    assert_eq!(std::fs::read_to_string(project.path().join("inside.txt")).unwrap(), "made\n");
    assert!(!outside.path().join("escaped.txt").exists());
    assert!(!outside.path().join("via-link.txt").exists());
    assert!(!project.path().join(".git/hooks/pre-commit").exists());
    assert!(!project.path().join(".rein/planted").exists());
    assert!(listener.accept().is_err(), "a connection reached the host's loopback");
    if pids_cgroup_available() {
        assert!(!shown.contains("fork-bomb-spawned-all"), "3000 processes were allowed: {shown}");
    } else {
        eprintln!("fork bomb bound not checked: no pids cgroup can be made on this machine");
    }
    // The detached sleeper died with the command (its pid namespace ended with it).
    let mut left = processes_running(&["sleep", &sleeper]);
    for _ in 0..500 {
        if left.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
        left = processes_running(&["sleep", &sleeper]);
    }
    assert!(left.is_empty(), "setsid + nohup outlived the command: {left:?}");
}

#[test]
fn the_run_flag_picks_the_sandbox_and_an_unusable_one_fails_the_run() {
    let fake = BackgroundFake::start(Vec::new());
    let mut daemon = DaemonFixture::new();
    configure(&daemon, &fake, "yolo", "");
    daemon.spawn();
    let project = scratch_dir();

    // `--sandbox read-only`: the command runs, but cannot write the project.
    let script =
        "if echo x > blocked.txt 2>/dev/null; then echo write: ok; else echo write: refused; fi";
    fake.push(Reply::tool_call("bash", json!({ "command": script })));
    fake.push(Reply::text("read only"));
    let output = rein_run(&daemon, project.path(), &["--sandbox", "read-only"]);
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let results = tool_results(&stdout);
    assert!(results.first().is_some_and(|r| r.contains("write: refused")), "{results:?}");
    assert!(!project.path().join("blocked.txt").exists());

    // Without a sandbox flag the configured default (off) applies: the same write works.
    fake.push(Reply::tool_call("bash", json!({ "command": script })));
    fake.push(Reply::text("host"));
    let output = rein_run(&daemon, project.path(), &[]);
    let results = tool_results(&String::from_utf8_lossy(&output.stdout));
    assert!(results.first().is_some_and(|r| r.contains("write: ok")), "{results:?}");
}

#[test]
fn a_sandbox_that_cannot_be_had_fails_instead_of_running_without_one() {
    let fake = BackgroundFake::start(Vec::new());
    let mut daemon = DaemonFixture::new();
    let extra =
        "sandbox = \"workspace-write\"\n\n[sandbox_settings]\nbwrap = \"/nonexistent/bwrap\"\n";
    configure(&daemon, &fake, "yolo", extra);
    daemon.spawn();
    let project = scratch_dir();
    fake.push(Reply::tool_call("bash", json!({ "command": "echo ran > ran.txt" })));
    fake.push(Reply::text("should not get here"));
    let output = rein_run(&daemon, project.path(), &[]);
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("bubblewrap cannot run here"), "{stderr}");
    assert!(!project.path().join("ran.txt").exists());
    assert!(fake.requests().is_empty(), "the model was asked although nothing may run");

    let mut connection = daemon.connect();
    connection.call_ok(0, "initialize", json!({"client_name": "test", "protocol_version": "1.0"}));
    let reply = connection.call(
        1,
        "session/create",
        json!({ "cwd": project.path(), "sandbox": "read-only" }),
    );
    assert_eq!(reply["error"]["data"]["kind"], "sandbox_unavailable", "{reply}");
}
