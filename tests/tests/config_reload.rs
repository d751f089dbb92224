//! End-to-end: a running daemon notices a changed `config.toml` (new providers and models
//! apply to the next request), reports a broken one without dying, and `daemon/info` lists the
//! config path, the default model and the names (never the values) of the key variables it
//! sees. A client whose environment has a provider key the daemon lacks is told so, and
//! `rein daemon restart` hands its environment over.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns: a failure stops the test

mod cli_support;

use cli_support::{CliEnv, assert_exit, stderr};
use rein_testkit::background::BackgroundFake;
use rein_testkit::daemon::DaemonFixture;
use rein_testkit::fake_provider::Reply;
use serde_json::json;
use std::process::Stdio;

fn fake_config(fake: &BackgroundFake) -> String {
    format!(
        "model = \"fake/test-model\"\n\n[providers.fake]\napi = \"openai-chat\"\nbase_url = \
         \"{}\"\napi_key_env = \"\"\n\n[retry]\nmax_retries = 0\n",
        fake.base_url()
    )
}

/// Stops whatever daemon serves the fixture's socket when the test ends, also one that
/// `rein daemon restart` started.
struct StopOnDrop<'a>(&'a DaemonFixture);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        let _ = self.0.run_rein(&["daemon", "stop"]);
    }
}

#[test]
fn a_changed_config_applies_to_the_next_request_and_a_broken_one_is_reported() {
    let fake = BackgroundFake::start(vec![Reply::text("first answer"), Reply::text("second")]);
    let mut daemon = DaemonFixture::new();
    daemon.spawn();
    let project = tempfile::Builder::new().prefix("rein-project-").tempdir().unwrap();
    let env = CliEnv { fake, daemon, project };

    let output = env.run(&["run", "--approve", "yolo", "hello"]);
    assert_exit(&output, 1);
    assert!(stderr(&output).contains("no model chosen"), "{}", stderr(&output));

    let config_path = env.daemon.home().join("config.toml");
    std::fs::write(&config_path, fake_config(&env.fake)).unwrap();
    let output = env.run(&["run", "--approve", "yolo", "hello"]);
    assert_exit(&output, 0);
    assert_eq!(env.requests().len(), 1);
    let info = env.rpc_ok("daemon/info", json!({}));
    assert_eq!(info["config_path"], config_path.display().to_string(), "{info}");
    assert_eq!(info["default_model"], "fake/test-model", "{info}");
    assert!(info.get("config_error").is_none(), "{info}");

    // A mistake: the daemon keeps the settings it had and says what is wrong.
    let broken = format!("{}\n[limit]\nmax_cost = 1.0\n", fake_config(&env.fake));
    std::fs::write(&config_path, broken).unwrap();
    let output = env.run(&["run", "--approve", "yolo", "again"]);
    assert_exit(&output, 0);
    let warning = stderr(&output);
    assert!(warning.contains("keeps its previous settings"), "{warning}");
    assert!(warning.contains("did you mean `limits` instead of `limit`?"), "{warning}");
    let info = env.rpc_ok("daemon/info", json!({}));
    let error = info["config_error"].as_str().unwrap_or_default();
    assert!(error.contains("did you mean `limits`"), "{info}");
    assert_eq!(env.requests().len(), 2);

    // Fixed again: the error is gone.
    std::fs::write(&config_path, fake_config(&env.fake)).unwrap();
    let info = env.rpc_ok("daemon/info", json!({}));
    assert!(info.get("config_error").is_none(), "{info}");
}

#[test]
fn daemon_info_names_the_keys_it_sees_and_restart_hands_over_the_callers() {
    let daemon = DaemonFixture::new();
    let _stop = StopOnDrop(&daemon);
    let secret = "sk-test-value-that-must-not-leak";
    let mut child = daemon
        .reind()
        .env("OPENAI_API_KEY", secret)
        .arg("--foreground")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    daemon.wait_until_answering();
    let info = daemon.connect().call_ok(1, "daemon/info", json!({}));
    assert!(!info.to_string().contains(secret), "a key value leaked: {info}");
    let seen = info["key_variables"].as_array().unwrap();
    assert!(seen.contains(&json!("OPENAI_API_KEY")), "{info}");
    assert!(!seen.contains(&json!("ANTHROPIC_API_KEY")), "{info}");
    assert_eq!(info["default_model"], "openai/gpt-5", "the first fallback with a key: {info}");
    assert!(
        info["missing_key_variables"].as_array().unwrap().contains(&json!("ANTHROPIC_API_KEY"))
    );

    // This shell has a key the daemon lacks: the CLI says how to hand it over.
    let status = daemon
        .rein()
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .args(["daemon", "status"])
        .output()
        .unwrap();
    assert_exit(&status, 0);
    let hint = stderr(&status);
    assert!(hint.contains("ANTHROPIC_API_KEY is set in this shell"), "{hint}");
    assert!(hint.contains("rein daemon restart"), "{hint}");
    assert!(!hint.contains("sk-ant-test"), "{hint}");

    let restart = daemon
        .rein()
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .args(["daemon", "restart"])
        .output()
        .unwrap();
    assert_exit(&restart, 0);
    let _ = child.wait();
    let info = daemon.connect().call_ok(1, "daemon/info", json!({}));
    let seen = info["key_variables"].as_array().unwrap();
    assert!(seen.contains(&json!("ANTHROPIC_API_KEY")), "{info}");
    assert_ne!(info["pid"], json!(child.id()), "a new daemon runs");
}

/// The newcomer's path from the README: the first prompt started the daemon without a key,
/// the key is exported afterwards, and the next prompt says how to hand it over.
#[test]
fn a_prompt_tells_how_to_hand_a_new_key_to_the_daemon() {
    let mut daemon = DaemonFixture::new();
    daemon.spawn();
    let project = tempfile::Builder::new().prefix("rein-project-").tempdir().unwrap();
    let output = daemon
        .rein()
        .current_dir(project.path())
        .env("ANTHROPIC_API_KEY", "sk-ant-exported-later")
        .args(["run", "--approve", "yolo", "hello"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_exit(&output, 1);
    let error = stderr(&output);
    assert!(error.contains("ANTHROPIC_API_KEY is set in this shell"), "{error}");
    assert!(error.contains("rein daemon restart"), "{error}");
    assert!(!error.contains("sk-ant-exported-later"), "{error}");
}
