//! End-to-end: configuration is never silently ignored. Unknown keys and tables anywhere in
//! the user's `config.toml` stop the daemon with the key and the closest valid one named; a
//! trusted project's `.rein/config.toml` is applied (and checked the same way); a session's
//! approval policy survives a daemon restart.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns: a failure stops the test

mod cli_support;

use cli_support::{CliEnv, assert_exit, path_str, session_id, stderr};
use rein_testkit::daemon::DaemonFixture;
use rein_testkit::fake_provider::Reply;
use serde_json::json;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Runs `reind --foreground` with `config` and returns its stderr once it exits; a daemon
/// still running after 20 s (it ignored the mistake) fails the test.
fn daemon_refuses(config: &str) -> String {
    let daemon = DaemonFixture::new();
    std::fs::write(daemon.home().join("config.toml"), config).unwrap();
    let mut child = daemon
        .reind()
        .arg("--foreground")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(!status.success(), "reind accepted {config:?}");
            let mut text = String::new();
            use std::io::Read;
            child.stderr.take().unwrap().read_to_string(&mut text).unwrap();
            return text;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("reind kept running with {config:?}: the mistake was ignored");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn unknown_keys_and_tables_stop_the_daemon_naming_the_closest_valid_one() {
    for (config, unknown, closest) in [
        ("[limit]\nmax_cost = 1.0\n", "limit", "limits"),
        ("approval_polcy = \"ask\"\n", "approval_polcy", "approval_policy"),
        ("[sessions]\nreplay_bufer = 10\n", "replay_bufer", "replay_buffer"),
        (
            "[providers.x]\napi = \"openai-chat\"\nbase_url = \"http://127.0.0.1:9/v1\"\n\
             [providers.x.models.m]\ncost = { inptu = 1.0 }\n",
            "inptu",
            "input",
        ),
    ] {
        let error = daemon_refuses(config);
        assert!(error.contains(unknown), "{config}: {error}");
        assert!(
            error.contains(&format!("did you mean `{closest}` instead of `{unknown}`?")),
            "{config}: {error}"
        );
    }
}

#[test]
fn a_trusted_projects_config_is_applied() {
    let env = CliEnv::start(vec![
        Reply::tool_call("bash", json!({"command": "echo one"})),
        Reply::text("done"),
        Reply::tool_call("bash", json!({"command": "echo two"})),
    ]);
    let dot_rein = env.project.path().join(".rein");
    std::fs::create_dir_all(&dot_rein).unwrap();
    std::fs::write(dot_rein.join("config.toml"), "[limits]\nmax_turns = 1\n").unwrap();
    // Untrusted: the project's limit is not applied.
    assert_exit(&env.run(&["run", "--approve", "yolo", "first"]), 0);
    // Trusted: one turn, then the run stops at the project's turn limit.
    let project = path_str(&env.project_dir());
    assert_exit(&env.run(&["trust", &project]), 0);
    assert_exit(&env.run(&["run", "--approve", "yolo", "second"]), 3);
    assert_eq!(env.requests().len(), 3);
}

#[test]
fn a_trusted_projects_model_and_approval_policy_apply_to_its_new_sessions() {
    let env = CliEnv::start(vec![
        Reply::tool_call("bash", json!({"command": "echo ran-it"})),
        Reply::text("done"),
    ]);
    let dot_rein = env.project.path().join(".rein");
    std::fs::create_dir_all(&dot_rein).unwrap();
    std::fs::write(
        dot_rein.join("config.toml"),
        "model = \"fake/project-model\"\napproval_policy = \"yolo\"\n",
    )
    .unwrap();
    let project = path_str(&env.project_dir());
    assert_exit(&env.run(&["trust", &project]), 0);
    // No --approve: the user's default is `ask`, which would deny the call (no approver).
    let output = env.run(&["run", "go"]);
    assert_exit(&output, 0);
    let requests = env.requests();
    assert_eq!(requests[0].body["model"], "project-model", "{}", requests[0].body);
    assert!(requests[1].body.to_string().contains("ran-it"), "the call was not run");
    let state = env.rpc_ok("session/state", json!({"session_id": session_id(&stderr(&output))}));
    assert_eq!(state["approval_policy"], "yolo");
}

#[test]
fn a_mistake_in_a_trusted_projects_config_is_reported() {
    let env = CliEnv::start(vec![Reply::text("never sent")]);
    let dot_rein = env.project.path().join(".rein");
    std::fs::create_dir_all(&dot_rein).unwrap();
    std::fs::write(dot_rein.join("config.toml"), "[limit]\nmax_turns = 1\n").unwrap();
    let project = path_str(&env.project_dir());
    assert_exit(&env.run(&["trust", &project]), 0);
    let output = env.run(&["run", "--approve", "yolo", "hello"]);
    assert_exit(&output, 1);
    let error = stderr(&output);
    assert!(error.contains(".rein/config.toml"), "{error}");
    assert!(error.contains("did you mean `limits` instead of `limit`?"), "{error}");
    // A project may not configure providers.
    std::fs::write(dot_rein.join("config.toml"), "[providers.x]\napi = \"anthropic\"\n").unwrap();
    let output = env.run(&["run", "--approve", "yolo", "hello"]);
    assert_exit(&output, 1);
    assert!(stderr(&output).contains("`providers` can only be set"), "{}", stderr(&output));
    assert!(env.requests().is_empty());
    // Refused before anything was written: no empty session is left behind.
    let listed = env.rpc_ok("session/list", json!({}));
    assert_eq!(listed["sessions"], json!([]), "{listed}");
}

#[test]
fn a_sessions_approval_policy_survives_a_daemon_restart() {
    let mut env = CliEnv::start(vec![Reply::text("hi")]);
    let output = env.run(&["run", "--approve", "yolo", "hello"]);
    assert_exit(&output, 0);
    let id = session_id(&stderr(&output));
    let restart = |env: &mut CliEnv| {
        assert_exit(&env.run(&["daemon", "stop"]), 0);
        if let Some(child) = env.daemon.child_mut() {
            let _ = child.wait();
        }
        env.daemon.spawn();
    };
    restart(&mut env);
    let state = env.rpc_ok("session/state", json!({"session_id": id}));
    assert_eq!(state["approval_policy"], "yolo", "{state}");
    env.rpc_ok("session/set_approval_policy", json!({"session_id": id, "policy": "auto-edit"}));
    restart(&mut env);
    let state = env.rpc_ok("session/state", json!({"session_id": id}));
    assert_eq!(state["approval_policy"], "auto-edit", "{state}");
}
