//! End-to-end: the interactive attach on a pseudo-terminal: a prompt streams, typing during a
//! run steers it, an approval is answered inline, a second terminal sees the same run, and
//! Ctrl-C cancels a run and then leaves.

mod cli_support;

use cli_support::{CliEnv, Pty, request_mentions};
use rein_testkit::fake_provider::Reply;
use serde_json::json;

/// The session id from the attach banner (`new session ID (` or `attached to ID (`).
fn banner_session(seen: &str) -> String {
    let after = seen.rsplit("session ").next().unwrap_or_default();
    after.split_whitespace().next().unwrap_or_default().to_string()
}

#[test]
fn a_prompt_streams_and_typing_during_the_run_steers_it() {
    let env = CliEnv::start(vec![
        Reply::tool_call("bash", json!({"command": "sleep 2"})),
        Reply::text("Steered answer arrived."),
    ]);
    let mut pty = Pty::spawn(&env, &["--approve", "yolo"]);
    pty.expect("/help for commands");
    pty.expect("> "); // the line editor reads in raw mode from here
    pty.send("start the work\r");
    pty.expect("→ bash sleep 2");
    pty.send("also mention pineapples\r");
    pty.expect("Steered answer arrived.");
    let requests = env.requests();
    assert_eq!(requests.len(), 2);
    assert!(request_mentions(&requests[1], "also mention pineapples"), "steering not delivered");
    // Ctrl-C twice on an idle prompt leaves.
    pty.send("\x03");
    pty.expect("Ctrl-C again");
    pty.send("\x03");
    assert_eq!(pty.wait(), Some(0));
}

#[test]
fn an_approval_is_answered_inline() {
    let env = CliEnv::start(vec![
        Reply::tool_call("bash", json!({"command": "echo approved-output"})),
        Reply::text("All done."),
    ]);
    let mut pty = Pty::spawn(&env, &["--approve", "ask"]);
    pty.expect("/help for commands");
    pty.expect("> "); // the line editor reads in raw mode from here
    pty.send("run it\r");
    pty.expect("approval needed: bash echo approved-output");
    pty.send("y\r");
    pty.expect("approved once by rein");
    pty.expect("✓ bash: approved-output");
    pty.expect("All done.");
    pty.send("/quit\r");
    assert_eq!(pty.wait(), Some(0));
}

#[test]
fn a_second_terminal_sees_the_same_run() {
    let env = CliEnv::start(vec![Reply::text("Shared answer for both.")]);
    let mut first = Pty::spawn(&env, &["--approve", "yolo"]);
    let banner = first.expect("/help for commands");
    let id = banner_session(&banner);
    assert!(!id.is_empty(), "{banner}");
    let mut second = Pty::spawn(&env, &["attach", &id]);
    second.expect(&format!("attached to {id}"));
    first.expect("> ");
    second.expect("> ");
    first.send("hello from the first terminal\r");
    first.expect("Shared answer for both.");
    second.expect("you: hello from the first terminal");
    second.expect("Shared answer for both.");
    first.send("/quit\r");
    second.send("/quit\r");
    assert_eq!(first.wait(), Some(0));
    assert_eq!(second.wait(), Some(0));
}

#[test]
fn ctrl_c_cancels_a_running_run() {
    let env = CliEnv::start(vec![
        Reply::tool_call("bash", json!({"command": "sleep 30"})),
        Reply::text("never reached"),
    ]);
    let mut pty = Pty::spawn(&env, &["--approve", "yolo"]);
    pty.expect("/help for commands");
    pty.expect("> "); // the line editor reads in raw mode from here
    pty.send("wait a long time\r");
    pty.expect("→ bash sleep 30");
    pty.send("\x03");
    pty.expect("cancelling the run");
    pty.expect("run cancelled");
    pty.send("/tree\r");
    pty.expect("user: wait a long time");
    pty.send("/quit\r");
    assert_eq!(pty.wait(), Some(0));
    assert_eq!(env.requests().len(), 1);
}

#[test]
fn attach_shows_the_conversation_so_far() {
    let env = CliEnv::start(vec![Reply::text("An earlier answer.")]);
    let output = env.run(&["run", "--approve", "yolo", "an earlier question"]);
    assert_eq!(output.status.code(), Some(0));
    let id = cli_support::session_id(&cli_support::stderr(&output));
    // No session given: the most recent session of the directory.
    let mut pty = Pty::spawn(&env, &["attach"]);
    pty.expect(&format!("attached to {id}"));
    pty.expect("user: an earlier question");
    pty.expect("assistant: An earlier answer.");
    // Only once the prompt is drawn is the line editor reading in raw mode; a key sent
    // earlier may be discarded when it switches the terminal over.
    pty.expect("> ");
    pty.send("\x04");
    assert_eq!(pty.wait(), Some(0));
}

#[test]
fn rein_run_on_a_terminal_asks_for_approval() {
    let env = CliEnv::start(vec![
        Reply::tool_call("bash", json!({"command": "echo asked-and-allowed"})),
        Reply::text("Finished."),
    ]);
    let mut pty = Pty::spawn(&env, &["run", "--approve", "ask", "do it"]);
    pty.expect("approval needed: bash echo asked-and-allowed");
    pty.expect("allow?");
    pty.send("y\r");
    pty.expect("✓ bash: asked-and-allowed");
    pty.expect("Finished.");
    assert_eq!(pty.wait(), Some(0));
}
