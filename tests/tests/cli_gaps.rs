//! End-to-end: `rein run --json` never skips events silently. A tool floods the session with
//! output while the client is stopped (SIGSTOP), so its subscription is lagged and the
//! daemon's (deliberately small) replay buffer no longer reaches back. The real `rein` must
//! then print a `{"type":"gap"}` record naming the missing seq range with the session's
//! entries that fill it, so the output still records every entry of the run (the tool call
//! and its result included) — or, when the run's end was lost in the gap, say so and exit 8.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use nix::sys::signal::Signal;
use nix::unistd::Pid;
use rein_testkit::background::BackgroundFake;
use rein_testkit::daemon::DaemonFixture;
use rein_testkit::fake_provider::Reply;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// A fake whose model runs one flooding command, then answers.
fn flooding_daemon(replay_buffer: usize) -> (BackgroundFake, DaemonFixture, tempfile::TempDir) {
    let fake = BackgroundFake::start(vec![
        Reply::tool_call("bash", json!({"command": "seq 1 1000000"})),
        Reply::text("flood done"),
    ]);
    let extra = format!(
        "approval_policy = \"yolo\"\n[sessions]\nreplay_buffer = {replay_buffer}\n\
         replay_buffer_bytes = 65536"
    );
    let daemon = fake.daemon(&extra);
    let project = tempfile::tempdir().unwrap();
    (fake, daemon, project)
}

/// Starts `rein run --json` and, once the run has reached the provider, stops the client
/// (SIGSTOP) so that it reads nothing while the run goes on; returns it with its session id.
fn start_run(
    fake: &BackgroundFake,
    daemon: &DaemonFixture,
    project: &tempfile::TempDir,
) -> (Child, String) {
    let mut child = daemon
        .rein()
        .current_dir(project.path())
        .args(["run", "--json", "flood the terminal"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let session = line.trim().strip_prefix("session: ").unwrap_or_else(|| panic!("{line}"));
    // Keep draining stderr so it can never block the client.
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    let deadline = Instant::now() + Duration::from_secs(60);
    while fake.requests().is_empty() {
        assert!(Instant::now() < deadline, "the prompt never reached the provider");
        std::thread::sleep(Duration::from_millis(10));
    }
    signal(&child, Signal::SIGSTOP);
    (child, session.to_string())
}

fn signal(child: &Child, signal: Signal) {
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap());
    nix::sys::signal::kill(pid, signal).unwrap();
}

/// One raw call on a fresh connection.
fn rpc(daemon: &DaemonFixture, method: &str, params: Value) -> Value {
    let mut connection = daemon.connect();
    connection.call_ok(1, method, params)
}

/// Waits (a guard against hangs, not a timing check) until the session's run is over.
fn wait_until_idle(daemon: &DaemonFixture, session: &str) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let state = rpc(daemon, "session/state", json!({"session_id": session}));
        if state["running"] == false && state["last_seq"].as_u64().unwrap_or(0) > 0 {
            return;
        }
        assert!(Instant::now() < deadline, "the run did not end: {state}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Lets the client go on, reads its whole stdout and its exit code.
fn finish(mut child: Child) -> (Vec<Value>, i32) {
    signal(&child, Signal::SIGCONT);
    let mut text = String::new();
    child.stdout.take().unwrap().read_to_string(&mut text).unwrap();
    let code = child.wait().unwrap().code().unwrap_or(-1);
    let lines = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
        .collect();
    (lines, code)
}

/// Seqs printed as events, and `(from, to)` of each gap record.
fn coverage(lines: &[Value]) -> (Vec<u64>, Vec<(u64, u64)>) {
    let seqs = lines.iter().filter_map(|l| l["seq"].as_u64()).collect();
    let gaps = lines
        .iter()
        .filter(|l| l["type"] == "gap")
        .map(|l| (l["from_seq"].as_u64().unwrap(), l["to_seq"].as_u64().unwrap()))
        .collect();
    (seqs, gaps)
}

#[test]
fn a_lagged_run_prints_the_gap_filled_from_the_session_entries() {
    let (fake, daemon, project) = flooding_daemon(64);
    let (child, session) = start_run(&fake, &daemon, &project);
    wait_until_idle(&daemon, &session);
    let (lines, code) = finish(child);
    assert_eq!(code, 0, "{lines:#?}");

    let gaps: Vec<&Value> = lines.iter().filter(|l| l["type"] == "gap").collect();
    assert!(
        !gaps.is_empty(),
        "the flood did not make the client fall behind; the test proves nothing"
    );
    assert!(gaps.iter().all(|g| g["filled"] == true), "{gaps:#?}");

    // Every seq from the first printed to the last is either printed or inside a gap record.
    let (seqs, ranges) = coverage(&lines);
    let first = *seqs.first().unwrap();
    let last = *seqs.last().unwrap();
    for seq in first..=last {
        let covered =
            seqs.contains(&seq) || ranges.iter().any(|(from, to)| (*from..=*to).contains(&seq));
        assert!(covered, "seq {seq} is missing without a gap record");
    }

    // Every entry the run appended is in the output: announced live or recovered in a gap.
    let mut recorded: Vec<String> = lines
        .iter()
        .filter(|l| l["event"]["kind"] == "entry_appended")
        .map(|l| l["event"]["entry"]["id"].as_str().unwrap().to_string())
        .collect();
    for gap in &gaps {
        for entry in gap["entries"].as_array().unwrap() {
            recorded.push(entry["id"].as_str().unwrap().to_string());
        }
    }
    let tree = rpc(&daemon, "session/tree", json!({"session_id": session}));
    let entries = tree["entries"].as_array().unwrap();
    for entry in entries {
        if entry["type"] == "message" {
            let id = entry["id"].as_str().unwrap();
            assert!(recorded.iter().any(|r| r == id), "entry {entry} is not in the output");
        }
    }
    let result = entries
        .iter()
        .find(|e| e["message"]["role"] == "tool_result")
        .unwrap_or_else(|| panic!("no tool result in {entries:#?}"));
    assert_eq!(result["message"]["tool_name"], "bash");
    assert!(lines.iter().any(|l| l["event"]["kind"] == "agent_end"));
}

#[test]
fn a_gap_that_swallowed_the_end_of_the_run_is_reported_and_exits_8() {
    // Two events kept: the client's cursor and the run's end are both gone by the time it
    // reads on.
    let (fake, daemon, project) = flooding_daemon(2);
    let (child, session) = start_run(&fake, &daemon, &project);
    wait_until_idle(&daemon, &session);
    // More events after the run push its end out of the buffer.
    for name in ["one", "two", "three"] {
        rpc(&daemon, "session/rename", json!({"session_id": session, "name": name}));
    }
    let (lines, code) = finish(child);
    assert_eq!(code, 8, "{lines:#?}");
    let last = lines.last().unwrap();
    assert_eq!(last["type"], "gap", "{last}");
    assert_eq!(last["filled"], false);
    assert!(last["reason"].as_str().unwrap().contains("ended inside the gap"), "{last}");
    assert!(last["from_seq"].as_u64().unwrap() <= last["to_seq"].as_u64().unwrap());
    assert_eq!(last["session_id"], session.as_str());
    assert!(!lines.iter().any(|l| l["event"]["kind"] == "agent_end"));
}
