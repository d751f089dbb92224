//! End-to-end: the session commands of `rein` (`sessions`, `tree`, `label`, `branch`,
//! `export`, `compact`, `steer`, `follow-up`, `cancel`, `trust`, `models`, `completions`),
//! each in text and `--json`.

mod cli_support;

use cli_support::{CliEnv, assert_exit, path_str, session_id, stderr, stdout};
use rein_testkit::fake_provider::Reply;
use serde_json::{Value, json};

fn json_out(output: &std::process::Output) -> Value {
    assert_exit(output, 0);
    serde_json::from_str(stdout(output).trim())
        .unwrap_or_else(|e| panic!("{e}: {}", stdout(output)))
}

/// A session with one finished prompt; returns its id.
fn one_run(env: &CliEnv, prompt: &str) -> String {
    let output = env.run(&["run", "--approve", "yolo", prompt]);
    assert_exit(&output, 0);
    session_id(&stderr(&output))
}

#[test]
fn sessions_lists_the_directory_and_all() {
    let env = CliEnv::start(vec![Reply::text("one")]);
    let id = one_run(&env, "the first prompt");
    let text = stdout(&env.run(&["sessions"]));
    assert!(text.contains(&id) && text.contains("the first prompt"), "{text}");
    let listed = json_out(&env.run(&["sessions", "--json"]));
    assert_eq!(listed["sessions"][0]["session_id"], id.as_str());
    // From another directory only --all shows it.
    let elsewhere = tempfile::tempdir().unwrap();
    let output = env.rein().current_dir(elsewhere.path()).args(["sessions"]).output().unwrap();
    assert!(!stdout(&output).contains(&id));
    let output =
        env.rein().current_dir(elsewhere.path()).args(["sessions", "--all"]).output().unwrap();
    assert!(stdout(&output).contains(&id));
}

#[test]
fn tree_label_branch_and_export() {
    let env = CliEnv::start(vec![Reply::text("answer one"), Reply::text("answer two")]);
    let id = one_run(&env, "question one");
    let again = env.run(&["run", "--session", &id, "question two"]);
    assert_exit(&again, 0);

    let tree = json_out(&env.run(&["tree", &id, "--json"]));
    let entries = tree["entries"].as_array().unwrap();
    let first_user =
        entries.iter().find(|e| e["type"] == "message" && e["message"]["role"] == "user").unwrap()
            ["id"]
            .as_str()
            .unwrap()
            .to_string();
    let text = stdout(&env.run(&["tree", &id]));
    assert!(text.contains("user: question one") && text.contains("← leaf"), "{text}");

    assert_exit(&env.run(&["label", &id, &first_user, "start here"]), 0);
    let text = stdout(&env.run(&["tree", &id]));
    assert!(text.contains("[start here]"), "{text}");

    let branched = json_out(&env.run(&["branch", &id, &first_user, "--json"]));
    assert_eq!(branched["leaf_id"], first_user.as_str());
    let messages = env.messages(&id);
    assert_eq!(messages.len(), 1, "{messages:?}");

    let markdown = stdout(&env.run(&["export", &id]));
    assert!(markdown.contains("question one"), "{markdown}");
    let file = env.project.path().join("out.jsonl");
    let output = env.run(&["export", &id, "--format", "jsonl", "-o", &path_str(&file)]);
    assert_exit(&output, 0);
    let written = std::fs::read_to_string(&file).unwrap();
    for line in written.lines() {
        serde_json::from_str::<Value>(line).unwrap();
    }
    assert!(written.contains("question one"));
    let exported = json_out(&env.run(&["export", &id, "--json"]));
    assert!(exported["content"].as_str().unwrap().contains("question one"));
}

#[test]
fn branch_with_summarize_records_the_abandoned_path() {
    let env = CliEnv::start(vec![
        Reply::text("answer one"),
        Reply::text("answer two"),
        Reply::text("SUMMARY of the abandoned path."),
    ]);
    let id = one_run(&env, "question one");
    assert_exit(&env.run(&["run", "--session", &id, "question two"]), 0);
    let tree = json_out(&env.run(&["tree", &id, "--json"]));
    let first_answer = tree["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == "message" && e["message"]["role"] == "assistant")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let output = env.run(&["branch", &id, &first_answer, "--summarize"]);
    assert_exit(&output, 0);
    assert!(stdout(&output).contains("branch summary:"), "{}", stdout(&output));
    let text = stdout(&env.run(&["tree", &id]));
    assert!(text.contains("branch summary: SUMMARY of the abandoned path."), "{text}");
}

#[test]
fn compact_summarizes_with_the_model() {
    let env = CliEnv::start(vec![
        Reply::text("answer one"),
        Reply::text("answer two"),
        Reply::text("SUMMARY: the user asked two questions."),
    ]);
    let id = one_run(&env, "question one");
    assert_exit(&env.run(&["run", "--session", &id, "question two"]), 0);
    let result = json_out(&env.run(&["compact", &id, "--instructions", "be brief", "--json"]));
    assert!(result["summary"].as_str().unwrap().contains("SUMMARY"), "{result}");
    let last = env.requests().pop().unwrap();
    assert!(last.body.to_string().contains("be brief"));
}

#[test]
fn steer_follow_up_and_cancel_on_an_idle_session() {
    let env = CliEnv::start(vec![Reply::text("one"), Reply::text("steered run"), Reply::text("f")]);
    let id = one_run(&env, "start");
    // Idle: steering starts a run.
    let steered = json_out(&env.run(&["steer", &id, "go on", "--json"]));
    assert_eq!(steered["started_run"], true);
    let cancel = json_out(&env.run(&["cancel", &id, "--json"]));
    assert!(cancel["cancelled"].is_boolean());
    // Wait for the steered run to settle, then queue a follow-up (also starts a run).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while env.rpc_ok("session/state", json!({"session_id": id}))["running"] == true {
        assert!(std::time::Instant::now() < deadline, "the run did not settle");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let text = stdout(&env.run(&["follow-up", &id, "and then"]));
    assert!(text.contains("started a run") || text.contains("queued"), "{text}");
    let nothing = env.run(&["cancel", "no-such-session"]);
    assert_exit(&nothing, 1);
}

#[test]
fn trust_and_revoke_a_directory() {
    let env = CliEnv::start(vec![]);
    let dir = env.project_dir();
    let output = env.run(&["trust"]);
    assert_exit(&output, 0);
    assert!(stdout(&output).contains(&path_str(&dir)));
    let listed = env.rpc_ok("trust/list", json!({}));
    assert!(listed["paths"].as_array().unwrap().iter().any(|p| p == path_str(&dir).as_str()));
    let revoked = json_out(&env.run(&["trust", &path_str(&dir), "--revoke", "--json"]));
    assert_eq!(revoked["ok"], true);
    let listed = env.rpc_ok("trust/list", json!({}));
    assert!(!listed["paths"].as_array().unwrap().iter().any(|p| p == path_str(&dir).as_str()));
}

#[test]
fn models_and_completions() {
    let env = CliEnv::start(vec![]);
    let text = stdout(&env.run(&["models"]));
    assert!(
        text.contains("default: fake/test-model") && text.contains("* fake/test-model"),
        "{text}"
    );
    let models = json_out(&env.run(&["models", "--json"]));
    assert_eq!(models["default_model"], "fake/test-model");
    for shell in ["bash", "zsh", "fish"] {
        let output = env.run(&["completions", shell]);
        assert_exit(&output, 0);
        assert!(stdout(&output).contains("follow-up"), "{shell}");
    }
}
