//! Measurements behind the "Daemon memory and descriptor bounds" section of
//! docs/benchmarks.md. Ignored by default (they take minutes); run with
//!
//! ```sh
//! cargo test --release -p rein-testkit --test bench_daemon_bounds -- --ignored --nocapture --test-threads 1
//! ```
//!
//! Each prints its figures; only generous bounds are asserted (the daemon must stay bounded,
//! not fast). `BENCH_RUNS` sets the number of `rein run`s (default 10,000).

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use rein_testkit::background::BackgroundFake;
use rein_testkit::daemon::DaemonFixture;
use rein_testkit::fake_provider::Reply;
use rein_testkit::process::{open_fds, rss_kib};
use serde_json::json;
use std::io::{ErrorKind, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn connections(daemon: &DaemonFixture) -> u64 {
    daemon.connect().call_ok(1, "daemon/info", json!({}))["connections"].as_u64().unwrap()
}

fn settle(daemon: &DaemonFixture) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while connections(daemon) > 1 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(500));
}

#[test]
#[ignore = "benchmark: minutes of runs; see docs/benchmarks.md"]
fn bench_fds_and_rss_over_many_runs() {
    let runs: usize =
        std::env::var("BENCH_RUNS").ok().and_then(|n| n.parse().ok()).unwrap_or(10_000);
    let fake = BackgroundFake::start(Vec::new());
    let mut daemon = DaemonFixture::new();
    // Each run makes a session of its own, unloaded a second after its run.
    let config = fake.config("approval_policy = \"yolo\"\n[sessions]\nidle_unload_secs = 1");
    std::fs::write(daemon.home().join("config.toml"), config).unwrap();
    daemon.spawn();
    let pid = daemon.pid().unwrap();
    let project = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let mut samples = Vec::new();
    for n in 0..runs {
        fake.push(Reply::text("ok"));
        let output = daemon
            .rein()
            .current_dir(project.path())
            .args(["run", "hi"])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(output.status.success(), "run {n}: {output:?}");
        if n == 10 || (n + 1) % (runs / 10).max(1) == 0 {
            let sample = (n + 1, open_fds(pid).unwrap(), rss_kib(pid).unwrap());
            println!(
                "after {:>6} runs: {:>4} fds, {:>7.1} MiB RSS",
                sample.0,
                sample.1,
                mib(sample.2)
            );
            samples.push(sample);
        }
    }
    settle(&daemon);
    // Idle again: every run's session unloaded.
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let info = daemon.connect().call_ok(1, "daemon/info", json!({}));
        if info["sessions_loaded"] == 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let (end_fds, end_rss) = (open_fds(pid).unwrap(), rss_kib(pid).unwrap());
    println!(
        "runs: {runs} in {:?}; idle at the end: {end_fds} fds, {:.1} MiB RSS",
        started.elapsed(),
        mib(end_rss)
    );
    let (_, first_fds, _) = samples[0];
    println!("connections at the end: {}", connections(&daemon));
    assert!(end_fds <= first_fds + 4, "descriptors grew from {first_fds} to {end_fds}");
    assert!(end_rss < 300 * 1024, "RSS reached {} MiB", mib(end_rss));
}

#[test]
#[ignore = "benchmark; see docs/benchmarks.md"]
fn bench_rss_under_a_pipelining_client_that_never_reads() {
    let daemon = DaemonFixture::start();
    let pid = daemon.pid().unwrap();
    let idle = rss_kib(pid).unwrap();
    let mut stream = UnixStream::connect(daemon.socket()).unwrap();
    stream.set_nonblocking(true).unwrap();
    let batch = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"daemon/info\"}\n".repeat(10_000);
    let mut written = 0usize;
    let mut stalled: Option<Instant> = None;
    let mut peak = idle;
    loop {
        match stream.write(&batch) {
            Ok(n) => {
                written += n;
                stalled = None;
            }
            Err(error) if error.kind() == ErrorKind::WouldBlock => {
                if stalled.get_or_insert_with(Instant::now).elapsed() > Duration::from_secs(3) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(error) => panic!("{error}"),
        }
        peak = peak.max(rss_kib(pid).unwrap());
    }
    drop(stream);
    settle(&daemon);
    let after = rss_kib(pid).unwrap();
    println!(
        "pipelining client: {written} bytes taken before the daemon stopped reading; RSS idle \
         {:.1} MiB, peak {:.1} MiB, after it left {:.1} MiB",
        mib(idle),
        mib(peak),
        mib(after)
    );
    assert!(peak < idle + 100 * 1024);
}

#[test]
#[ignore = "benchmark; see docs/benchmarks.md"]
fn bench_rss_under_partial_line_clients() {
    let daemon = DaemonFixture::start();
    let pid = daemon.pid().unwrap();
    let idle = rss_kib(pid).unwrap();
    let chunk = vec![b'x'; 1024 * 1024];
    let mut clients = Vec::new();
    let mut refused = 0;
    for _ in 0..40 {
        let mut stream = UnixStream::connect(daemon.socket()).unwrap();
        stream.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut sent = 0;
        while sent < 15 {
            if stream.write_all(&chunk).is_err() {
                break;
            }
            sent += 1;
        }
        if sent < 15 {
            refused += 1;
        }
        clients.push(stream);
    }
    let peak = rss_kib(pid).unwrap();
    // Wait out the idle limit (10 s by default) so every half-line connection is closed.
    std::thread::sleep(Duration::from_secs(12));
    drop(clients);
    settle(&daemon);
    // Give the allocator's purging (10 s decay) time to return the freed pages.
    std::thread::sleep(Duration::from_secs(12));
    let after = rss_kib(pid).unwrap();
    println!(
        "40 clients x 15 MiB without newline: {refused} cut off by the input budget; RSS idle \
         {:.1} MiB, with them {:.1} MiB, after {:.1} MiB",
        mib(idle),
        mib(peak),
        mib(after)
    );
    assert!(peak < idle + 200 * 1024);
}

#[test]
#[ignore = "benchmark; see docs/benchmarks.md"]
fn bench_rss_per_idle_session_per_buffered_event_and_after_closing() {
    let sessions = 500;
    let project = tempfile::tempdir().unwrap();
    // Ten sessions fill their replay buffers with about 5,000 small events each.
    let mut replies = Vec::new();
    for _ in 0..10 {
        let mut reply = Reply::text("x".repeat(5_000));
        reply.delta_size = Some(1);
        replies.push(reply);
    }
    let fake = BackgroundFake::start(replies);
    let daemon = fake.daemon("approval_policy = \"yolo\"");
    let pid = daemon.pid().unwrap();
    let mut client = daemon.connect();
    let idle = rss_kib(pid).unwrap();
    let mut ids = Vec::new();
    for _ in 0..sessions {
        let state = client.call_ok(1, "session/create", json!({"cwd": project.path()}));
        ids.push(state["session_id"].as_str().unwrap().to_string());
    }
    let loaded = rss_kib(pid).unwrap();
    let mut buffered_events = 0u64;
    let before_events = rss_kib(pid).unwrap();
    for id in &ids[..10] {
        client.call_ok(2, "session/subscribe", json!({"session_id": id}));
        client.call_ok(3, "session/prompt", json!({"session_id": id, "text": "talk"}));
        let events = client.events_until("settled");
        buffered_events += events.len().min(4096) as u64;
    }
    let with_events = rss_kib(pid).unwrap();
    for id in &ids {
        client.call_ok(5, "session/close", json!({"session_id": id}));
    }
    std::thread::sleep(Duration::from_secs(1));
    let closed = rss_kib(pid).unwrap();
    // A second round: if closed sessions leaked, RSS would grow by as much again.
    for _ in 0..sessions {
        let state = client.call_ok(6, "session/create", json!({"cwd": project.path()}));
        let id = state["session_id"].as_str().unwrap().to_string();
        client.call_ok(7, "session/close", json!({"session_id": id}));
    }
    let second_round = rss_kib(pid).unwrap();
    std::thread::sleep(Duration::from_secs(15));
    let later = rss_kib(pid).unwrap();
    println!(
        "after a second round of {sessions} sessions opened and closed: {:.1} MiB, 15 s later \
         {:.1} MiB",
        mib(second_round),
        mib(later)
    );
    println!(
        "RSS idle {:.1} MiB; {sessions} idle sessions {:.1} MiB ({:.1} KiB each); \
         {buffered_events} buffered events {:.1} MiB more ({:.0} bytes each); after closing \
         all {:.1} MiB",
        mib(idle),
        mib(loaded),
        (loaded.saturating_sub(idle)) as f64 / sessions as f64,
        mib(with_events.saturating_sub(before_events)),
        (with_events.saturating_sub(before_events) * 1024) as f64 / buffered_events as f64,
        mib(closed)
    );
}
