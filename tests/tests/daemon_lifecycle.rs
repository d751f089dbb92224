//! End-to-end: the daemon's lifecycle and the wire's error handling, through the real `reind`
//! and `rein` binaries on a temp socket and `REIN_HOME`.

use rein_testkit::daemon::{DaemonFixture, RawConnection};
use serde_json::{Value, json};
use std::io::Write;
use std::process::Stdio;

fn error_kind(response: &Value) -> &str {
    response["error"]["data"]["kind"].as_str().unwrap_or("<none>")
}

#[test]
fn info_errors_and_graceful_shutdown() {
    let mut daemon = DaemonFixture::start();

    // daemon/info through the real CLI.
    let output = daemon.run_rein(&["rpc", "daemon/info"]);
    assert!(output.status.success(), "{output:?}");
    let info: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(info["protocol_version"], "1.0");
    assert_eq!(info["socket_path"], daemon.socket().display().to_string());
    assert_eq!(info["pid"], json!(daemon.child_mut().unwrap().id()));

    let mut raw = daemon.connect();
    let mut bystander = daemon.connect();

    // Malformed JSON: parse error with a null id; the connection survives.
    raw.send_line("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":");
    let response = raw.read_json();
    assert_eq!(response["error"]["code"], -32700);
    assert_eq!(error_kind(&response), "parse_error");
    assert_eq!(response["id"], Value::Null);

    // Not UTF-8.
    raw.send_raw(b"\xff\xfe\xfd\n");
    let response = raw.read_json();
    assert_eq!(error_kind(&response), "parse_error");

    // An oversize line (over the default 16 MiB): invalid request; the connection survives.
    let mut huge = Vec::with_capacity(17 * 1024 * 1024 + 1);
    huge.extend_from_slice(
        b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"daemon/info\",\"params\":{\"x\":\"",
    );
    huge.resize(17 * 1024 * 1024, b'a');
    huge.extend_from_slice(b"\"}}\n");
    raw.send_raw(&huge);
    let response = raw.read_json();
    assert_eq!(response["error"]["code"], -32600);
    assert_eq!(error_kind(&response), "invalid_request");
    assert!(response["error"]["message"].as_str().unwrap().contains("exceeds the limit"));

    // Unknown method.
    let response = raw.call(3, "session/teleport", json!({}));
    assert_eq!(response["error"]["code"], -32601);
    assert_eq!(error_kind(&response), "method_not_found");

    // Not a request at all.
    raw.send_line("{\"hello\":1}");
    assert_eq!(error_kind(&raw.read_json()), "invalid_request");
    raw.send_line("[1,2]");
    assert_eq!(error_kind(&raw.read_json()), "invalid_request");

    // Bad params name the field.
    let response = raw.call(4, "initialize", json!({"protocol_version": "1.0"}));
    assert_eq!(error_kind(&response), "invalid_params");
    assert_eq!(response["error"]["data"]["field"], "client_name");
    let response = raw.call(5, "daemon/info", json!([1]));
    assert_eq!(error_kind(&response), "invalid_params");

    // An incompatible major version is refused; a compatible one is answered.
    let response =
        raw.call(6, "initialize", json!({"client_name": "t", "protocol_version": "2.0"}));
    assert_eq!(error_kind(&response), "incompatible_protocol");
    let response =
        raw.call(7, "initialize", json!({"client_name": "t", "protocol_version": "1.3"}));
    assert_eq!(response["result"]["protocol_version"], "1.0");
    assert_eq!(response["result"]["capabilities"]["max_line_bytes"], 16 * 1024 * 1024);

    // After all that, both connections still work.
    let response = raw.call(8, "daemon/info", json!({}));
    assert!(response["result"]["uptime_ms"].is_u64());
    let response = bystander.call(1, "daemon/info", json!({}));
    assert!(response["result"]["connections"].as_u64().unwrap() >= 2);

    // A daemon subscription hears the shutdown.
    let mut watcher = daemon.connect();
    let response = watcher.call(1, "daemon/subscribe", json!({}));
    let subscription = response["result"].as_str().unwrap().to_string();
    // Unsubscribing by name works, even straight after subscribing, and only with the method of
    // the subscription's family; a second subscription takes its place.
    let wrong = watcher.call(2, "session/unsubscribe", json!({"subscription": subscription}));
    assert_eq!(wrong["result"], false, "{wrong}");
    let response = watcher.call(2, "daemon/unsubscribe", json!({"subscription": subscription}));
    assert_eq!(response["result"], true, "{response}");
    let response = watcher.call(3, "daemon/unsubscribe", json!({"subscription": subscription}));
    assert_eq!(response["result"], false, "{response}");
    for round in 0..50 {
        let id = 100 + 2 * round;
        let sub = watcher.call(id, "daemon/subscribe", json!({}))["result"].clone();
        let ended = watcher.call(id + 1, "daemon/unsubscribe", json!({"subscription": sub}));
        assert_eq!(ended["result"], true, "round {round}: {ended}");
    }
    let missing = watcher.call(5, "daemon/unsubscribe", json!({}));
    assert_eq!(error_kind(&missing), "invalid_params");
    let response = watcher.call(4, "daemon/subscribe", json!({}));
    let subscription = response["result"].as_str().unwrap().to_string();

    // Graceful shutdown through the CLI removes the socket and ends the process cleanly.
    let output = daemon.run_rein(&["daemon", "stop"]);
    assert!(output.status.success(), "{output:?}");
    // It returns once the daemon has exited, its home free for the next start.
    let home_lock = std::fs::File::open(daemon.home().join("run").join("reind.lock")).unwrap();
    assert!(home_lock.try_lock().is_ok(), "`rein daemon stop` returned before the daemon exited");
    let notice = watcher.read_json();
    assert_eq!(notice["method"], "daemon/event");
    assert_eq!(notice["params"]["subscription"], subscription.as_str());
    assert_eq!(notice["params"]["result"]["kind"], "shutting_down");
    assert_eq!(daemon.wait_for_exit(), Some(0));
    assert!(!daemon.socket().exists(), "socket left behind after shutdown");
}

#[test]
fn second_daemon_is_refused_while_the_first_keeps_serving() {
    let daemon = DaemonFixture::start();
    let output = daemon.reind().arg("--foreground").output().unwrap();
    assert_eq!(output.status.code(), Some(3), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("already serving"), "{stderr}");
    // Also when started in the background.
    let output = daemon.reind().output().unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("already serving"));
    let response = daemon.connect().call(1, "daemon/info", json!({}));
    assert!(response["result"]["pid"].is_u64());
}

#[test]
fn a_killed_daemon_leaves_a_socket_that_the_next_start_replaces() {
    let mut daemon = DaemonFixture::start();
    daemon.kill();
    assert!(daemon.socket().exists(), "SIGKILL should leave the socket file");
    assert!(std::os::unix::net::UnixStream::connect(daemon.socket()).is_err());

    let output = daemon.run_rein(&["daemon", "start"]);
    assert!(output.status.success(), "{output:?}");
    let status = daemon.run_rein(&["daemon", "status", "--json"]);
    assert!(status.status.success(), "{status:?}");
    let info: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(info["running"], true);

    // Starting again is a no-op; stopping removes the socket.
    assert!(daemon.run_rein(&["daemon", "start"]).status.success());
    assert!(daemon.run_rein(&["daemon", "stop"]).status.success());
    assert!(!daemon.socket().exists());
    let status = daemon.run_rein(&["daemon", "status"]);
    assert_eq!(status.status.code(), Some(1));
}

#[test]
fn rpc_starts_the_daemon_on_demand_and_reports_errors() {
    let daemon = DaemonFixture::new();
    let output = daemon.run_rein(&["rpc", "daemon/info"]);
    assert!(output.status.success(), "{output:?}");

    let output = daemon.run_rein(&["rpc", "no/such"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("method_not_found"));

    let output = daemon.run_rein(&["rpc", "daemon/info", "{not json"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(daemon.run_rein(&["daemon", "stop"]).status.success());
}

#[test]
fn stdio_bridges_lines_both_ways() {
    let daemon = DaemonFixture::start();
    let mut child = daemon
        .rein()
        .arg("stdio")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "{}", json!({"jsonrpc":"2.0","id":1,"method":"daemon/info"})).unwrap();
        writeln!(stdin, "garbage").unwrap();
        writeln!(stdin, "{}", json!({"jsonrpc":"2.0","id":"b","method":"nope/nope"})).unwrap();
    }
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{output:?}");
    let lines: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(lines.iter().any(|m| m["id"] == 1 && m["result"]["pid"].is_u64()));
    assert!(lines.iter().any(|m| m["id"] == "b" && error_kind(m) == "method_not_found"));
    assert!(lines.iter().any(|m| m["id"].is_null() && error_kind(m) == "parse_error"));
}

#[test]
fn sigterm_shuts_down_gracefully() {
    let mut daemon = DaemonFixture::start();
    let pid = daemon.child_mut().unwrap().id();
    let _conn: RawConnection = daemon.connect();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert_eq!(daemon.wait_for_exit(), Some(0));
    assert!(!daemon.socket().exists());
}

/// `rein` starts the daemon itself (`reind --foreground --detached --ready-fd N
/// --serve-ready-fd`, see `rein_launch`): one exec of `reind`, not a background `reind` that
/// starts another.
#[test]
fn rein_starts_the_daemon_with_one_exec_of_reind() {
    use std::os::unix::fs::PermissionsExt;
    let daemon = DaemonFixture::new();
    let bin = tempfile::tempdir().unwrap();
    let calls = bin.path().join("calls");
    // A stand-in `reind` that records each exec, then becomes the real one.
    let wrapper = bin.path().join("reind");
    let script = format!(
        "#!/bin/sh\necho \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
        calls.display(),
        rein_testkit::daemon::binary("reind").display()
    );
    std::fs::write(&wrapper, script).unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();

    let output =
        daemon.rein().env("REIN_DAEMON_BIN", &wrapper).args(["rpc", "daemon/info"]).output();
    let output = output.unwrap();
    assert!(output.status.success(), "{output:?}");
    let info: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(info["pid"].is_u64(), "{info}");
    let recorded = std::fs::read_to_string(&calls).unwrap();
    let lines: Vec<&str> = recorded.lines().collect();
    assert_eq!(lines.len(), 1, "reind was executed more than once: {lines:?}");
    for flag in ["--foreground", "--detached", "--ready-fd", "--serve-ready-fd", "--socket"] {
        assert!(lines[0].split(' ').any(|word| word == flag), "{flag} missing: {}", lines[0]);
    }
    // The start connection was the daemon's stdout; once it listens, stdout goes nowhere
    // (the connection is served on a descriptor of its own, which no tool inherits).
    let stdout = std::fs::read_link(format!("/proc/{}/fd/1", info["pid"])).unwrap();
    assert_eq!(stdout, std::path::Path::new("/dev/null"));
    assert!(daemon.run_rein(&["daemon", "stop"]).status.success());
}

/// A daemon that exits before it listens (here: a mistake in its configuration) is reported
/// by the `rein` that started it, with the daemon's own message.
#[test]
fn rein_reports_why_the_daemon_did_not_start() {
    let daemon = DaemonFixture::new();
    std::fs::write(daemon.home().join("config.toml"), "approval_polcy = \"ask\"\n").unwrap();
    let output = daemon.run_rein(&["rpc", "daemon/info"]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("reind did not start"), "{stderr}");
    assert!(stderr.contains("approval_polcy"), "the daemon's reason is passed on: {stderr}");
    assert!(!daemon.socket().exists(), "nothing listens");
    // `rein daemon start` says the same.
    let output = daemon.run_rein(&["daemon", "start"]);
    assert!(!output.status.success(), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stderr).contains("approval_polcy"), "{output:?}");
}

/// `rein run` starts the daemon before it parses its arguments (`rein_cli::ahead`): a daemon
/// that exits before it listens is still reported with its own message, and asking for help
/// starts none.
#[test]
fn rein_run_starting_the_daemon_ahead_reports_a_failed_start_and_leaves_help_alone() {
    let daemon = DaemonFixture::new();
    let output = daemon.run_rein(&["run", "--help"]);
    assert!(output.status.success(), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stdout).contains("PROMPT"), "{output:?}");
    // A daemon started for it would have made its run directory by now.
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(!daemon.home().join("run").exists(), "no daemon was started for help");
    std::fs::write(daemon.home().join("config.toml"), "approval_polcy = \"ask\"\n").unwrap();
    let output = daemon.run_rein(&["run", "--approve", "yolo", "say ok"]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("reind did not start"), "{stderr}");
    assert!(stderr.contains("approval_polcy"), "the daemon's reason is passed on: {stderr}");
    assert!(!daemon.socket().exists(), "nothing listens");
}

/// Two clients that find no daemon at once both start one: one wins, the other's daemon
/// exits with "already running" and that client uses the winner.
#[test]
fn clients_starting_the_daemon_at_once_share_one() {
    let daemon = DaemonFixture::new();
    let clients: Vec<_> = (0..4)
        .map(|_| {
            daemon
                .rein()
                .args(["rpc", "daemon/info"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut pids = Vec::new();
    for client in clients {
        let output = client.wait_with_output().unwrap();
        assert!(output.status.success(), "{output:?}");
        let info: Value = serde_json::from_slice(&output.stdout).unwrap();
        pids.push(info["pid"].as_u64().unwrap());
    }
    pids.dedup();
    assert_eq!(pids.len(), 1, "one daemon serves them all: {pids:?}");
    assert!(daemon.run_rein(&["daemon", "stop"]).status.success());
}
