//! The crash campaign: tool-using sessions run through the real `reind` and the fake provider,
//! and the daemon is killed with SIGKILL at random moments (while a reply streams, while a tool
//! runs, while a compaction summarizes, while entries are written), then restarted. After
//! every restart:
//!
//! - every session opens;
//! - every tool call on every session's active path has exactly one result;
//! - no entry that had been acknowledged to a client is missing (acknowledged: the client
//!   received its `entry_appended` event);
//! - a new prompt on the session just interrupted runs to completion.
//!
//! CI runs 5 kills. The long campaign runs the same code with more:
//! `scripts/crash-campaign.sh 200` (it sets `REIN_CRASH_KILLS`; `REIN_CRASH_SEED` replays a
//! run, the seed is printed at the start).

mod stress_support;

use rein_testkit::background::BackgroundFake;
use rein_testkit::connection::{ANSWER_TIMEOUT, RawConnection as Client, event_envelope};
use rein_testkit::daemon::DaemonFixture;
use rein_testkit::fake_provider::Reply;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};
use stress_support::{Rng, assert_calls_answered_once};

/// Kills in the CI version.
const CI_KILLS: usize = 5;
/// Sessions the campaign keeps going at most.
const MAX_SESSIONS: usize = 4;
/// The longest wait before a kill during a run, in milliseconds (a run lasts about 1.5 s).
const MAX_KILL_DELAY_MS: usize = 1500;
/// The longest wait before a kill during a compaction (its one request is shorter).
const MAX_COMPACT_KILL_DELAY_MS: usize = 400;

/// One cycle of the scripted model: a shell call, a file write, then a slowly streamed answer
/// (so a random kill often lands inside each). Any prompt completes within one cycle.
fn cycle() -> Vec<Reply> {
    // Every reply streams slowly, so a compaction's summary request (which takes whichever
    // reply comes next) lasts long enough to be killed too.
    let slow = |reply: Reply| Reply { delay_ms: Some(10), ..reply };
    let bash = slow(Reply::tool_call(
        "bash",
        json!({"command": "sleep 0.15; echo step >> steps.log; cat steps.log | wc -l"}),
    ));
    let write = slow(Reply::tool_call(
        "write",
        json!({"path": "notes/progress.md", "content": "# progress\n\nstill going\n".repeat(20)}),
    ));
    let answer = Reply {
        delay_ms: Some(15),
        delta_size: Some(6),
        ..Reply::text("Done with this step; the log and the notes are up to date. ".repeat(3))
    };
    vec![bash, write, answer]
}

/// What was in flight when the kill came, judged from the events the client saw.
#[derive(Debug, Default)]
struct Phase {
    streaming: bool,
    tools_running: usize,
    compacting: bool,
    run_open: bool,
}

impl Phase {
    fn see(&mut self, event: &Value) {
        match event["kind"].as_str().unwrap_or_default() {
            "agent_start" => self.run_open = true,
            "agent_end" => self.run_open = false,
            "message_start" => self.streaming = event["message"]["role"] == "assistant",
            "message_end" => self.streaming = false,
            "tool_execution_start" => self.tools_running += 1,
            "tool_execution_end" => self.tools_running = self.tools_running.saturating_sub(1),
            "compaction_start" => self.compacting = true,
            "compaction_end" => self.compacting = false,
            _ => {}
        }
    }

    fn name(&self, compact_pending: bool) -> &'static str {
        if self.compacting || compact_pending {
            "compaction"
        } else if self.tools_running > 0 {
            "tool"
        } else if self.streaming {
            "streaming"
        } else if self.run_open {
            "between steps (requests, entry writes)"
        } else {
            "idle (the run not started yet, or over)"
        }
    }
}

/// Entry ids each session's clients were told about, by session.
#[derive(Debug, Default)]
struct Acknowledged(HashMap<String, HashSet<String>>);

impl Acknowledged {
    /// Records an `entry_appended` event; returns the event when the message carried one.
    fn record<'a>(&mut self, message: &'a Value) -> Option<&'a Value> {
        let envelope = event_envelope(message)?;
        let event = &envelope["event"];
        if event["kind"] == "entry_appended" {
            let session = envelope["session_id"].as_str().unwrap_or_default().to_string();
            let id = event["entry"]["id"].as_str().unwrap_or_default().to_string();
            self.0.entry(session).or_default().insert(id);
        }
        Some(event)
    }

    fn count(&self) -> usize {
        self.0.values().map(HashSet::len).sum()
    }
}

fn kills_wanted() -> usize {
    std::env::var("REIN_CRASH_KILLS").ok().and_then(|v| v.parse().ok()).unwrap_or(CI_KILLS)
}

/// Checks every session after a restart; returns how many entries the tree holds in all.
fn check_all_sessions(
    daemon: &DaemonFixture,
    sessions: &[String],
    acknowledged: &Acknowledged,
    round: usize,
) -> usize {
    let mut client = Client::connect_as(daemon.socket(), "checker");
    let mut entries = 0;
    for session in sessions {
        let context = format!("round {round}, session {session}");
        let opened = client.call_next("session/open", json!({"session_id": session}));
        assert!(opened.get("result").is_some(), "{context}: does not open: {opened}");
        let messages = client.call_next_ok("session/messages", json!({"session_id": session}));
        let list = messages["messages"].as_array().cloned().unwrap_or_default();
        assert_calls_answered_once(&list, &context);
        let tree = client.call_next_ok("session/tree", json!({"session_id": session}));
        let ids: HashSet<&str> = tree["entries"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|entry| entry["id"].as_str())
            .collect();
        entries += ids.len();
        for acked in acknowledged.0.get(session).into_iter().flatten() {
            assert!(ids.contains(acked.as_str()), "{context}: acknowledged entry {acked} is lost");
        }
    }
    entries
}

/// Prompts `session` and waits for the run to end; returns its end reason.
fn prompt_to_the_end(
    daemon: &DaemonFixture,
    session: &str,
    acknowledged: &mut Acknowledged,
) -> String {
    let mut client = Client::connect_as(daemon.socket(), "after-restart");
    client.subscribe(session, None);
    client.call_next_ok("session/prompt", json!({"session_id": session, "text": "still there?"}));
    let deadline = Instant::now() + ANSWER_TIMEOUT;
    let mut reason = String::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let message = client
            .next_notification_within(left)
            .unwrap_or_else(|e| panic!("the prompt after a restart never settled: {e:?}"));
        let Some(event) = acknowledged.record(&message) else { continue };
        if event["kind"] == "agent_end" {
            reason = event["reason"].as_str().unwrap_or_default().to_string();
        }
        if event["kind"] == "settled" {
            return reason;
        }
    }
}

#[test]
fn sigkill_at_random_moments_loses_no_acknowledged_entry() {
    let kills = kills_wanted();
    let seed = std::env::var("REIN_CRASH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(Rng::clock_seed);
    println!("crash campaign: {kills} kills, seed {seed}");
    let mut rng = Rng::new(seed);
    let project = tempfile::tempdir().unwrap();
    // Enough replies for every round: each round needs at most two cycles.
    let script: Vec<Reply> = (0..kills * 2 + 4).flat_map(|_| cycle()).collect();
    let fake = BackgroundFake::start(script);
    let mut daemon = fake.daemon("approval_policy = \"yolo\"");
    let mut sessions: Vec<String> = Vec::new();
    let mut acknowledged = Acknowledged::default();
    let mut phases: BTreeMap<&'static str, usize> = BTreeMap::new();
    let started = Instant::now();

    for round in 0..kills {
        let mut client = Client::connect_as(daemon.socket(), "campaign");
        let wants_new = sessions.len() < 2 || rng.below(3) == 0;
        let session = if sessions.len() < MAX_SESSIONS && wants_new {
            let state = client.call_next_ok("session/create", json!({"cwd": project.path()}));
            let id = state["session_id"].as_str().unwrap().to_string();
            sessions.push(id.clone());
            id
        } else {
            sessions[rng.below(sessions.len())].clone()
        };
        client.subscribe(&session, None);
        // Mostly runs; every fourth round (and now and then) a compaction.
        let compact = round % 4 == 3 || (round > 0 && rng.below(6) == 0);
        let request = if compact {
            client.send("session/compact", json!({"session_id": session}))
        } else {
            client.send("session/prompt", json!({"session_id": session, "text": "next step"}))
        };
        let mut compact_pending = compact;
        let mut phase = Phase::default();
        let longest = if compact { MAX_COMPACT_KILL_DELAY_MS } else { MAX_KILL_DELAY_MS };
        let kill_at = Instant::now() + Duration::from_millis(rng.below(longest) as u64);
        loop {
            let left = kill_at.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            match client.next_message(left) {
                Ok(message) => {
                    if message["id"] == json!(request) {
                        compact_pending = false;
                    }
                    if let Some(event) = acknowledged.record(&message) {
                        phase.see(event);
                    }
                }
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => panic!("the daemon hung up before the kill"),
            }
        }
        *phases.entry(phase.name(compact_pending)).or_default() += 1;
        daemon.kill();
        // Whatever reached the client before the kill was acknowledged.
        loop {
            match client.next_message(Duration::from_secs(10)) {
                Ok(message) => {
                    acknowledged.record(&message);
                }
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => panic!("the connection outlived the daemon"),
            }
        }
        daemon.spawn();
        check_all_sessions(&daemon, &sessions, &acknowledged, round);
        let reason = prompt_to_the_end(&daemon, &session, &mut acknowledged);
        assert_eq!(reason, "completed", "round {round}: the prompt after the restart failed");
    }

    let entries = check_all_sessions(&daemon, &sessions, &acknowledged, kills);
    let summary: Vec<String> = phases.iter().map(|(name, n)| format!("{name}: {n}")).collect();
    println!(
        "crash campaign done: {kills} kills in {:.1}s, {} sessions, {} entries, {} acknowledged \
         entries all present; kills by phase: {}",
        started.elapsed().as_secs_f64(),
        sessions.len(),
        entries,
        acknowledged.count(),
        summary.join(", ")
    );
}
