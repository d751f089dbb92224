//! End-to-end: outcome trust with the real `reind` and `rein` and the scripted fake provider.
//! `rein run --verify` ends `verified` only once the check passes (exit 0) and exits 7 when the
//! model never makes it pass; `rein undo` puts back what a turn's bash command rewrote,
//! created and deleted, in a project that is not a git repository; `rein diff` shows it.

mod cli_support;

use cli_support::{CliEnv, assert_exit, session_id, stderr, stdout};
use rein_testkit::fake_provider::Reply;
use serde_json::{Value, json};

/// Passes once `fixed.txt` holds exactly the line `ok`.
const CHECK: &str = "grep -qx ok fixed.txt || { echo 'fixed.txt is not ok yet'; exit 1; }";

fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
        .collect()
}

fn events_of_kind<'a>(lines: &'a [Value], kind: &str) -> Vec<&'a Value> {
    lines.iter().filter(|line| line["event"]["kind"] == kind).map(|line| &line["event"]).collect()
}

#[test]
fn verify_ends_verified_only_once_the_check_passes_and_the_trajectory_shows_each_round() {
    let env = CliEnv::start(vec![
        Reply::text("I am done."),
        Reply::tool_call("write", json!({"path": "fixed.txt", "content": "ok\n"})),
        Reply::text("Fixed for real."),
    ]);
    std::fs::write(env.project.path().join("fixed.txt"), "broken\n").unwrap();
    let output = env.run(&["run", "--json", "--approve", "yolo", "--verify", CHECK, "fix it"]);
    assert_exit(&output, 0);
    let lines = json_lines(&stdout(&output));
    let finished = events_of_kind(&lines, "verify_finished");
    assert_eq!(finished.len(), 2, "{lines:?}");
    assert_eq!(finished[0]["passed"], false);
    assert_eq!(finished[0]["checks"][0]["exit_code"], 1);
    assert_eq!(finished[1]["passed"], true);
    assert_eq!(events_of_kind(&lines, "verify_started")[0]["max_rounds"], 2);
    let end = events_of_kind(&lines, "agent_end");
    assert_eq!(end[0]["reason"], "completed");
    assert_eq!(end[0]["outcome"], "verified");

    // The trajectory records each round with its check, exit code, duration and output.
    let id = session_id(&stderr(&output));
    let exported = env.run(&["export", "--format", "jsonl", &id]);
    assert_exit(&exported, 0);
    let trajectory = json_lines(&stdout(&exported));
    let rounds: Vec<&Value> = trajectory.iter().filter(|l| l["type"] == "verification").collect();
    assert_eq!(rounds.len(), 2);
    assert_eq!(rounds[0]["checks"][0]["command"], CHECK);
    assert!(rounds[0]["checks"][0]["duration_ms"].is_u64());
    assert!(
        rounds[0]["checks"][0]["output_tail"].as_str().unwrap().contains("not ok yet"),
        "{:?}",
        rounds[0]
    );
    assert_eq!(rounds[1]["passed"], true);
}

#[test]
fn a_check_that_never_passes_exits_7() {
    let env = CliEnv::start(vec![Reply::text("Done."), Reply::text("Still done.")]);
    std::fs::write(env.project.path().join("fixed.txt"), "broken\n").unwrap();
    let output = env.run(&["run", "--approve", "yolo", "--verify", CHECK, "fix it"]);
    assert_exit(&output, 7);
    let err = stderr(&output);
    assert!(err.contains("outcome: verify_failed"), "{err}");
    assert!(err.contains("not ok yet"), "{err}");
    assert_eq!(env.requests().len(), 2, "max_rounds defaults to 2");
}

#[test]
fn undo_restores_what_a_bash_turn_rewrote_created_and_deleted() {
    let env = CliEnv::start(vec![
        Reply::tool_call(
            "bash",
            json!({"command": "echo rewritten > main.txt && rm old.txt && mkdir -p out && echo new > out/new.txt"}),
        ),
        Reply::text("Reorganized."),
    ]);
    let dir = env.project.path();
    std::fs::write(dir.join("main.txt"), "original\n").unwrap();
    std::fs::write(dir.join("old.txt"), "keep me\n").unwrap();
    let output = env.run(&["run", "--approve", "yolo", "reorganize"]);
    assert_exit(&output, 0);
    assert!(!dir.join("old.txt").exists());

    let diff = env.run(&["diff"]);
    assert_exit(&diff, 0);
    let text = stdout(&diff);
    assert!(text.contains("D old.txt"), "{text}");
    assert!(text.contains("A out/new.txt"), "{text}");
    assert!(text.contains("M main.txt"), "{text}");
    assert!(text.contains("-original\n+rewritten"), "{text}");

    // Another client watching the session sees the undo.
    let id = session_id(&stderr(&output));
    let mut watcher = env.daemon.connect();
    watcher.call_ok(0, "initialize", json!({"client_name": "watcher", "protocol_version": "1.0"}));
    watcher.call_ok(1, "session/subscribe", json!({"session_id": id}));

    let undo = env.run(&["undo", "--json"]);
    assert_exit(&undo, 0);
    let seen = watcher.events_until("undo_applied");
    let applied = &seen.last().unwrap()["event"];
    assert_eq!(applied["turn"], 1);
    assert_eq!(applied["requested_by"], "rein");
    assert_eq!(applied["removed"], json!(["out/new.txt"]));
    let result: Value = serde_json::from_str(stdout(&undo).trim()).unwrap();
    assert_eq!(result["turn"], 1);
    assert_eq!(result["removed"], json!(["out/new.txt"]));
    assert_eq!(std::fs::read_to_string(dir.join("main.txt")).unwrap(), "original\n");
    assert_eq!(std::fs::read_to_string(dir.join("old.txt")).unwrap(), "keep me\n");
    assert!(!dir.join("out").exists());
    assert!(!dir.join(".git").exists(), "the project stays a plain directory");
}

#[test]
fn undo_names_files_changed_outside_rein_and_force_overwrites_them() {
    let env = CliEnv::start(vec![
        Reply::tool_call("write", json!({"path": "a.txt", "content": "by rein\n"})),
        Reply::text("Wrote it."),
    ]);
    let dir = env.project.path();
    std::fs::write(dir.join("a.txt"), "before\n").unwrap();
    let output = env.run(&["run", "--approve", "yolo", "write a"]);
    assert_exit(&output, 0);
    let id = session_id(&stderr(&output));
    std::fs::write(dir.join("a.txt"), "mine\n").unwrap();

    let refused = env.run(&["undo", &id, "--to", "1"]);
    assert_exit(&refused, 1);
    assert!(stderr(&refused).contains("a.txt"), "{}", stderr(&refused));
    assert_eq!(std::fs::read_to_string(dir.join("a.txt")).unwrap(), "mine\n");

    let forced = env.run(&["undo", &id, "--to", "1", "--force"]);
    assert_exit(&forced, 0);
    assert_eq!(std::fs::read_to_string(dir.join("a.txt")).unwrap(), "before\n");
}
