//! End-to-end: tool processes do not outlive a crashed daemon. The command a tool runs dies
//! with the daemon (parent-death signal), and what it left running in its process group is
//! killed when the next daemon starts, from the record under `REIN_HOME/run/tool-groups/`.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns: a failure stops the test

mod cli_support;

use cli_support::CliEnv;
use rein_testkit::fake_provider::Reply;
use serde_json::json;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

const PATIENCE: Duration = Duration::from_secs(20);

/// Whether `pid` runs (a zombie waiting for its reaper does not count).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().next());
            state != Some("Z")
        }
        Err(_) => false,
    }
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !done() {
        assert!(Instant::now() < deadline, "gave up waiting: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn read_pid(path: &Path) -> i32 {
    wait_for(&format!("{} to be written", path.display()), || {
        std::fs::read_to_string(path).is_ok_and(|text| text.ends_with('\n'))
    });
    std::fs::read_to_string(path).unwrap().trim().parse().unwrap()
}

#[test]
fn tool_processes_die_with_a_killed_daemon_and_leftovers_are_reaped_on_start() {
    let mut env = CliEnv::start(vec![Reply::tool_call(
        "bash",
        json!({
            "command": "sleep 600 & echo $! > bg.pid; echo $$ > fg.pid; wait",
            "timeout": 900
        }),
    )]);
    let mut run = env
        .rein()
        .args(["run", "--approve", "yolo", "start the long job"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let project = env.project.path().to_path_buf();
    let leader = read_pid(&project.join("fg.pid"));
    let background = read_pid(&project.join("bg.pid"));
    assert!(alive(leader) && alive(background));
    let record = env.daemon.home().join("run").join("tool-groups").join(format!("{leader}.json"));
    wait_for("the group's record", || record.is_file());

    // The daemon crashes.
    let daemon = env.daemon.child_mut().unwrap();
    daemon.kill().unwrap();
    let _ = daemon.wait();
    let _ = run.wait();
    wait_for("the tool's shell to die with the daemon", || !alive(leader));
    // Its background child was not the daemon's child: it is still there...
    assert!(alive(background), "the background process died too early");

    // ...until a daemon starts again and cleans up after the crashed one.
    env.daemon.spawn();
    wait_for("the leftover process to be killed", || !alive(background));
    assert!(!record.exists(), "the record was not removed");
}
