//! Daemon benchmarks: `cargo bench -p rein-testkit --bench daemon`.
//!
//! Drives the real `reind` (built in the bench profile's sibling debug/release directory by the
//! fixture) over raw socket connections, against the fake provider on 127.0.0.1, and prints a
//! Markdown table for `docs/benchmarks.md`. Numbers, not assertions: the machine is noisy.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a bench: failing loudly is fine

use rein_testkit::background::BackgroundFake;
use rein_testkit::daemon::{DaemonFixture, RawConnection};
use rein_testkit::fake_provider::Reply;
use serde_json::json;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn micros(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|line| line.starts_with("VmRSS:"))
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|value| value.parse().ok())
        .unwrap_or(0)
}

fn client(daemon: &DaemonFixture) -> RawConnection {
    let mut connection = daemon.connect();
    connection.call_ok(0, "initialize", json!({"client_name": "bench", "protocol_version": "1.0"}));
    connection
}

fn main() {
    let fake = BackgroundFake::start(vec![]);
    let mut daemon = fake.daemon("approval_policy = \"yolo\"");
    let pid = daemon.child_mut().unwrap().id();
    let project = tempfile::tempdir().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let idle_rss = rss_kib(pid);

    // Round trip of daemon/info.
    let mut connection = client(&daemon);
    for i in 0..200 {
        connection.call_ok(i, "daemon/info", json!({}));
    }
    let mut round_trips = Vec::new();
    for i in 0..5000 {
        let start = Instant::now();
        connection.call_ok(i, "daemon/info", json!({}));
        round_trips.push(start.elapsed());
    }
    round_trips.sort();

    // Prompt to first event, and to the first streamed text.
    let session =
        connection.call_ok(1, "session/create", json!({"cwd": project.path()}))["session_id"]
            .as_str()
            .unwrap()
            .to_string();
    connection.call_ok(2, "session/subscribe", json!({"session_id": session}));
    let mut to_first_event = Vec::new();
    let mut to_first_text = Vec::new();
    for i in 0..100 {
        fake.push(Reply::text("hello there"));
        let start = Instant::now();
        connection.call_ok(100 + i, "session/prompt", json!({"session_id": session, "text": "hi"}));
        let mut first_event = None;
        loop {
            let item = connection.next_session_item();
            first_event.get_or_insert_with(|| start.elapsed());
            if item["event"]["kind"] == "message_update" && to_first_text.len() == i as usize {
                to_first_text.push(start.elapsed());
            }
            if item["event"]["kind"] == "settled" {
                break;
            }
        }
        to_first_event.push(first_event.unwrap());
    }
    to_first_event.sort();
    to_first_text.sort();

    // Delivery to 100 subscribers of one session.
    let subscribers = 100;
    let mut threads = Vec::new();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    for _ in 0..subscribers {
        let mut watcher = client(&daemon);
        watcher.call_ok(1, "session/subscribe", json!({"session_id": session}));
        let ready = ready_tx.clone();
        threads.push(std::thread::spawn(move || {
            ready.send(()).unwrap();
            let mut latencies = Vec::new();
            loop {
                let item = watcher.next_session_item();
                let now_ms =
                    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs_f64() * 1e3;
                let sent_ms = item["timestamp"].as_f64().unwrap_or(now_ms);
                latencies.push(Duration::from_secs_f64(((now_ms - sent_ms).max(0.0)) / 1e3));
                if item["event"]["kind"] == "settled" {
                    return latencies;
                }
            }
        }));
    }
    for _ in 0..subscribers {
        ready_rx.recv().unwrap();
    }
    let mut reply = Reply::text("y".repeat(2000));
    reply.delta_size = Some(10);
    fake.push(reply);
    let start = Instant::now();
    connection.call_ok(500, "session/prompt", json!({"session_id": session, "text": "fan out"}));
    let mut delivery = Vec::new();
    let mut events_per_client = 0;
    for thread in threads {
        let latencies = thread.join().unwrap();
        events_per_client = latencies.len();
        delivery.extend(latencies);
    }
    let fan_out_wall = start.elapsed();
    delivery.sort();

    // Memory with 100 loaded sessions.
    for i in 0..100 {
        connection.call_ok(1000 + i, "session/create", json!({"cwd": project.path()}));
    }
    std::thread::sleep(Duration::from_millis(300));
    let loaded_rss = rss_kib(pid);

    println!("| measure | result |");
    println!("| --- | --- |");
    println!("| `daemon/info` round trip p50 | {} |", micros(percentile(&round_trips, 0.5)));
    println!("| `daemon/info` round trip p99 | {} |", micros(percentile(&round_trips, 0.99)));
    println!(
        "| prompt → first event (p50 / p99) | {} / {} |",
        micros(percentile(&to_first_event, 0.5)),
        micros(percentile(&to_first_event, 0.99))
    );
    println!(
        "| prompt → first streamed text, provider request included (p50 / p99) | {} / {} |",
        micros(percentile(&to_first_text, 0.5)),
        micros(percentile(&to_first_text, 0.99))
    );
    println!(
        "| 100 subscribers × {events_per_client} events: wall time | {:.1} ms |",
        fan_out_wall.as_secs_f64() * 1e3
    );
    println!(
        "| 100 subscribers: delivery latency p50 / p99 (ms clock) | {:.1} ms / {:.1} ms |",
        percentile(&delivery, 0.5).as_secs_f64() * 1e3,
        percentile(&delivery, 0.99).as_secs_f64() * 1e3
    );
    println!("| daemon RSS idle | {:.1} MiB |", idle_rss as f64 / 1024.0);
    println!("| daemon RSS with 101 loaded sessions | {:.1} MiB |", loaded_rss as f64 / 1024.0);
    daemon.kill();
}
