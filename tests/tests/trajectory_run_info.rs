//! End-to-end: the JSONL trajectory's `run_info` says how the run ended (a limit is not a
//! finish) and what produced it: rein version, model and provider, limits, the hashes of the
//! system prompt and the configuration, and the project's git commit and dirty flag. The
//! hashes are checked against `sha256sum` over what the provider received and the file on
//! disk; the commit against `git rev-parse`.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns: a failure stops the test

mod cli_support;

use cli_support::{CliEnv, assert_exit, session_id, stderr, stdout};
use rein_testkit::fake_provider::Reply;
use serde_json::{Value, json};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

fn sha256sum(bytes: &[u8]) -> String {
    let mut child =
        Command::new("sha256sum").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(bytes).unwrap();
    let output = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&output.stdout).split_whitespace().next().unwrap().to_string()
}

fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

fn run_info(env: &CliEnv, session: &str) -> Value {
    let output = env.run(&["export", session, "--format", "jsonl"]);
    assert_exit(&output, 0);
    let text = stdout(&output);
    let last = text.lines().rev().find(|line| !line.trim().is_empty()).unwrap();
    let info: Value = serde_json::from_str(last).unwrap();
    assert_eq!(info["type"], "run_info", "{info}");
    info
}

#[test]
fn run_info_tells_a_limit_from_a_finish_and_what_produced_the_run() {
    let env = CliEnv::start(vec![
        Reply::tool_call("bash", json!({"command": "echo one"})),
        Reply::text("finished"),
    ]);
    let project = env.project.path();
    git(project, &["init", "-q"]);
    std::fs::write(project.join("README"), "hello\n").unwrap();
    git(project, &["add", "README"]);
    git(project, &["commit", "-q", "-m", "first"]);
    std::fs::write(project.join("README"), "changed\n").unwrap();
    let commit = git(project, &["rev-parse", "HEAD"]);

    let output = env.run(&["run", "--approve", "yolo", "--max-turns", "1", "go"]);
    assert_exit(&output, 3);
    let id = session_id(&stderr(&output));
    let info = run_info(&env, &id);
    // The last stop reason was `tool_use`; the run ended at its turn limit.
    assert_eq!(info["end_reason"], "max_turns", "{info}");
    assert_eq!(info["exit_reason"], "max_turns", "{info}");
    let daemon = env.rpc_ok("daemon/info", json!({}));
    assert_eq!(info["rein_version"], daemon["version"], "{info}");
    assert_eq!(info["model"], "fake/test-model");
    assert_eq!(info["provider"], "fake");
    assert_eq!(info["limits"]["max_turns"], 1, "{info}");
    assert_eq!(info["limits"]["max_failed_turns"], 5, "{info}");
    let config = std::fs::read(env.daemon.home().join("config.toml")).unwrap();
    assert_eq!(info["config_sha256"], sha256sum(&config), "{info}");
    let requests = env.requests();
    let system = requests[0].body["messages"][0]["content"].as_str().unwrap().to_string();
    assert_eq!(requests[0].body["messages"][0]["role"], "system");
    assert_eq!(info["system_prompt_sha256"], sha256sum(system.as_bytes()), "{info}");
    assert_eq!(info["git_commit"], commit.as_str(), "{info}");
    assert_eq!(info["git_dirty"], true, "{info}");

    // The next run of the same session finishes: the trajectory says so.
    git(project, &["commit", "-q", "-am", "second"]);
    let output = env.run(&["run", "--approve", "yolo", "--session", &id, "go on"]);
    assert_exit(&output, 0);
    let info = run_info(&env, &id);
    assert_eq!(info["end_reason"], "completed", "{info}");
    assert_eq!(info["git_dirty"], false, "{info}");
    assert_eq!(info["git_commit"], git(project, &["rev-parse", "HEAD"]).as_str());
    assert_eq!(info["limits"]["max_turns"], 200, "the configured default: {info}");
}

#[test]
fn a_project_outside_git_has_no_commit() {
    let env = CliEnv::start(vec![Reply::text("hi")]);
    let output = env.run(&["run", "--approve", "yolo", "hello"]);
    assert_exit(&output, 0);
    let info = run_info(&env, &session_id(&stderr(&output)));
    assert_eq!(info["end_reason"], "completed");
    assert!(info["git_commit"].is_null(), "{info}");
    assert!(info["git_dirty"].is_null(), "{info}");
}
