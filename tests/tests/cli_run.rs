//! End-to-end: `rein run` against the real daemon and the scripted fake provider: plain text,
//! tools, `--json`, every exit code, Ctrl-C cancelling the run in the daemon, `--continue`.

mod cli_support;

use cli_support::{CliEnv, assert_exit, request_mentions, session_id, stderr, stdout};
use rein_testkit::fake_provider::{Fault, Reply};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::process::Stdio;

fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
        .collect()
}

fn kinds(lines: &[Value]) -> Vec<String> {
    lines.iter().map(|line| line["event"]["kind"].as_str().unwrap_or("").to_string()).collect()
}

#[test]
fn a_plain_prompt_streams_the_answer_to_stdout() {
    let env = CliEnv::start(vec![Reply::text("Hello from the fake model.")]);
    let output = env.run(&["run", "--approve", "yolo", "say", "hello"]);
    assert_exit(&output, 0);
    assert_eq!(stdout(&output), "Hello from the fake model.\n");
    let id = session_id(&stderr(&output));
    let requests = env.requests();
    assert_eq!(requests.len(), 1);
    assert!(request_mentions(&requests[0], "say hello"));
    // The run is in the session.
    let messages = env.messages(&id);
    assert_eq!(messages.first().map(|m| m["role"].clone()), Some(json!("user")));
    assert_eq!(messages.last().map(|m| m["role"].clone()), Some(json!("assistant")));
}

#[test]
fn the_prompt_can_come_from_stdin() {
    let env = CliEnv::start(vec![Reply::text("from stdin")]);
    let mut child = env
        .rein()
        .args(["run", "--approve", "yolo"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(b"a prompt on stdin\n").unwrap();
    let output = child.wait_with_output().unwrap();
    assert_exit(&output, 0);
    assert_eq!(stdout(&output), "from stdin\n");
    assert!(request_mentions(&env.requests()[0], "a prompt on stdin"));
}

#[test]
fn tool_calls_are_shown_on_stderr_and_the_answer_on_stdout() {
    let env = CliEnv::start(vec![
        Reply::tool_call("bash", json!({"command": "echo tool-output-42"})),
        Reply::text("The tool said 42."),
    ]);
    let output = env.run(&["run", "--approve", "yolo", "run the tool"]);
    assert_exit(&output, 0);
    assert_eq!(stdout(&output), "The tool said 42.\n");
    let err = stderr(&output);
    assert!(err.contains("→ bash echo tool-output-42"), "{err}");
    assert!(err.contains("✓ bash: tool-output-42"), "{err}");
    // The second request carried the tool's output back to the model.
    let requests = env.requests();
    assert_eq!(requests.len(), 2);
    assert!(request_mentions(&requests[1], "tool-output-42"));
}

#[test]
fn json_prints_every_event_as_one_line() {
    let env = CliEnv::start(vec![
        Reply::tool_call("bash", json!({"command": "echo hi"})),
        Reply::text("done"),
    ]);
    let output = env.run(&["run", "--json", "--approve", "yolo", "go"]);
    assert_exit(&output, 0);
    let lines = json_lines(&stdout(&output));
    let kinds = kinds(&lines);
    assert_eq!(kinds.first().map(String::as_str), Some("agent_start"), "{kinds:?}");
    assert_eq!(kinds.last().map(String::as_str), Some("settled"), "{kinds:?}");
    for kind in ["message_update", "tool_execution_start", "tool_execution_end", "agent_end"] {
        assert!(kinds.iter().any(|k| k == kind), "no {kind} in {kinds:?}");
    }
    let end = lines.iter().find(|l| l["event"]["kind"] == "agent_end").unwrap();
    assert_eq!(end["event"]["reason"], "completed");
    // Envelopes keep their seq, strictly increasing.
    let seqs: Vec<u64> = lines.iter().map(|l| l["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    let id = session_id(&stderr(&output));
    assert!(lines.iter().all(|l| l["session_id"] == id.as_str()));
}

#[test]
fn usage_errors_exit_2() {
    let env = CliEnv::configured(vec![]);
    assert_exit(&env.run(&["run", "--no-such-flag", "x"]), 2);
    assert_exit(&env.run(&["run", "--approve", "sometimes", "x"]), 2);
    // No prompt at all (stdin is empty).
    let output = env.run(&["run"]);
    assert_exit(&output, 2);
    assert!(stderr(&output).contains("prompt"), "{}", stderr(&output));
    assert_exit(&env.run(&["run", "--cwd", "/no/such/dir/anywhere", "x"]), 2);
}

#[test]
fn a_provider_error_exits_1_with_its_message() {
    let env = CliEnv::start(vec![Reply::fault(Fault::ServerError)]);
    let output = env.run(&["run", "--approve", "yolo", "x"]);
    assert_exit(&output, 1);
    assert!(stderr(&output).contains("error:"), "{}", stderr(&output));
}

#[test]
fn a_turn_limit_exits_3() {
    let env = CliEnv::start(vec![
        Reply::tool_call("bash", json!({"command": "true"})),
        Reply::text("never reached"),
    ]);
    let output = env.run(&["run", "--approve", "yolo", "--max-turns", "1", "loop"]);
    assert_exit(&output, 3);
    assert!(stderr(&output).contains("turn limit"), "{}", stderr(&output));
}

#[test]
fn without_a_configured_provider_the_error_says_what_to_set() {
    let env = CliEnv::configured(vec![]);
    // No configuration at all: the default model's provider has no key.
    std::fs::remove_file(env.daemon.home().join("config.toml")).unwrap();
    let output = env
        .rein()
        .args(["run", "hello"])
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env("XDG_CONFIG_HOME", env.daemon.home())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    cli_support::stop_daemon(&env);
    assert_exit(&output, 1);
    let err = stderr(&output);
    // The daemon's message names what to set, and rein shows it with the error kind.
    assert!(err.contains("set"), "{err}");
    assert!(err.contains("model_not_found") || err.contains("provider_error"), "{err}");
}

#[test]
fn approval_requests_are_denied_without_an_approver_and_say_so() {
    let env = CliEnv::start(vec![
        Reply::tool_call("bash", json!({"command": "echo should-not-run"})),
        Reply::text("ok, I will not."),
    ]);
    let output = env.run(&["run", "--approve", "ask", "delete things"]);
    assert_exit(&output, 0);
    let err = stderr(&output);
    assert!(err.contains("approval needed: bash echo should-not-run"), "{err}");
    assert!(err.contains("denied by daemon"), "{err}");
    assert!(err.contains("--approve"), "{err}");
    assert!(!request_mentions(&env.requests()[1], "\"should-not-run\\n\""));
}

#[test]
fn continue_uses_the_most_recent_session_of_the_directory() {
    let env = CliEnv::start(vec![Reply::text("first answer"), Reply::text("second answer")]);
    let first = env.run(&["run", "--approve", "yolo", "remember the word walnut"]);
    assert_exit(&first, 0);
    let second = env.run(&["run", "--continue", "what was the word?"]);
    assert_exit(&second, 0);
    assert_eq!(session_id(&stderr(&first)), session_id(&stderr(&second)));
    assert_eq!(stdout(&second), "second answer\n");
    let requests = env.requests();
    assert!(request_mentions(&requests[1], "walnut"), "the history was not continued");
    // --session with an id prefix reaches the same session.
    let id = session_id(&stderr(&first));
    env.fake.push(Reply::text("third"));
    let third = env.run(&["run", "--session", &id[..13], "and again"]);
    assert_exit(&third, 0);
    assert_eq!(session_id(&stderr(&third)), id);
}

#[test]
fn ctrl_c_cancels_the_run_in_the_daemon() {
    let env = CliEnv::start(vec![
        Reply::tool_call("bash", json!({"command": "sleep 30"})),
        Reply::text("never reached"),
    ]);
    let mut child = env
        .rein()
        .args(["run", "--json", "--approve", "yolo", "wait a while"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut lines = Vec::new();
    loop {
        let mut line = String::new();
        assert!(reader.read_line(&mut line).unwrap() > 0, "rein ended early: {lines:?}");
        let value: Value = serde_json::from_str(&line).unwrap();
        let started = value["event"]["kind"] == "tool_execution_start";
        lines.push(value);
        if started {
            break;
        }
    }
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    for line in reader.lines() {
        lines.push(serde_json::from_str(&line.unwrap()).unwrap());
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let end = lines.iter().find(|l| l["event"]["kind"] == "agent_end").expect("no agent_end");
    assert_eq!(end["event"]["reason"], "cancelled");
    // The daemon stopped the run: the session is idle and the cancelled call is recorded.
    let id = lines[0]["session_id"].as_str().unwrap().to_string();
    let state = env.rpc_ok("session/state", json!({"session_id": id}));
    assert_eq!(state["running"], false);
    let messages = env.messages(&id);
    let result = messages.iter().find(|m| m["role"] == "tool_result").expect("no tool result");
    assert_eq!(result["is_error"], true, "{result}");
    assert_eq!(env.requests().len(), 1, "the run went on after the cancel");
}

#[test]
fn a_cold_daemon_is_started_by_rein_run() {
    let env = CliEnv::configured(vec![Reply::text("cold start works")]);
    let output = env
        .rein()
        .args(["run", "--approve", "yolo", "hi"])
        .env("RUST_LOG", "rein_ai=debug")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    cli_support::stop_daemon(&env);
    assert_exit(&output, 0);
    assert_eq!(stdout(&output), "cold start works\n");
    // The daemon opened the provider's connection while it started, sent nothing on it
    // before the prompt's request, and that request went on it.
    let log = std::fs::read_to_string(env.daemon.home().join("logs/reind.log")).unwrap();
    assert!(log.contains("connection opened ahead"), "{log}");
    assert_eq!(env.requests().len(), 1);
    assert_eq!(env.fake.connections(), 1);
}

#[test]
fn cold_runs_started_at_once_share_one_daemon_and_all_succeed() {
    // Each run races to start the daemon; the losers wait for the winner (rein batch starts
    // its workers this way).
    let env = CliEnv::configured((0..4).map(|i| Reply::text(format!("answer {i}"))).collect());
    let runs: Vec<_> = (0..4)
        .map(|i| {
            env.rein()
                .args(["run", "--approve", "yolo", &format!("prompt {i}")])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outputs: Vec<_> = runs.into_iter().map(|run| run.wait_with_output().unwrap()).collect();
    cli_support::stop_daemon(&env);
    for output in &outputs {
        assert_exit(output, 0);
        assert!(stdout(output).starts_with("answer "), "{}", stderr(output));
    }
}

#[test]
fn a_prompt_to_a_busy_session_is_queued_and_shows_only_its_own_run() {
    let env = CliEnv::start(vec![
        Reply::tool_call("bash", json!({"command": "sleep 1"})),
        Reply::text("first answer"),
        Reply::text("second answer"),
    ]);
    let first = env
        .rein()
        .args(["run", "--approve", "yolo", "first"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the first run is going.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let id = loop {
        let listed = env.rpc_ok("session/list", json!({}));
        if let Some(session) = listed["sessions"].as_array().and_then(|s| s.first())
            && session["running"] == true
        {
            break session["session_id"].as_str().unwrap().to_string();
        }
        assert!(std::time::Instant::now() < deadline, "the first run did not start");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let second = env.run(&["run", "--session", &id, "second"]);
    assert_exit(&second, 0);
    assert_eq!(stdout(&second), "second answer\n");
    let first = first.wait_with_output().unwrap();
    assert_exit(&first, 0);
    assert_eq!(stdout(&first), "first answer\n");
}

#[test]
fn options_after_the_prompt_are_options_and_a_double_dash_ends_them() {
    let env = CliEnv::start(vec![Reply::text("flagged answer"), Reply::text("dashed answer")]);
    let output = env.run(&["run", "hello there", "--approve", "yolo", "--json"]);
    assert_exit(&output, 0);
    // --json took effect: every stdout line is an event.
    let lines = json_lines(&stdout(&output));
    assert!(kinds(&lines).contains(&"agent_end".to_string()), "{lines:?}");
    let requests = env.requests();
    assert!(request_mentions(&requests[0], "hello there"));
    assert!(!request_mentions(&requests[0], "--approve"), "the options reached the model");
    // After --, words that look like options are prompt text.
    let output = env.run(&["run", "--approve", "yolo", "--", "explain", "--json"]);
    assert_exit(&output, 0);
    // Piped stdout gets plain text: the answer and nothing else.
    assert_eq!(stdout(&output), "dashed answer\n");
    assert!(request_mentions(&env.requests()[1], "explain --json"));
}

#[test]
fn a_failed_first_prompt_leaves_no_session_and_continue_skips_empty_ones() {
    let env = CliEnv::start(vec![Reply::fault(Fault::ServerError), Reply::text("kept answer")]);
    let failed = env.run(&["run", "--approve", "yolo", "doomed"]);
    assert_exit(&failed, 1);
    assert!(stderr(&failed).contains("removed"), "{}", stderr(&failed));
    let listed = env.rpc_ok("session/list", json!({}));
    assert_eq!(listed["sessions"], json!([]), "the failed session stayed: {listed}");

    let kept = env.run(&["run", "--approve", "yolo", "a real question"]);
    assert_exit(&kept, 0);
    let kept_id = session_id(&stderr(&kept));
    // A newer session without any prompt (a client that created one and left).
    let project = cli_support::path_str(&env.project_dir());
    let empty = env.rpc_ok("session/create", json!({"cwd": project}));
    assert_ne!(empty["session_id"], json!(kept_id));
    env.fake.push(Reply::text("continued"));
    let continued = env.run(&["run", "-c", "go on"]);
    assert_exit(&continued, 0);
    assert_eq!(session_id(&stderr(&continued)), kept_id, "-c picked the empty session");
}

#[test]
fn piped_output_is_plain_text_even_where_colour_is_allowed() {
    let env = CliEnv::start(vec![
        Reply::tool_call("bash", json!({"command": "echo from-the-tool"})),
        Reply::text("# Done\n\nThe **answer**, as the model wrote it."),
    ]);
    // NO_COLOR unset: only the pipes keep the output plain.
    let output = env
        .rein()
        .env_remove("NO_COLOR")
        .args(["run", "go", "--approve", "yolo"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_exit(&output, 0);
    assert_eq!(stdout(&output), "# Done\n\nThe **answer**, as the model wrote it.\n");
    let err = stderr(&output);
    assert!(err.contains("✓ bash: from-the-tool"), "{err}");
    assert!(!err.contains('\u{1b}'), "escape codes on a piped stderr: {err:?}");
}
