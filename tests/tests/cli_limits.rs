//! End-to-end: global options go before or after the subcommand, `rein run` takes cost and
//! wall-time limits, and each limit reason has its own exit code (3 turns, 4 cost, 5 time,
//! 6 any other limit).

#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns: a failure stops the test

mod cli_support;

use cli_support::{CliEnv, assert_exit, path_str, stderr};
use rein_testkit::background::BackgroundFake;
use rein_testkit::daemon::DaemonFixture;
use rein_testkit::fake_provider::{Reply, ScriptUsage};
use serde_json::json;

/// A daemon for `fake/test-model` with `model_extra` in the model's table and `extra` at the
/// end of the file.
fn env_with(script: Vec<Reply>, model_extra: &str, extra: &str) -> CliEnv {
    let fake = BackgroundFake::start(script);
    let mut daemon = DaemonFixture::new();
    let config = format!(
        "model = \"fake/test-model\"\n\n[providers.fake]\napi = \"openai-chat\"\nbase_url = \
         \"{}\"\napi_key_env = \"\"\n\n[providers.fake.models.\"test-model\"]\n{model_extra}\n\n\
         [retry]\nmax_retries = 0\n\n{extra}\n",
        fake.base_url()
    );
    std::fs::write(daemon.home().join("config.toml"), config).unwrap();
    daemon.spawn();
    let project = tempfile::Builder::new().prefix("rein-project-").tempdir().unwrap();
    CliEnv { fake, daemon, project }
}

#[test]
fn the_socket_option_works_before_or_after_the_subcommand() {
    let env = CliEnv::start(vec![]);
    let socket = path_str(env.daemon.socket());
    for args in [
        vec!["--socket", socket.as_str(), "sessions", "--all"],
        vec!["sessions", "--all", "--socket", socket.as_str()],
        vec!["--socket", socket.as_str(), "daemon", "status"],
    ] {
        let output = env
            .rein()
            .env_remove("REIN_SOCKET")
            .args(&args)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert_exit(&output, 0);
    }
    // Session options before a subcommand are refused, not silently dropped.
    assert_exit(&env.run(&["--model", "fake/test-model", "sessions"]), 2);
}

#[test]
fn a_cost_limit_exits_4() {
    let costly = |reply: Reply| Reply {
        usage: Some(ScriptUsage { input: 1_000, output: 0, ..ScriptUsage::default() }),
        ..reply
    };
    let env = env_with(
        vec![costly(Reply::tool_call("bash", json!({"command": "echo hi"}))), Reply::text("x")],
        "cost = { input = 1000.0, output = 1000.0 }",
        "",
    );
    // One turn costs $1.00, more than the limit.
    let output = env.run(&["run", "--approve", "yolo", "--max-cost", "0.5", "go"]);
    assert_exit(&output, 4);
    assert_eq!(env.requests().len(), 1);
    assert_exit(&env.run(&["run", "--max-cost", "a lot", "go"]), 2);
    assert_exit(&env.run(&["run", "--max-cost", "-1", "go"]), 2);
}

#[test]
fn a_wall_time_limit_exits_5() {
    // The reply streams one character every 100 ms for much longer than the one second
    // allowed.
    let slow = Reply {
        delay_ms: Some(100),
        delta_size: Some(1),
        ..Reply::text("a slow answer that takes far longer than one second to stream out")
    };
    let env = CliEnv::start(vec![slow]);
    let output = env.run(&["run", "--approve", "yolo", "--max-seconds", "1", "go"]);
    assert_exit(&output, 5);
    assert_exit(&env.run(&["run", "--max-seconds", "soon", "go"]), 2);
}

#[test]
fn another_limit_exits_6() {
    let env = env_with(
        vec![
            Reply::tool_call("read", json!({"path": "no-such-file.txt"})),
            Reply::text("never asked"),
        ],
        "",
        "[limits]\nmax_failed_turns = 1\n",
    );
    let output = env.run(&["run", "--approve", "yolo", "go"]);
    assert_exit(&output, 6);
    assert!(!stderr(&output).is_empty());
}
