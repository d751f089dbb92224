//! The load test: many sessions running at once against the fake provider, many clients
//! attached across them, for a fixed number of runs per session. Checked: every client
//! receives every event of its session, in order (seq contiguous, no `lagged`, the same stream
//! as every other client of that session), every run completes, and the daemon's memory stays
//! bounded (its RSS from `/proc/PID/status` is read before and after each phase of the runs;
//! a later phase may not grow it more than the first). Throughput and latency percentiles are printed for `docs/benchmarks.md`.
//!
//! CI runs 5 sessions, 20 clients, 2 runs each. The long version runs the same code:
//! `scripts/load-test.sh` (50 sessions, 200 clients; `REIN_LOAD_SESSIONS`, `REIN_LOAD_CLIENTS`,
//! `REIN_LOAD_RUNS` and `REIN_LOAD_PHASES` set the sizes).

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use rein_protocol::clock::now_ms;
use rein_testkit::background::BackgroundFake;
use rein_testkit::connection::{ANSWER_TIMEOUT, RawConnection as Client, event_envelope};
use rein_testkit::daemon::DaemonFixture;
use rein_testkit::fake_provider::Reply;
use serde_json::json;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// The sizes of one load run.
#[derive(Debug, Clone, Copy)]
struct Load {
    sessions: usize,
    clients: usize,
    runs: usize,
    /// The runs are split into this many phases; the daemon's RSS is read after each.
    phases: usize,
}

impl Load {
    fn from_env() -> Self {
        let read = |name: &str, default: usize| {
            std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
        };
        let load = Self {
            sessions: read("REIN_LOAD_SESSIONS", 5),
            clients: read("REIN_LOAD_CLIENTS", 20),
            runs: read("REIN_LOAD_RUNS", 2),
            phases: read("REIN_LOAD_PHASES", 2),
        };
        assert!(load.sessions > 0 && load.clients >= load.sessions, "{load:?}");
        assert!(load.phases > 0 && load.runs >= load.phases, "{load:?}");
        load
    }
}

/// What one client saw.
#[derive(Debug, Default)]
struct Seen {
    session: String,
    /// (seq, kind) of every event, in arrival order.
    events: Vec<(u64, String)>,
    /// Receive time minus the daemon's emit time, per event, in milliseconds.
    delivery_ms: Vec<i64>,
    /// For the driving client: prompt sent to `agent_start` received, per run.
    first_event: Vec<Duration>,
    /// For the driving client: the `session/prompt` round trip, per run.
    prompt_rtt: Vec<Duration>,
    /// End reasons of the runs.
    reasons: Vec<String>,
    /// Items other than events (`lagged`, `resync_required`).
    other_items: Vec<String>,
}

/// The daemon's resident and peak memory in KiB (`VmRSS`, `VmHWM`).
fn memory_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|line| line.starts_with(name))
            .and_then(|line| line.split_whitespace().nth(1))
            .and_then(|kib| kib.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Runs `runs` prompts on each session with all clients attached; returns what each saw.
fn drive(
    daemon: &DaemonFixture,
    sessions: &[String],
    clients_per_session: &[usize],
    runs: usize,
) -> Vec<Seen> {
    let total: usize = clients_per_session.iter().sum();
    let ready = Arc::new(Barrier::new(total));
    let mut threads = Vec::new();
    for (session, &count) in sessions.iter().zip(clients_per_session) {
        for index in 0..count {
            let mut client = Client::connect_as(daemon.socket(), &format!("load-{index}"));
            client.subscribe(session, None);
            let ready = Arc::clone(&ready);
            let session = session.clone();
            let driver = index == 0;
            threads.push(std::thread::spawn(move || {
                ready.wait();
                follow(client, session, driver, runs)
            }));
        }
    }
    threads.into_iter().map(|t| t.join().unwrap()).collect()
}

/// One client's life: read the session's events until `runs` runs settled; the driver also
/// sends each prompt once the previous run settled.
fn follow(mut client: Client, session: String, driver: bool, runs: usize) -> Seen {
    let mut seen = Seen { session: session.clone(), ..Seen::default() };
    let mut prompted_at = None;
    while seen.reasons.len() < runs || seen.events.last().is_none_or(|(_, k)| k != "settled") {
        if driver && prompted_at.is_none() && seen.reasons.len() < runs {
            let sent = Instant::now();
            client.call_next_ok("session/prompt", json!({"session_id": session, "text": "go"}));
            seen.prompt_rtt.push(sent.elapsed());
            prompted_at = Some(sent);
        }
        let message = client
            .next_notification_within(ANSWER_TIMEOUT)
            .unwrap_or_else(|e| panic!("{session}: no event for a long time: {e:?}"));
        let Some(envelope) = event_envelope(&message) else {
            let item = &message["params"]["result"];
            seen.other_items.push(item["type"].as_str().unwrap_or("?").to_string());
            break;
        };
        seen.delivery_ms.push(now_ms() - envelope["timestamp"].as_i64().unwrap_or(0));
        let kind = envelope["event"]["kind"].as_str().unwrap_or("?").to_string();
        match kind.as_str() {
            "agent_start" => {
                if let Some(sent) = prompted_at.filter(|_| driver) {
                    seen.first_event.push(sent.elapsed());
                }
            }
            "agent_end" => {
                seen.reasons.push(envelope["event"]["reason"].as_str().unwrap_or("?").to_string())
            }
            "settled" => prompted_at = None,
            _ => {}
        }
        seen.events.push((envelope["seq"].as_u64().unwrap_or(0), kind));
    }
    seen
}

/// The value at quantile `q` (0 to 1) of sorted `values`.
fn quantile<T: Copy>(values: &[T], q: f64) -> T {
    let index = ((values.len() - 1) as f64 * q).round() as usize;
    values[index]
}

fn durations_line(name: &str, values: &mut [Duration]) -> String {
    values.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    format!(
        "{name}: p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} samples)",
        ms(quantile(values, 0.5)),
        ms(quantile(values, 0.9)),
        ms(quantile(values, 0.99)),
        ms(quantile(values, 1.0)),
        values.len()
    )
}

/// Checks one half of the runs; returns the number of events delivered.
fn check(seen: &[Seen], runs: usize) -> usize {
    let mut delivered = 0;
    for client in seen {
        let context = format!("session {}", client.session);
        assert!(client.other_items.is_empty(), "{context}: {:?}", client.other_items);
        assert_eq!(client.reasons.len(), runs, "{context}: runs seen");
        assert!(client.reasons.iter().all(|r| r == "completed"), "{context}: {:?}", client.reasons);
        let seqs: Vec<u64> = client.events.iter().map(|(seq, _)| *seq).collect();
        assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{context}: seq gap in {seqs:?}");
        delivered += client.events.len();
        // Every client of a session saw exactly the same stream.
        let first = seen.iter().find(|other| other.session == client.session).unwrap();
        assert_eq!(client.events, first.events, "{context}: two clients saw different streams");
    }
    delivered
}

#[test]
fn every_client_gets_every_event_of_its_session_in_order() {
    let load = Load::from_env();
    // Each run: a shell call, then an answer. Runs of different sessions take replies in
    // whatever order their requests arrive, and each run ends at the first answer it gets,
    // so one answer per run is enough for every run to complete.
    let mut script = Vec::new();
    for _ in 0..load.sessions * load.runs * 2 {
        script.push(Reply::tool_call("bash", json!({"command": "echo working"})));
        script.push(Reply::text("finished this run; all good"));
    }
    let fake = BackgroundFake::start(script);
    let mut daemon = fake.daemon("approval_policy = \"yolo\"");
    let pid = daemon.child_mut().map(|child| child.id()).unwrap();
    let project = tempfile::tempdir().unwrap();

    let mut creator = Client::connect_as(daemon.socket(), "creator");
    let sessions: Vec<String> = (0..load.sessions)
        .map(|_| {
            let state = creator.call_next_ok("session/create", json!({"cwd": project.path()}));
            state["session_id"].as_str().unwrap().to_string()
        })
        .collect();
    drop(creator);
    let clients_per_session: Vec<usize> = (0..load.sessions)
        .map(|i| load.clients / load.sessions + usize::from(i < load.clients % load.sessions))
        .collect();
    let (rss_before, _) = memory_kib(pid);

    // The runs in phases with the same numbers of clients: once the sessions' replay buffers
    // are full, memory should stop growing with the number of runs.
    let started = Instant::now();
    let mut seen = Vec::new();
    let mut delivered = 0;
    let mut rss = vec![rss_before];
    for phase in 0..load.phases {
        let runs = load.runs / load.phases + usize::from(phase < load.runs % load.phases);
        let phase_seen = drive(&daemon, &sessions, &clients_per_session, runs);
        delivered += check(&phase_seen, runs);
        seen.extend(phase_seen);
        rss.push(memory_kib(pid).0);
    }
    let elapsed = started.elapsed();
    let (rss_after, rss_peak) = memory_kib(pid);

    let total_runs = load.sessions * load.runs;
    let mut first_event: Vec<Duration> =
        seen.iter().flat_map(|s| s.first_event.iter().copied()).collect();
    let mut prompt_rtt: Vec<Duration> =
        seen.iter().flat_map(|s| s.prompt_rtt.iter().copied()).collect();
    let mut delivery: Vec<i64> = seen.iter().flat_map(|s| s.delivery_ms.iter().copied()).collect();
    delivery.sort_unstable();
    println!(
        "load: {} sessions, {} clients, {} runs each ({total_runs} runs) in {:.2}s",
        load.sessions,
        load.clients,
        load.runs,
        elapsed.as_secs_f64()
    );
    println!(
        "throughput: {:.1} runs/s, {:.0} events delivered/s ({delivered} events)",
        total_runs as f64 / elapsed.as_secs_f64(),
        delivered as f64 / elapsed.as_secs_f64()
    );
    println!("{}", durations_line("prompt round trip", &mut prompt_rtt));
    println!("{}", durations_line("prompt to agent_start", &mut first_event));
    println!(
        "event delivery (emit to client, ms resolution): p50 {} ms, p90 {} ms, p99 {} ms, \
         max {} ms",
        quantile(&delivery, 0.5),
        quantile(&delivery, 0.9),
        quantile(&delivery, 0.99),
        quantile(&delivery, 1.0)
    );
    let steps: Vec<String> = rss.iter().map(|kib| format!("{} MiB", kib / 1024)).collect();
    println!(
        "daemon RSS before and after each of {} phases: {}; peak {} MiB",
        load.phases,
        steps.join(" -> "),
        rss_peak / 1024
    );
    assert_eq!(first_event.len(), total_runs, "every run started");
    // Bounded: a later phase (same sessions, same clients, same number of runs) may not grow
    // the daemon more than the first one did, plus a margin for allocator slack.
    let growth: Vec<u64> = rss.windows(2).map(|w| w[1].saturating_sub(w[0])).collect();
    let first_growth = growth.first().copied().unwrap_or(0);
    let last_growth = growth.last().copied().unwrap_or(0);
    assert!(
        last_growth <= first_growth + 32 * 1024,
        "daemon memory grows faster over time: {rss:?} KiB (now {rss_after} KiB)"
    );
}
