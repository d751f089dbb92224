//! Measurements behind the "Cost per turn as history grows" section of docs/benchmarks.md.
//! Ignored by default (minutes with a 100,000-entry session); run through `scripts/bench.sh`
//! or with
//!
//! ```sh
//! cargo test --release -p rein-testkit --test bench_history_growth -- --ignored --nocapture --test-threads 1
//! ```
//!
//! For sessions of 10, 1,000, 10,000 and 100,000 entries (a large context window is
//! configured so no compaction happens), a warm two-request task (`rein run --session`: the
//! model calls `bash`, then answers) is timed, with the daemon's CPU time per provider
//! request, against a floor measured in the same run: the same two request bodies posted to
//! the same fake provider by a minimal HTTP client, plus one `sh -c true` spawn. Then the
//! 100,000-entry session is opened through the CLI (`rein rpc session/open`) and the daemon's
//! RSS read. Nothing is asserted about speed. `BENCH_SIZES` (comma-separated),
//! `BENCH_ROUNDS` and `BENCH_OPENS` (how many times the largest session is opened, default 5)
//! change what is measured.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use rein_protocol::{EntryKind, SessionEntry};
use rein_testkit::background::BackgroundFake;
use rein_testkit::daemon::DaemonFixture;
use rein_testkit::fake_provider::Reply;
use rein_testkit::process::rss_kib;
use serde_json::{Value, json};
use std::io::Write;
use std::time::{Duration, Instant};

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// The daemon's user plus system CPU time so far.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which may hold spaces) start at its closing parenthesis.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    let per_second = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK).unwrap().unwrap();
    Duration::from_secs_f64(ticks as f64 / per_second as f64)
}

/// Appends `entries` message entries (whole turns) to the session file at `path`, chained
/// after its last entry.
fn grow(path: &str, entries: usize) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut parent = text
        .lines()
        .rev()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|line| line.get("parent_id").is_some())
        .and_then(|entry| entry["id"].as_str().map(str::to_string));
    let mut out =
        std::io::BufWriter::new(std::fs::OpenOptions::new().append(true).open(path).unwrap());
    let mut written = 0;
    for n in 0.. {
        for message in rein_testkit::history::turn(n, "openai-chat", "local") {
            if written == entries {
                out.flush().unwrap();
                return;
            }
            let id = format!("g{written:07}");
            let entry = SessionEntry {
                id: id.clone(),
                parent_id: parent.replace(id),
                timestamp: "2026-12-01T10:00:00Z".into(),
                kind: EntryKind::Message { message: message.into() },
            };
            serde_json::to_writer(&mut out, &entry).unwrap();
            out.write_all(b"\n").unwrap();
            written += 1;
        }
    }
}

/// Posts `body` to the fake provider the way a minimal client would and reads the whole
/// streamed reply.
fn post(base_url: &str, body: &[u8]) {
    let reply = rein_testkit::floor::post(base_url, "/v1/chat/completions", body).unwrap();
    assert!(reply.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&reply));
}

fn task_replies() -> [Reply; 2] {
    [Reply::tool_call("bash", json!({"command": "true"})), Reply::text("ok")]
}

#[test]
#[ignore = "benchmark: minutes with a 100,000-entry session; see docs/benchmarks.md"]
fn bench_turn_cost_and_open_as_history_grows() {
    let sizes: Vec<usize> = std::env::var("BENCH_SIZES")
        .ok()
        .map(|sizes| sizes.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![10, 1_000, 10_000, 100_000]);
    let rounds: usize =
        std::env::var("BENCH_ROUNDS").ok().and_then(|n| n.parse().ok()).unwrap_or(5);
    let open_rounds: usize =
        std::env::var("BENCH_OPENS").ok().and_then(|n| n.parse().ok()).unwrap_or(5).max(1);
    let fake = BackgroundFake::start(Vec::new());
    let config = fake.config(
        "approval_policy = \"yolo\"\n\n[providers.local.models.\"test-model\"]\ncontext_window = 1000000000\nmax_output_tokens = 1000",
    );
    // The model table must follow the provider table it belongs to.
    let config = config.replace("\n\n[retry]", "\n[retry]");
    let mut daemon = DaemonFixture::new();
    std::fs::write(daemon.home().join("config.toml"), &config).unwrap();
    daemon.spawn();
    let pid = daemon.pid().unwrap();
    let project = tempfile::tempdir().unwrap();
    let mut client = daemon.connect();
    println!(
        "| entries | request body | warm task (median) | floor (median) | ratio | daemon CPU per request |"
    );
    println!("| --- | --- | --- | --- | --- | --- |");
    for (i, &size) in sizes.iter().enumerate() {
        let state = client.call_ok(1, "session/create", json!({"cwd": project.path()}));
        let session = state["session_id"].as_str().unwrap().to_string();
        client.call_ok(2, "session/close", json!({"session_id": session}));
        let listed = client.call_ok(3, "session/list", json!({"cwd": project.path()}));
        let path = listed["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["session_id"] == session.as_str())
            .unwrap()["path"]
            .as_str()
            .unwrap()
            .to_string();
        grow(&path, size);

        // One run to load the session and warm everything up.
        for reply in task_replies() {
            fake.push(reply);
        }
        let warm_up = daemon.run_rein(&["run", "--session", &session, "--approve", "yolo", "go"]);
        assert!(warm_up.status.success(), "{warm_up:?}");
        let mut task = Vec::new();
        let mut cpu = Vec::new();
        let mut floor = Vec::new();
        let mut body_bytes = 0;
        for _ in 0..rounds {
            for reply in task_replies() {
                fake.push(reply);
            }
            let seen = fake.requests().len();
            let cpu_before = cpu_time(pid);
            let started = Instant::now();
            let output =
                daemon.run_rein(&["run", "--session", &session, "--approve", "yolo", "go"]);
            task.push(ms(started.elapsed()));
            cpu.push(ms(cpu_time(pid) - cpu_before) / 2.0);
            assert!(output.status.success(), "{output:?}");
            let bodies: Vec<Vec<u8>> = fake.requests()[seen..]
                .iter()
                .map(|request| serde_json::to_vec(&request.body).unwrap())
                .collect();
            assert_eq!(bodies.len(), 2);
            body_bytes = bodies[1].len();
            // The floor: the same two requests and one process spawn, nothing else.
            for reply in task_replies() {
                fake.push(reply);
            }
            let started = Instant::now();
            post(&fake.base_url(), &bodies[0]);
            let spawned = std::process::Command::new("sh").args(["-c", "true"]).status();
            assert!(spawned.unwrap().success());
            post(&fake.base_url(), &bodies[1]);
            floor.push(ms(started.elapsed()));
        }
        let (task, floor, cpu) = (median(task), median(floor), median(cpu));
        println!(
            "| {size} | {:.1} KB | {task:.1} ms | {floor:.1} ms | {:.2}x | {cpu:.1} ms |",
            body_bytes as f64 / 1000.0,
            task / floor
        );

        if i + 1 == sizes.len() {
            // With the task's session loaded: its entries and the history its requests keep
            // encoded.
            println!(
                "\ndaemon RSS with the session loaded after its tasks: {:.1} MiB",
                rss_kib(pid).unwrap() as f64 / 1024.0
            );
            // Open through the CLI, from unloaded.
            client.call_ok(4, "session/close", json!({"session_id": session}));
            let rss_closed = rss_kib(pid).unwrap();
            // What the allocator gives back once the task's buffers are freed.
            std::thread::sleep(Duration::from_secs(2));
            println!(
                "\ndaemon RSS right after closing the session: {:.1} MiB, 2 s later {:.1} MiB",
                rss_closed as f64 / 1024.0,
                rss_kib(pid).unwrap() as f64 / 1024.0
            );
            let rss_before = rss_kib(pid).unwrap();
            let params = json!({"session_id": session}).to_string();
            let mut opens = Vec::new();
            let mut rss_after = 0;
            for _ in 0..open_rounds {
                let started = Instant::now();
                let output = daemon.run_rein(&["rpc", "session/open", &params]);
                opens.push(ms(started.elapsed()));
                assert!(output.status.success(), "{output:?}");
                rss_after = rss_kib(pid).unwrap();
                client.call_ok(5, "session/close", json!({"session_id": session}));
                std::thread::sleep(Duration::from_secs(2));
            }
            let shown: Vec<String> = opens.iter().map(|open| format!("{open:.0}")).collect();
            println!(
                "\nopen of the {size}-entry session through `rein rpc session/open`: median {:.0} \
                 ms of {} ({} ms); daemon RSS {:.1} MiB before, {:.1} MiB with it loaded",
                median(opens),
                shown.len(),
                shown.join(", "),
                rss_before as f64 / 1024.0,
                rss_after as f64 / 1024.0
            );
            println!(
                "daemon RSS after closing it: {:.1} MiB",
                rss_kib(pid).unwrap() as f64 / 1024.0
            );
        } else {
            client.call_ok(4, "session/close", json!({"session_id": session}));
        }
    }
}
