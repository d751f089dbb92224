//! End-to-end: what rein promises when the world outside the daemon interferes: a full disk,
//! a session file deleted or replaced while loaded, a command printing far too much, a
//! daemon dying under a client, unreadable files in the sessions directory, and a second
//! daemon on the same `REIN_HOME`. Everything goes through the real `reind` and `rein`.
//!
//! The full-disk tests mount a 2 MiB tmpfs over `REIN_HOME`; they need root and say they are
//! skipped where mounting is not permitted.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

mod cli_support;

use cli_support::{CliEnv, assert_exit, session_id, stderr, stdout};
use rein_testkit::fake_provider::{RecordedRequest, Reply};
use rein_testkit::small_fs::SmallFs;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
        .collect()
}

/// The session events of `rein run --json` output.
fn run_events(output: &std::process::Output) -> Vec<Value> {
    json_lines(&stdout(output)).into_iter().map(|line| line["event"].clone()).collect()
}

/// The ids of the entries the file at `path` holds.
fn ids_in_file(path: &Path) -> HashSet<String> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .skip(1)
        .map(|line| serde_json::from_str::<Value>(line).unwrap()["id"].as_str().unwrap().into())
        .collect()
}

/// Asserts that every entry acknowledged with `entry_appended` is in the file at `path`.
fn assert_acknowledged_on_disk(events: &[Value], path: &Path) {
    let on_disk = ids_in_file(path);
    for event in events.iter().filter(|e| e["kind"] == "entry_appended") {
        let id = event["entry"]["id"].as_str().unwrap();
        assert!(on_disk.contains(id), "entry {id} was acknowledged but is not in {path:?}");
    }
}

/// The session file's path, from `session/list`.
fn session_path(env: &CliEnv, id: &str) -> PathBuf {
    let listing = env.rpc_ok("session/list", json!({}));
    let sessions = listing["sessions"].as_array().unwrap();
    let summary = sessions.iter().find(|s| s["session_id"] == id).unwrap();
    PathBuf::from(summary["path"].as_str().unwrap())
}

/// The messages a request sent, without the system prompt.
fn request_messages(request: &RecordedRequest) -> Vec<Value> {
    let messages = request.body["messages"].as_array().cloned().unwrap_or_default();
    messages.into_iter().filter(|m| m["role"] != "system").collect()
}

/// Starts an environment whose `REIN_HOME` is a 2 MiB tmpfs, or `None` (skipped) where that
/// cannot be mounted.
fn on_small_fs(script: Vec<Reply>, test: &str) -> Option<(CliEnv, SmallFs)> {
    let mut env = CliEnv::configured(script);
    let home = env.daemon.home().to_path_buf();
    let config = std::fs::read_to_string(home.join("config.toml")).unwrap();
    let fs = SmallFs::mount_or_skip(&home, "2m", test)?;
    std::fs::write(home.join("config.toml"), config).unwrap();
    env.daemon.spawn();
    Some((env, fs))
}

/// A command that fills the disk `REIN_HOME` is on, then prints more than a page (so its
/// result cannot fit in the session file's last page) and a marker.
const FILL_THEN_PRINT: &str = "head -c 8388608 /dev/zero > \"$REIN_HOME/filler\" 2>/dev/null; seq 1 3000; echo tool-really-ran";

#[test]
fn a_full_disk_fails_the_run_and_the_session_continues_from_the_file_once_space_returns() {
    let script = vec![
        Reply::tool_call("bash", json!({"command": FILL_THEN_PRINT})),
        Reply::text("carrying on"),
    ];
    let test = "a_full_disk_fails_the_run_and_the_session_continues_from_the_file";
    let Some((mut env, fs)) = on_small_fs(script, test) else { return };

    // The tool fills the disk while it runs, so its result cannot be written.
    let failed = env.run(&["run", "--json", "--approve", "yolo", "fill the disk"]);
    assert_exit(&failed, 1);
    let id = session_id(&stderr(&failed));
    let events = run_events(&failed);
    let error = events.iter().find(|e| e["kind"] == "error").expect("an error event");
    assert_eq!(error["error_kind"], "io", "{error}");
    let path = PathBuf::from(error["path"].as_str().unwrap());
    let message = error["message"].as_str().unwrap();
    assert!(message.contains(&path.display().to_string()), "names the file: {message}");
    assert!(message.contains("No space left on device"), "names the cause: {message}");
    let end = events.iter().find(|e| e["kind"] == "agent_end").unwrap();
    assert_eq!(end["reason"], "error", "{end}");
    assert_acknowledged_on_disk(&events, &path);
    assert_eq!(env.requests().len(), 1, "the run stopped at once");
    // The tool really ran.
    let ran = events.iter().any(|e| {
        e["kind"] == "tool_execution_end" && e["result"].to_string().contains("tool-really-ran")
    });
    assert!(ran, "the tool ran: {events:?}");

    // While the disk is full, the next prompt fails too, and nothing of it is kept.
    let long_prompt = format!("second prompt {}", "x".repeat(6000));
    let again = env.run(&["run", "--session", &id, "--approve", "yolo", &long_prompt]);
    assert_exit(&again, 1);
    assert!(stderr(&again).contains("No space left on device"), "{}", stderr(&again));
    assert_eq!(env.requests().len(), 1, "no request while nothing can be recorded");

    // Space returns: the session goes on from the file, with the real result of the call.
    fs.free();
    let resumed = env.run(&["run", "--json", "--session", &id, "--approve", "yolo", "go on"]);
    assert_exit(&resumed, 0);
    assert_acknowledged_on_disk(&run_events(&resumed), &path);
    let requests = env.requests();
    assert_eq!(requests.len(), 2);
    let sent = request_messages(&requests[1]);
    let text = serde_json::to_string(&sent).unwrap();
    assert!(text.contains("tool-really-ran"), "the real result is sent: {text}");
    assert!(!text.contains("interrupted"), "the call is not repaired as interrupted: {text}");
    assert!(!text.contains("second prompt"), "what was never recorded is not sent: {text}");
    // What the model saw is what the file holds (the final answer came after).
    let messages = env.messages(&id);
    assert_eq!(sent.len(), messages.len() - 1, "sent {sent:?}\nfile {messages:?}");

    // After a restart the history is the same and nothing needs repairing.
    env.daemon.kill();
    env.daemon.spawn();
    assert_eq!(env.messages(&id), messages);
    let file = std::fs::read_to_string(&path).unwrap();
    assert!(!file.contains("interrupted_tool_call"), "{file}");
}

#[test]
fn a_prompt_on_a_full_disk_fails_clearly_and_acknowledges_nothing() {
    let script = vec![Reply::text("first answer"), Reply::text("after the space came back")];
    let test = "a_prompt_on_a_full_disk_fails_clearly_and_acknowledges_nothing";
    let Some((env, fs)) = on_small_fs(script, test) else { return };
    let first = env.run(&["run", "--approve", "yolo", "first"]);
    assert_exit(&first, 0);
    let id = session_id(&stderr(&first));
    let path = session_path(&env, &id);
    let before = std::fs::read(&path).unwrap();

    assert!(fs.fill() > 0);
    // Longer than a page, so it cannot slip into the file's last page.
    let prompt = format!("lost prompt {}", "y".repeat(6000));
    let failed = env.run(&["run", "--json", "--session", &id, "--approve", "yolo", &prompt]);
    assert_exit(&failed, 1);
    let events = run_events(&failed);
    assert!(events.iter().any(|e| e["kind"] == "error" && e["error_kind"] == "io"), "{events:?}");
    assert!(events.iter().all(|e| e["kind"] != "entry_appended"), "{events:?}");
    assert_eq!(std::fs::read(&path).unwrap(), before, "the file is as it was");
    assert_eq!(env.requests().len(), 1);

    fs.free();
    let resumed = env.run(&["run", "--session", &id, "--approve", "yolo", "second"]);
    assert_exit(&resumed, 0);
    let sent = serde_json::to_string(&request_messages(&env.requests()[1])).unwrap();
    assert!(!sent.contains("lost prompt"), "{sent}");
    assert!(sent.contains("first answer") && sent.contains("second"), "{sent}");
}

#[test]
fn a_call_whose_reply_cannot_be_written_never_runs() {
    let env_project = tempfile::tempdir().unwrap();
    let marker = env_project.path().join("ran-marker");
    // A reply too large for the space left, with a call that would leave a marker.
    let command = format!("touch {}", marker.display());
    let big_reply = Reply {
        text: Some("z".repeat(512 * 1024)),
        delta_size: Some(64 * 1024),
        ..Reply::tool_call("bash", json!({"command": command}))
    };
    let script = vec![big_reply, Reply::text("after the space came back")];
    let test = "a_call_whose_reply_cannot_be_written_never_runs";
    let Some((env, fs)) = on_small_fs(script, test) else { return };
    // Room for the new session and its prompt, not for the reply.
    fs.fill_leaving(64 * 1024);
    let failed = env.run(&["run", "--json", "--approve", "yolo", "try"]);
    assert_exit(&failed, 1);
    let events = run_events(&failed);
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["kind"].as_str()).collect();
    assert!(events.iter().any(|e| e["kind"] == "error" && e["error_kind"] == "io"), "{kinds:?}");
    assert!(!marker.exists(), "the call ran although its reply is not on disk");
    let id = session_id(&stderr(&failed));
    let path = session_path(&env, &id);
    assert_acknowledged_on_disk(&events, &path);
    fs.free();
    let resumed = env.run(&["run", "--session", &id, "--approve", "yolo", "go on"]);
    assert_exit(&resumed, 0);
    assert!(!marker.exists());
    let sent = request_messages(&env.requests()[1]);
    let text = serde_json::to_string(&sent).unwrap();
    assert!(!text.contains("zzzz"), "the unwritten reply is not sent: {}", &text[..200]);
    assert_eq!(sent.len(), env.messages(&id).len() - 1);
}

#[test]
fn a_deleted_or_replaced_session_file_never_loses_an_acknowledged_entry() {
    let script = vec![Reply::text("one"), Reply::text("two"), Reply::text("three")];
    let mut env = CliEnv::start(script);
    let first = env.run(&["run", "--approve", "yolo", "prompt one"]);
    assert_exit(&first, 0);
    let id = session_id(&stderr(&first));
    let path = session_path(&env, &id);
    let old_copy = std::fs::read(&path).unwrap();

    // Deleted under the loaded session (the project's whole directory, lock file included).
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    let second = env.run(&["run", "--json", "--session", &id, "--approve", "yolo", "prompt two"]);
    assert_exit(&second, 0);
    let events = run_events(&second);
    assert_acknowledged_on_disk(&events, &path);
    let restored = events.iter().any(|e| {
        e["kind"] == "entry_appended" && e["entry"].to_string().contains("\"cause\":\"missing\"")
    });
    assert!(restored, "a file_restored repair entry is announced: {events:?}");

    // Replaced by an older copy (a sync tool): the copy is set aside, the file written again.
    let temp = path.with_extension("sync-tmp");
    std::fs::write(&temp, &old_copy).unwrap();
    std::fs::rename(&temp, &path).unwrap();
    let third = env.run(&["run", "--json", "--session", &id, "--approve", "yolo", "prompt three"]);
    assert_exit(&third, 0);
    assert_acknowledged_on_disk(&run_events(&third), &path);
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let set_aside: Vec<PathBuf> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|item| item.unwrap().path())
        .filter(|p| {
            p.file_name().unwrap().to_string_lossy().starts_with(&format!("{name}.replaced-"))
        })
        .collect();
    assert_eq!(set_aside.len(), 1, "the replacement is kept aside");
    assert_eq!(std::fs::read(&set_aside[0]).unwrap(), old_copy);

    // A restart finds every prompt and answer.
    env.daemon.kill();
    env.daemon.spawn();
    let messages = serde_json::to_string(&env.messages(&id)).unwrap();
    for text in ["prompt one", "prompt two", "prompt three", "\"three\""] {
        assert!(messages.contains(text), "{text} missing from {messages}");
    }
}

const SPILL_CONFIG: &str = "\n[tools]\nspill_max_bytes = 100000\n\n[storage]\nmin_free_bytes = 0\n";

fn append_config(env: &CliEnv, extra: &str) {
    let path = env.daemon.home().join("config.toml");
    let mut config = std::fs::read_to_string(&path).unwrap();
    config.push_str(extra);
    std::fs::write(path, config).unwrap();
}

#[test]
fn spill_files_are_capped_named_in_the_result_and_removed_with_their_session() {
    let script = vec![
        Reply::tool_call("bash", json!({"command": "seq 1 300000"})),
        Reply::text("that was long"),
    ];
    let mut env = CliEnv::configured(script);
    append_config(&env, SPILL_CONFIG);
    env.daemon.spawn();
    let output = env.run(&["run", "--json", "--approve", "yolo", "print a lot"]);
    assert_exit(&output, 0);
    let id = session_id(&stderr(&output));
    let events = run_events(&output);
    let end = events.iter().find(|e| e["kind"] == "tool_execution_end").unwrap();
    let text = end["result"]["content"][0]["text"].as_str().unwrap().to_string();
    let spill_dir = env.daemon.home().join("tmp").join("bash-output").join(&id);
    let files: Vec<PathBuf> =
        std::fs::read_dir(&spill_dir).unwrap().map(|item| item.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(text.contains(&files[0].display().to_string()), "the result names the file: {text}");
    assert!(text.contains("100000") && text.contains("tools.spill_max_bytes"), "{text}");
    assert_eq!(std::fs::metadata(&files[0]).unwrap().len(), 100_000, "the file is capped");
    let start = std::fs::read_to_string(&files[0]).unwrap();
    assert!(start.starts_with("1\n2\n3\n"), "it keeps the start of the output");

    env.rpc_ok("session/delete", json!({"session_id": id}));
    assert!(!spill_dir.exists(), "the session's output files went with it");
}

#[test]
fn old_spill_files_are_swept_and_low_disk_space_is_reported() {
    let script =
        vec![Reply::tool_call("bash", json!({"command": "seq 1 100000"})), Reply::text("done")];
    let mut env = CliEnv::configured(script);
    // A threshold no disk meets: space is always "low".
    append_config(&env, "\n[storage]\nmin_free_bytes = 4611686018427387904\n");
    let root = env.daemon.home().join("tmp").join("bash-output");
    let old = root.join("gone-session").join("bash-old.log");
    let fresh = root.join("kept-session").join("bash-new.log");
    for file in [&old, &fresh] {
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, "output").unwrap();
    }
    let month_ago = std::time::SystemTime::now() - Duration::from_secs(30 * 24 * 60 * 60);
    std::fs::File::options().write(true).open(&old).unwrap().set_modified(month_ago).unwrap();
    env.daemon.spawn();

    let deadline = Instant::now() + Duration::from_secs(20);
    while old.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!old.exists(), "a file older than the retention period is removed");
    assert!(fresh.exists(), "a recent one is kept");

    let info = env.rpc_ok("daemon/info", json!({}));
    assert_eq!(info["low_disk_space"], true, "{info}");
    assert!(info["disk_free_bytes"].as_u64().is_some(), "{info}");

    // With space "low", a long output is not spilled, and the result says why.
    let output = env.run(&["run", "--json", "--approve", "yolo", "print a lot"]);
    assert_exit(&output, 0);
    let events = run_events(&output);
    let end = events.iter().find(|e| e["kind"] == "tool_execution_end").unwrap();
    let text = end["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("Full output not saved"), "{text}");
    assert!(text.contains("storage.min_free_bytes"), "{text}");
}

/// Plays a daemon that dies under its first client: it holds the socket's lock, accepts one
/// connection, closes it without answering, and only then "exits" (lets the lock go).
fn dying_daemon(socket: &Path) -> std::thread::JoinHandle<()> {
    std::fs::create_dir_all(socket.parent().unwrap()).unwrap();
    let lock = std::fs::File::create(rein_protocol::paths::socket_lock(socket)).unwrap();
    lock.lock().unwrap();
    let listener = std::os::unix::net::UnixListener::bind(socket).unwrap();
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        // Read one byte of the request and leave the rest unread, so closing resets the
        // connection (as a daemon dying with a request in its buffer does).
        let mut first = [0_u8; 1];
        let _ = std::io::Read::read(&mut &stream, &mut first);
        drop(stream);
        std::thread::sleep(Duration::from_millis(200));
        drop(listener);
        drop(lock);
    })
}

#[test]
fn a_client_cut_off_by_a_dying_daemon_starts_a_new_one() {
    let env = CliEnv::configured(vec![]);
    let dying = dying_daemon(env.daemon.socket());
    // The first command after the "crash" reaches the dying daemon, is cut off, and goes on
    // with a new daemon.
    let output = env.run(&["sessions"]);
    dying.join().unwrap();
    assert_exit(&output, 0);
    assert_eq!(stdout(&output), "no sessions\n");
    let info = env.rpc_ok("daemon/info", json!({}));
    assert!(info["pid"].as_u64().is_some(), "a new daemon serves: {info}");
    cli_support::stop_daemon(&env);
}

#[test]
fn listing_skips_unreadable_files_and_directories_and_says_so() {
    let env = CliEnv::start(vec![Reply::text("listed")]);
    let run = env.run(&["run", "--approve", "yolo", "a session to list"]);
    assert_exit(&run, 0);
    let id = session_id(&stderr(&run));
    let path = session_path(&env, &id);
    // A session "file" nobody can read (a directory), even as root.
    let bad_file = path.parent().unwrap().join("unreadable.jsonl");
    std::fs::create_dir(&bad_file).unwrap();
    let sessions_dir = env.daemon.home().join("sessions");
    // A project directory nobody can list (a symbolic link to itself).
    let bad_dir = sessions_dir.join("looping-project");
    std::os::unix::fs::symlink(&bad_dir, &bad_dir).unwrap();

    let here = env.run(&["sessions"]);
    assert_exit(&here, 0);
    let text = stdout(&here);
    assert!(text.contains(&id), "{text}");
    assert!(text.contains("warning:") && text.contains(&bad_file.display().to_string()), "{text}");

    let all = env.run(&["sessions", "--all"]);
    assert_exit(&all, 0);
    let text = stdout(&all);
    assert!(text.contains(&id), "{text}");
    assert!(text.contains(&bad_dir.display().to_string()), "{text}");

    let listing = env.rpc_ok("session/list", json!({}));
    let errors: Vec<&str> =
        listing["errors"].as_array().unwrap().iter().map(|e| e["path"].as_str().unwrap()).collect();
    assert_eq!(errors.len(), 2, "{listing}");
    assert!(errors.contains(&bad_file.display().to_string().as_str()), "{listing}");
    assert!(errors.contains(&bad_dir.display().to_string().as_str()), "{listing}");
    assert_eq!(listing["sessions"].as_array().unwrap().len(), 1, "{listing}");
}

#[test]
fn a_second_daemon_on_the_same_home_is_refused_whatever_its_socket() {
    let env = CliEnv::start(vec![]);
    let info = env.rpc_ok("daemon/info", json!({}));
    let other_socket = env.daemon.home().join("other.sock");
    let reind = || {
        let mut command = std::process::Command::new(rein_testkit::daemon::binary("reind"));
        command.env("REIN_HOME", env.daemon.home()).arg("--socket").arg(&other_socket);
        command
    };
    let output = reind().arg("--foreground").output().unwrap();
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(message.contains(&format!("pid {}", info["pid"])), "{message}");
    assert!(message.contains(&env.daemon.socket().display().to_string()), "{message}");
    assert!(!other_socket.exists(), "the second daemon did not bind");
    // Started the usual way (through the launcher), it says the same.
    let background = reind().output().unwrap();
    assert_eq!(background.status.code(), Some(3), "{}", stderr(&background));
    assert!(stderr(&background).contains("already uses REIN_HOME"), "{}", stderr(&background));
    // The first keeps serving.
    assert_eq!(env.rpc_ok("daemon/info", json!({}))["pid"], info["pid"]);
}
