//! End-to-end: no client can exhaust the daemon. Each test drives the real `reind` over a raw
//! socket the way a careless or hostile client would, and checks what the daemon holds
//! afterwards (connections, descriptors, loaded sessions, resident memory).
//!
//! Memory bounds are generous (debug builds, shared machines); the measured figures are in
//! docs/benchmarks.md.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use rein_testkit::background::BackgroundFake;
use rein_testkit::daemon::{DaemonFixture, RawConnection};
use rein_testkit::fake_provider::Reply;
use rein_testkit::process::{open_fds, open_file_limit, rss_kib};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

/// How long any wait for the daemon may take before the test fails.
const PATIENCE: Duration = Duration::from_secs(60);

fn info(daemon: &DaemonFixture) -> Value {
    daemon.connect().call_ok(1, "daemon/info", json!({}))
}

/// Polls `check` until it holds; fails the test after [`PATIENCE`].
fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Reads one line from a raw stream (`None` at end of stream).
fn read_line(reader: &mut BufReader<UnixStream>) -> Option<Value> {
    let mut line = String::new();
    match reader.read_line(&mut line) {
        Ok(0) => None,
        Ok(_) => Some(serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))),
        Err(error) => panic!("read failed: {error}"),
    }
}

/// True once the daemon has closed the stream (after any lines still in flight).
/// Whether the daemon closed the connection: the end of the stream, or a reset (a socket
/// closed with bytes of ours still unread is reset, not shut down). A read that times out
/// means the connection is still open.
fn closed_by_daemon(reader: &mut BufReader<UnixStream>) -> bool {
    let mut rest = Vec::new();
    match reader.read_to_end(&mut rest) {
        Ok(_) => true,
        Err(error) => error.kind() == std::io::ErrorKind::ConnectionReset,
    }
}

fn raw(daemon: &DaemonFixture) -> (UnixStream, BufReader<UnixStream>) {
    let stream = UnixStream::connect(daemon.socket()).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    let reader = BufReader::new(stream.try_clone().unwrap());
    (stream, reader)
}

#[test]
fn rein_runs_leave_no_connection_subscription_or_session_behind() {
    let fake = BackgroundFake::start(Vec::new());
    let mut daemon = DaemonFixture::new();
    std::fs::write(
        daemon.home().join("config.toml"),
        fake.config("approval_policy = \"yolo\"\n[sessions]\nidle_unload_secs = 1"),
    )
    .unwrap();
    daemon.spawn();
    let pid = daemon.pid().unwrap();
    let project = tempfile::tempdir().unwrap();
    let run = |n: usize| {
        fake.push(Reply::text(format!("answer {n}")));
        let output = daemon
            .rein()
            .current_dir(project.path())
            .args(["run", "--continue", "hello"])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
    };
    // Warm up (the first run creates the session, allocator arenas fill).
    for n in 0..5 {
        run(n);
    }
    eventually("the warm-up runs' connections are gone", || info(&daemon)["connections"] == 1);
    let fds_before = open_fds(pid).unwrap();
    for n in 5..105 {
        run(n);
    }
    // Every run's connection closed: only the probe's own connection is left.
    eventually("the runs' connections are closed", || info(&daemon)["connections"] == 1);
    let fds_after = open_fds(pid).unwrap();
    assert!(fds_after <= fds_before + 2, "descriptors grew from {fds_before} to {fds_after}");
    // Nobody watches the session any more, so it unloads once idle.
    eventually("the idle session unloads", || info(&daemon)["sessions_loaded"] == 0);
}

#[test]
fn the_open_file_limit_is_raised_to_the_hard_limit() {
    let daemon = DaemonFixture::start();
    let pid = daemon.pid().unwrap();
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = limits.lines().find(|l| l.starts_with("Max open files")).unwrap();
    let fields: Vec<&str> = line.split_whitespace().collect();
    // "Max open files  SOFT  HARD  files"
    assert_eq!(fields[3], fields[4], "{line}");
    assert!(open_file_limit(pid).is_some());
}

#[test]
fn a_client_that_never_reads_stops_being_read_and_the_daemon_stays_small() {
    let mut daemon = DaemonFixture::new();
    daemon.spawn_with(|command| {
        command.args(["--max-in-flight", "8"]);
    });
    eventually("only the probe is connected", || info(&daemon)["connections"] == 1);
    let pid = daemon.pid().unwrap();
    let before = rss_kib(pid).unwrap();
    let (mut stream, reader) = raw(&daemon);
    stream.set_nonblocking(true).unwrap();
    let request = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"daemon/info\"}\n".repeat(1000);
    let mut written = 0usize;
    let mut stalled_since: Option<Instant> = None;
    // Write until the daemon has stopped reading for a second.
    loop {
        match stream.write(&request) {
            Ok(n) => {
                written += n;
                stalled_since = None;
            }
            Err(error) if error.kind() == ErrorKind::WouldBlock => {
                let since = *stalled_since.get_or_insert_with(Instant::now);
                if since.elapsed() > Duration::from_secs(1) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(error) => panic!("write failed: {error}"),
        }
        assert!(written < 256 * 1024 * 1024, "the daemon kept reading: {written} bytes taken");
    }
    let during = rss_kib(pid).unwrap();
    // Everyone else is still served while the hostile client is stuck.
    let served = info(&daemon);
    assert_eq!(served["connections"], 2, "{served}");
    assert!(
        during < before + 100 * 1024,
        "RSS grew from {before} KiB to {during} KiB after {written} bytes of requests"
    );
    drop(reader);
    drop(stream);
    eventually("the hostile connection is gone", || info(&daemon)["connections"] == 1);
}

#[test]
fn half_sent_lines_get_an_error_and_the_connection_closes() {
    let mut daemon = DaemonFixture::new();
    daemon.spawn_with(|command| {
        command.args(["--partial-line-idle-secs", "1", "--line-deadline-secs", "3"]);
    });
    // Idle in the middle of a line.
    let (mut idle, mut idle_reader) = raw(&daemon);
    idle.write_all(&vec![b'x'; 1024 * 1024]).unwrap();
    let error = read_line(&mut idle_reader).expect("an error line before closing");
    assert_eq!(error["error"]["data"]["kind"], "invalid_request", "{error}");
    assert_eq!(error["id"], Value::Null);
    assert!(closed_by_daemon(&mut idle_reader));

    // Trickling, never idle long enough, still meets the line deadline.
    let (mut trickle, mut trickle_reader) = raw(&daemon);
    let writer = std::thread::spawn(move || {
        for _ in 0..100 {
            if trickle.write_all(b"y").is_err() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        false
    });
    let error = read_line(&mut trickle_reader).expect("an error line before closing");
    assert!(error["error"]["message"].as_str().unwrap().contains("not finished"), "{error}");
    assert!(closed_by_daemon(&mut trickle_reader));
    assert!(writer.join().unwrap(), "the daemon kept the trickling connection open");

    // A whole line still works, and nothing is left over.
    eventually("the closed connections are gone", || info(&daemon)["connections"] == 1);
}

#[test]
fn the_daemon_wide_input_budget_refuses_what_it_cannot_hold() {
    let mut daemon = DaemonFixture::new();
    daemon.spawn_with(|command| {
        command.args(["--max-buffered-input", "4000000", "--partial-line-idle-secs", "30"]);
    });
    let mut refused = 0;
    let mut open = Vec::new();
    for _ in 0..8 {
        let (mut stream, mut reader) = raw(&daemon);
        // 1 MB each, no newline: the budget holds about three of them.
        if stream.write_all(&vec![b'z'; 1_000_000]).is_err() {
            refused += 1;
            continue;
        }
        reader.get_mut().set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(n) if n > 0 => {
                let error: Value = serde_json::from_str(&line).unwrap();
                assert_eq!(error["error"]["data"]["kind"], "overloaded", "{error}");
                refused += 1;
            }
            _ => open.push((stream, reader)),
        }
    }
    assert!(refused >= 4, "only {refused} of 8 half-line connections were refused");
    assert!(!open.is_empty(), "the budget refused every connection");
    // Other clients are still served.
    assert!(info(&daemon)["connections"].as_u64().unwrap() >= 2);
}

#[test]
fn over_the_connection_limit_daemon_calls_work_and_others_get_one_error_line() {
    let mut daemon = DaemonFixture::new();
    daemon.spawn_with(|command| {
        command.args(["--max-connections", "2"]);
    });
    // The fixture's own start-up probe must be gone before the slots are counted.
    eventually("only the probe is connected", || info(&daemon)["connections"] == 1);
    let mut first = daemon.connect();
    let mut second = daemon.connect();
    first.call_ok(1, "daemon/info", json!({}));
    second.call_ok(1, "daemon/info", json!({}));

    // Over the limit: daemon/info is still answered ...
    let mut third = daemon.connect();
    let info = third.call_ok(7, "daemon/info", json!({}));
    assert_eq!(info["connections"], 2);
    // ... anything else gets one error line naming its id, then the connection closes.
    let (mut stream, mut reader) = raw(&daemon);
    stream
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"session/list\",\"params\":{}}\n")
        .unwrap();
    let error = read_line(&mut reader).unwrap();
    assert_eq!(error["id"], 9, "{error}");
    assert_eq!(error["error"]["data"]["kind"], "overloaded", "{error}");
    assert!(closed_by_daemon(&mut reader));
    // A silent client over the limit gets the error line too.
    let (_silent, mut silent_reader) = raw(&daemon);
    let error = read_line(&mut silent_reader).unwrap();
    assert_eq!(error["error"]["data"]["kind"], "overloaded", "{error}");
    // And `rein daemon stop` works at the limit.
    let output = daemon.run_rein(&["daemon", "stop"]);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(daemon.wait_for_exit(), Some(0));
}

#[test]
fn pipelined_commands_on_one_connection_apply_in_order() {
    let project = tempfile::tempdir().unwrap();
    let daemon = DaemonFixture::start();
    let mut client = daemon.connect();
    let state = client.call_ok(1, "session/create", json!({"cwd": project.path()}));
    let session = state["session_id"].as_str().unwrap().to_string();
    // 200 renames in one write: the last one wins.
    let mut batch = String::new();
    for n in 0..200 {
        let request = json!({"jsonrpc": "2.0", "id": 1000 + n, "method": "session/rename",
                             "params": {"session_id": session, "name": format!("name-{n}")}});
        batch.push_str(&request.to_string());
        batch.push('\n');
    }
    // A read right behind them may overtake, but a command behind them may not.
    let last = json!({"jsonrpc": "2.0", "id": 2000, "method": "session/set_thinking",
                      "params": {"session_id": session, "level": "high"}});
    batch.push_str(&last.to_string());
    batch.push('\n');
    client.send_raw(batch.as_bytes());
    let mut answered = Vec::new();
    while answered.len() < 201 {
        let message = client.read_json();
        assert!(message.get("error").is_none(), "{message}");
        answered.push(message["id"].as_u64().unwrap());
    }
    assert_eq!(answered, (1000..1200).chain([2000]).collect::<Vec<_>>(), "answers out of order");
    let state = client.call_ok(3, "session/state", json!({"session_id": session}));
    assert_eq!(state["name"], "name-199", "{state}");

    // Subscribe and unsubscribe in one write: the unsubscribe finds the subscription.
    let subscribe = json!({"jsonrpc": "2.0", "id": 4, "method": "session/subscribe",
                           "params": {"session_id": session}});
    let unsubscribe = json!({"jsonrpc": "2.0", "id": 5, "method": "session/unsubscribe",
                             "params": {"subscription": "sub-1"}});
    client.send_raw(format!("{subscribe}\n{unsubscribe}\n").as_bytes());
    let first = client.read_json();
    let second = client.read_json();
    assert_eq!(first["id"], 4, "{first}");
    assert_eq!(first["result"], "sub-1", "{first}");
    assert_eq!(second["id"], 5, "{second}");
    assert_eq!(second["result"], true, "{second}");
}

#[test]
fn request_ids_come_back_exactly_as_sent() {
    let daemon = DaemonFixture::start();
    let (mut stream, mut reader) = raw(&daemon);
    for id in ["-1", "1.5", "-0.25", "1e400", "123456789012345678901234567890", "\"text\"", "0"] {
        let request = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"daemon/info"}}"#);
        stream.write_all(format!("{request}\n").as_bytes()).unwrap();
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        assert!(line.contains(&format!("\"id\":{id},")), "id {id} came back as: {line}");
        assert!(line.contains("\"result\""), "{line}");
    }
    // An unknown method still echoes the odd id.
    stream.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":-7,\"method\":\"no/such\"}\n").unwrap();
    let error = read_line(&mut reader).unwrap();
    assert_eq!(error["id"], -7);
    assert_eq!(error["error"]["data"]["kind"], "method_not_found");
    // An id that is not a string, number or null makes the request invalid, answered with null.
    for id in ["{}", "[1]", "true"] {
        let request = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"daemon/info"}}"#);
        stream.write_all(format!("{request}\n").as_bytes()).unwrap();
        let error = read_line(&mut reader).unwrap();
        assert_eq!(error["id"], Value::Null, "{error}");
        assert_eq!(error["error"]["data"]["kind"], "invalid_request", "{error}");
    }
}

#[test]
fn the_documented_replay_window_is_replayable() {
    let project = tempfile::tempdir().unwrap();
    // About 5,000 one-character deltas: more events than the replay window of 4,096.
    let mut reply = Reply::text("x".repeat(5_000));
    reply.delta_size = Some(1);
    let fake = BackgroundFake::start(vec![reply]);
    let daemon = fake.daemon("approval_policy = \"yolo\"");
    let mut client = daemon.connect();
    let state = client.call_ok(1, "session/create", json!({"cwd": project.path()}));
    let session = state["session_id"].as_str().unwrap().to_string();
    client.call_ok(2, "session/subscribe", json!({"session_id": session}));
    client.call_ok(3, "session/prompt", json!({"session_id": session, "text": "talk"}));
    let events = client.events_until("settled");
    let last_seq = events.last().unwrap()["seq"].as_u64().unwrap();
    assert!(last_seq > 4_096, "only {last_seq} events");
    let window = info_window(&daemon);
    assert_eq!(window, 4_096);

    // A client that reconnects from the start of the window gets all of it.
    let mut late = daemon.connect();
    let after = last_seq - window;
    late.call_ok(1, "session/subscribe", json!({"session_id": session, "after_seq": after}));
    for expected in after + 1..=last_seq {
        let item = late.next_session_item();
        assert_eq!(item["type"], "event", "at seq {expected}: {item}");
        assert_eq!(item["seq"], expected);
    }
    // One further back is outside the window.
    let mut too_late = daemon.connect();
    too_late.call_ok(
        1,
        "session/subscribe",
        json!({"session_id": session, "after_seq": after - 1}),
    );
    assert_eq!(too_late.next_session_item()["type"], "resync_required");
}

fn info_window(daemon: &DaemonFixture) -> u64 {
    let mut connection: RawConnection = daemon.connect();
    let result = connection.call_ok(
        1,
        "initialize",
        json!({"client_name": "probe", "protocol_version": "1.0", "capabilities": {}}),
    );
    result["capabilities"]["replay_buffer"].as_u64().unwrap()
}

#[test]
fn histories_come_in_pages_that_fit_the_line_limit() {
    let project = tempfile::tempdir().unwrap();
    let replies = (0..8).map(|n| Reply::text(format!("answer {n} {}", "x".repeat(300)))).collect();
    let fake = BackgroundFake::start(replies);
    let mut daemon = DaemonFixture::new();
    std::fs::write(daemon.home().join("config.toml"), fake.config("approval_policy = \"yolo\""))
        .unwrap();
    let max_line = 4096;
    daemon.spawn_with(|command| {
        command.args(["--max-line-bytes", &max_line.to_string()]);
    });
    let mut client = daemon.connect();
    let state = client.call_ok(1, "session/create", json!({"cwd": project.path()}));
    let session = state["session_id"].as_str().unwrap().to_string();
    client.call_ok(2, "session/subscribe", json!({"session_id": session}));
    for n in 0..8 {
        let text = format!("question {n} {}", "q".repeat(300));
        client.call_ok(3, "session/prompt", json!({"session_id": session, "text": text}));
        client.events_until("settled");
    }

    // Messages, newest page first, each reply within the line limit.
    let (mut stream, mut reader) = raw(&daemon);
    let mut call = |method: &str, params: Value| -> Value {
        let request = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        stream.write_all(format!("{request}\n").as_bytes()).unwrap();
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        assert!(line.len() <= max_line, "a {} byte reply to {method}", line.len());
        let reply: Value = serde_json::from_str(&line).unwrap();
        reply["result"].clone()
    };
    let mut pages = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let page = call("session/messages", json!({"session_id": session, "cursor": cursor}));
        assert_eq!(page["total"], 16, "{page}");
        pages.push(page["messages"].as_array().unwrap().clone());
        cursor = page["next_cursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    assert!(pages.len() > 2, "16 messages of 300+ bytes fit one page: {}", pages.len());
    let messages: Vec<Value> = pages.into_iter().rev().flatten().collect();
    assert_eq!(messages.len(), 16);
    for (n, pair) in messages.chunks(2).enumerate() {
        assert_eq!(pair[0]["role"], "user");
        assert!(pair[0].to_string().contains(&format!("question {n} ")), "{}", pair[0]);
        assert_eq!(pair[1]["role"], "assistant");
        assert!(pair[1].to_string().contains(&format!("answer {n} ")), "{}", pair[1]);
    }
    // A limit asks for the last few only.
    let last = call("session/messages", json!({"session_id": session, "limit": 1}));
    assert_eq!(last["messages"].as_array().unwrap().len(), 1);
    assert!(last["messages"][0].to_string().contains("answer 7 "));

    // The tree, first page first; pages join up without gap or repeat.
    let mut ids = Vec::new();
    let mut cursor = Value::Null;
    let total = loop {
        let page = call("session/tree", json!({"session_id": session, "cursor": cursor}));
        let total = page["total"].as_u64().unwrap();
        ids.extend(page["entries"].as_array().unwrap().iter().map(|e| e["id"].clone()));
        cursor = page["next_cursor"].clone();
        if cursor.is_null() {
            break total;
        }
    };
    assert_eq!(ids.len() as u64, total);
    let unique: std::collections::HashSet<String> = ids.iter().map(Value::to_string).collect();
    assert_eq!(unique.len(), ids.len());
    // A cursor it never gave is refused with the field named.
    let request = json!({"jsonrpc": "2.0", "id": 9, "method": "session/tree",
                         "params": {"session_id": session, "cursor": "bogus"}});
    let mut probe = daemon.connect();
    probe.send_line(&request.to_string());
    let error = probe.read_json();
    assert_eq!(error["error"]["data"]["field"], "cursor", "{error}");
    // `rein tree` follows the pages and draws the whole tree.
    let output = daemon.run_rein(&["tree", &session]);
    assert!(output.status.success(), "{output:?}");
    let drawn = String::from_utf8_lossy(&output.stdout);
    assert!(drawn.contains("answer 7") || drawn.lines().count() as u64 >= total, "{drawn}");

    // The export, in pages of lines that join up to what `rein export` prints whole.
    let mut exported = String::new();
    let mut cursor = Value::Null;
    let mut export_pages = 0;
    loop {
        let page = call(
            "session/export",
            json!({"session_id": session, "format": "markdown", "cursor": cursor}),
        );
        exported.push_str(page["content"].as_str().unwrap());
        export_pages += 1;
        cursor = page["next_cursor"].clone();
        if cursor.is_null() {
            assert_eq!(page["total"].as_u64().unwrap(), exported.lines().count() as u64);
            break;
        }
    }
    assert!(export_pages > 2, "the export came in {export_pages} pages");
    for n in 0..8 {
        assert!(exported.contains(&format!("question {n} ")), "{exported}");
        assert!(exported.contains(&format!("answer {n} ")), "{exported}");
    }
    let output = daemon.run_rein(&["export", &session]);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim_end(), exported.trim_end());
    let two =
        call("session/export", json!({"session_id": session, "format": "markdown", "limit": 2}));
    assert_eq!(two["content"].as_str().unwrap().lines().count(), 2, "{two}");

    // Sessions, newest first, one page at a time.
    let older = client.call_ok(4, "session/create", json!({"cwd": project.path()}));
    let first = call("session/list", json!({"limit": 1}));
    assert_eq!(first["total"], 2, "{first}");
    assert_eq!(first["sessions"].as_array().unwrap().len(), 1);
    let second = call("session/list", json!({"limit": 1, "cursor": first["next_cursor"]}));
    assert_eq!(second["sessions"].as_array().unwrap().len(), 1);
    assert!(second["next_cursor"].is_null(), "{second}");
    let mut listed: Vec<Value> =
        [&first, &second].iter().map(|page| page["sessions"][0]["session_id"].clone()).collect();
    listed.sort_by_key(Value::to_string);
    let mut created = vec![json!(session), older["session_id"].clone()];
    created.sort_by_key(Value::to_string);
    assert_eq!(listed, created);
    // Without a limit, everything that fits: the whole list, as before paging.
    let all = call("session/list", json!({}));
    assert_eq!(all["sessions"].as_array().unwrap().len(), 2);
    assert!(all["next_cursor"].is_null(), "{all}");
}

#[test]
fn a_chatty_command_makes_a_bounded_number_of_update_events() {
    let project = tempfile::tempdir().unwrap();
    let command = "for i in $(seq 1 60000); do echo line-$i; done";
    let fake = BackgroundFake::start(vec![
        Reply::tool_call("bash", json!({"command": command})),
        Reply::text("done"),
    ]);
    let daemon = fake.daemon("approval_policy = \"yolo\"");
    let mut client = daemon.connect();
    let state = client.call_ok(1, "session/create", json!({"cwd": project.path()}));
    let session = state["session_id"].as_str().unwrap().to_string();
    client.call_ok(2, "session/subscribe", json!({"session_id": session}));
    client.call_ok(3, "session/prompt", json!({"session_id": session, "text": "flood"}));
    let events = client.events_until("settled");
    let kind = |e: &Value| e["event"]["kind"].as_str().unwrap_or("").to_string();
    let time_of = |wanted: &str| {
        events.iter().find(|e| kind(e) == wanted).unwrap()["timestamp"].as_i64().unwrap()
    };
    let updates: Vec<&Value> =
        events.iter().filter(|e| kind(e) == "tool_execution_update").collect();
    let streamed: String = updates
        .iter()
        .flat_map(|e| e["event"]["content"].as_array().cloned().unwrap_or_default())
        .filter_map(|block| block["text"].as_str().map(str::to_string))
        .collect();
    let expected: String = (1..=60000).map(|n| format!("line-{n}\n")).collect();
    assert_eq!(streamed.len(), expected.len());
    assert!(streamed == expected, "the streamed output differs from the command's");
    // One update per 50 ms or per 16 KB at most, whatever the machine's speed.
    let millis = (time_of("tool_execution_end") - time_of("tool_execution_start")).max(0) as usize;
    let bound = millis / 50 + expected.len() / (16 * 1024) + 3;
    assert!(updates.len() <= bound, "{} updates in {millis} ms", updates.len());
}

/// Memory is given back after sessions close: loading sessions grows the daemon, closing them
/// returns part of it to the system at once (the allocator purges freed pages), and a second
/// round of as many sessions opened and closed does not grow it again (what closed sessions
/// held was freed, not leaked).
#[test]
fn closed_sessions_give_their_memory_back() {
    let project = tempfile::tempdir().unwrap();
    let fake = BackgroundFake::start(Vec::new());
    let daemon = fake.daemon("");
    let pid = daemon.pid().unwrap();
    let mut client = daemon.connect();
    let idle = rss_kib(pid).unwrap();
    let round = |client: &mut RawConnection| {
        let ids: Vec<String> = (0..300)
            .map(|_| {
                let state = client.call_ok(1, "session/create", json!({"cwd": project.path()}));
                state["session_id"].as_str().unwrap().to_string()
            })
            .collect();
        let loaded = rss_kib(pid).unwrap();
        for id in &ids {
            client.call_ok(2, "session/close", json!({"session_id": id}));
        }
        loaded
    };
    let loaded = round(&mut client);
    let grown = loaded.saturating_sub(idle);
    assert!(grown > 8 * 1024, "300 loaded sessions took only {grown} KiB");
    assert_eq!(info(&daemon)["sessions_loaded"], 0, "{}", info(&daemon));
    eventually("closing the sessions gives memory back", || rss_kib(pid).unwrap() < loaded);
    let closed = rss_kib(pid).unwrap();
    round(&mut client);
    eventually("a second round does not grow the daemon again", || {
        rss_kib(pid).unwrap() < closed + grown / 4
    });
}
