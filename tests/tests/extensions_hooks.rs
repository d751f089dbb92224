//! End-to-end: command hooks in Claude Code's format, configured in `config.toml` and in a
//! project's `.claude/settings.json`, run by the real daemon around a scripted model.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

mod cli_support;

use cli_support::{CliEnv, assert_exit, request_mentions, session_id, stderr, stdout};
use rein_testkit::fake_provider::Reply;
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
        .collect()
}

fn events<'a>(lines: &'a [Value], kind: &str) -> Vec<&'a Value> {
    lines.iter().map(|line| &line["event"]).filter(|event| event["kind"] == kind).collect()
}

/// Writes an executable script.
fn script(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Appends tables to the daemon's configuration.
fn configure(env: &CliEnv, extra: &str) {
    let path = env.daemon.home().join("config.toml");
    let mut config = std::fs::read_to_string(&path).unwrap();
    config.push_str(extra);
    std::fs::write(path, config).unwrap();
}

/// Puts top-level keys first in the daemon's configuration.
fn configure_top(env: &CliEnv, keys: &str) {
    let path = env.daemon.home().join("config.toml");
    let config = std::fs::read_to_string(&path).unwrap();
    std::fs::write(path, format!("{keys}\n{config}")).unwrap();
}

fn python3() -> bool {
    std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success())
}

/// The `hook_run` entries of a session file.
fn hook_entries(env: &CliEnv, id: &str) -> Vec<Value> {
    let tree = env.rpc_ok("session/tree", json!({"session_id": id}));
    tree["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|entry| entry["type"] == "custom" && entry["custom_type"] == "hook_run")
        .cloned()
        .collect()
}

const GUARD: &str = r#"#!/usr/bin/env bash
# A Claude Code PreToolUse guard: exit 2 blocks, stderr goes to the model.
input="$(cat)"
case "$input" in
  *'"hook_event_name":"PreToolUse"'*) ;;
  *) echo "unexpected input: $input" >&2; exit 1 ;;
esac
case "$input" in
  *'rm -rf'*) echo "rm -rf is not allowed in this project" >&2; exit 2 ;;
esac
exit 0
"#;

#[test]
fn a_pre_tool_use_hook_exiting_2_blocks_rm_rf_and_the_model_sees_its_stderr() {
    let mut env = CliEnv::configured(vec![
        Reply::tool_call("bash", json!({"command": "rm -rf victim"})),
        Reply::text("I will not delete it."),
    ]);
    let guard = env.daemon.home().join("hooks/guard.sh");
    script(&guard, GUARD);
    configure(
        &env,
        &format!(
            "\n[[hooks.PreToolUse]]\nmatcher = \"Bash\"\n[[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = \"{}\"\ntimeout = 30\n",
            guard.display()
        ),
    );
    env.daemon.spawn();
    std::fs::create_dir(env.project.path().join("victim")).unwrap();

    let output = env.run(&["run", "--json", "--approve", "yolo", "clean up"]);
    assert_exit(&output, 0);
    assert!(env.project.path().join("victim").is_dir(), "the blocked command ran");
    let lines = json_lines(&stdout(&output));
    let end = events(&lines, "tool_execution_end");
    let result = &end[0]["result"];
    assert_eq!(result["is_error"], true);
    assert!(result.to_string().contains("rm -rf is not allowed in this project"), "{result}");
    let started = events(&lines, "hook_started");
    let finished = events(&lines, "hook_finished");
    assert_eq!(started.len(), 1, "{started:?}");
    assert_eq!(started[0]["hook_event"], "PreToolUse");
    assert_eq!(finished[0]["decision"], "block");
    assert_eq!(finished[0]["exit_code"], 2);
    assert!(finished[0]["duration_ms"].is_u64());
    // The model got the hook's stderr with the call's result.
    let requests = env.requests();
    assert_eq!(requests.len(), 2);
    assert!(request_mentions(&requests[1], "rm -rf is not allowed in this project"));
    // The session file records the run.
    let id = session_id(&stderr(&output));
    let entries = hook_entries(&env, &id);
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0]["data"]["decision"], "block");
}

#[test]
fn a_harmless_command_passes_the_same_guard() {
    let mut env = CliEnv::configured(vec![
        Reply::tool_call("bash", json!({"command": "echo guarded-ok"})),
        Reply::text("done"),
    ]);
    let guard = env.daemon.home().join("hooks/guard.sh");
    script(&guard, GUARD);
    configure(
        &env,
        &format!(
            "\n[[hooks.PreToolUse]]\nmatcher = \"bash\"\n[[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = \"{}\"\n",
            guard.display()
        ),
    );
    env.daemon.spawn();
    let output = env.run(&["run", "--json", "--approve", "yolo", "echo"]);
    assert_exit(&output, 0);
    let lines = json_lines(&stdout(&output));
    assert_eq!(events(&lines, "hook_finished")[0]["decision"], "none");
    assert!(request_mentions(&env.requests()[1], "guarded-ok"));
}

#[test]
fn a_stop_hook_that_blocks_makes_the_run_continue_once() {
    if !python3() {
        eprintln!("skipped: python3 is not installed");
        return;
    }
    let mut env =
        CliEnv::configured(vec![Reply::text("first answer"), Reply::text("second answer")]);
    // A Claude Code Stop hook in Python, read from the project's .claude/settings.json.
    let project = env.project.path();
    script(
        &project.join(".claude/hooks/stop.py"),
        r#"#!/usr/bin/env python3
import json, sys
event = json.load(sys.stdin)
assert event["hook_event_name"] == "Stop"
if not event["stop_hook_active"]:
    print(json.dumps({"decision": "block", "reason": "Run the tests before you stop."}))
sys.exit(0)
"#,
    );
    std::fs::write(
        project.join(".claude/settings.json"),
        json!({"hooks": {"Stop": [{"hooks": [
            {"type": "command", "command": "python3 \"$CLAUDE_PROJECT_DIR/.claude/hooks/stop.py\""}
        ]}]}})
        .to_string(),
    )
    .unwrap();
    configure_top(&env, "hooks_from_claude_settings = true");
    env.daemon.spawn();
    // Project hooks run only in a trusted project.
    assert_exit(&env.run(&["trust", &project.display().to_string()]), 0);

    let output = env.run(&["run", "--json", "--approve", "yolo", "work"]);
    assert_exit(&output, 0);
    let lines = json_lines(&stdout(&output));
    let finished = events(&lines, "hook_finished");
    let decisions: Vec<&Value> = finished.iter().map(|event| &event["decision"]).collect();
    assert_eq!(decisions, vec!["block", "none"], "{finished:?}");
    let requests = env.requests();
    assert_eq!(requests.len(), 2);
    assert!(request_mentions(&requests[1], "Run the tests before you stop."));
    let end = events(&lines, "agent_end");
    assert_eq!(end.len(), 1);
    assert_eq!(end[0]["reason"], "completed");
    assert_eq!(end[0]["turns"], 2);
}

#[test]
fn project_hooks_do_not_run_in_an_untrusted_project() {
    let mut env = CliEnv::configured(vec![Reply::text("only answer")]);
    let project = env.project.path();
    std::fs::create_dir_all(project.join(".claude")).unwrap();
    std::fs::write(
        project.join(".claude/settings.json"),
        json!({"hooks": {"Stop": [{"hooks": [
            {"type": "command", "command": "echo '{\"decision\":\"block\",\"reason\":\"again\"}'"}
        ]}]}})
        .to_string(),
    )
    .unwrap();
    configure_top(&env, "hooks_from_claude_settings = true");
    env.daemon.spawn();
    let output = env.run(&["run", "--json", "--approve", "yolo", "work"]);
    assert_exit(&output, 0);
    assert!(events(&json_lines(&stdout(&output)), "hook_started").is_empty());
    assert_eq!(env.requests().len(), 1);
}
