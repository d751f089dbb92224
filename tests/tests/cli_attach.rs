//! End-to-end: the full-screen interactive client in a real terminal (tmux): a prompt
//! streams, typing during a run steers it, an approval is answered in its dialog, a second
//! terminal sees the same run, Ctrl-C cancels a run and then leaves, and attach shows the
//! conversation so far. `rein run` on a terminal still asks on its own line.

mod cli_support;

use cli_support::{CliEnv, Pty, Tmux, banner_id, request_mentions};
use rein_testkit::fake_provider::Reply;
use serde_json::json;

/// A 100x30 terminal.
const SIZE: (u16, u16) = (100, 30);

#[test]
fn a_prompt_streams_and_typing_during_the_run_steers_it() {
    if !Tmux::available() {
        return;
    }
    let env = CliEnv::start(vec![
        Reply::tool_call("bash", json!({"command": "sleep 2"})),
        Reply::text("Steered answer arrived."),
    ]);
    let term = Tmux::spawn(&env, &["--approve", "yolo"], SIZE, &[]);
    term.expect("/help for commands");
    term.type_text("start the work");
    term.press(&["Enter"]);
    term.expect("→ bash sleep 2");
    term.type_text("also mention pineapples");
    term.press(&["Enter"]);
    term.expect("Steered answer arrived.");
    let requests = env.requests();
    assert_eq!(requests.len(), 2);
    assert!(request_mentions(&requests[1], "also mention pineapples"), "steering not delivered");
    // Ctrl-C twice when idle leaves.
    term.press(&["C-c"]);
    term.expect("Ctrl-C again");
    term.press(&["C-c"]);
    assert_eq!(term.wait(), Some(0));
}

#[test]
fn an_approval_is_answered_inline() {
    if !Tmux::available() {
        return;
    }
    let env = CliEnv::start(vec![
        Reply::tool_call("bash", json!({"command": "echo approved-output"})),
        Reply::text("All done."),
    ]);
    let term = Tmux::spawn(&env, &["--approve", "ask"], SIZE, &[]);
    term.expect("/help for commands");
    term.type_text("run it");
    term.press(&["Enter"]);
    let dialog = term.expect("[y] allow once");
    assert!(dialog.contains("$ echo approved-output"), "{dialog}");
    // One key answers; nothing is typed into the input.
    term.press(&["y"]);
    term.expect("approved once by rein (pid ");
    term.expect("✓ bash echo approved-output");
    let screen = term.expect("All done.");
    assert!(!screen.contains("[y] allow once"), "the dialog stayed:\n{screen}");
    assert_eq!(env.requests().len(), 2, "the y became a prompt");
    term.type_text("/quit");
    term.press(&["Enter"]);
    assert_eq!(term.wait(), Some(0));
}

#[test]
fn a_second_terminal_sees_the_same_run() {
    if !Tmux::available() {
        return;
    }
    let env = CliEnv::start(vec![Reply::text("Shared answer for both.")]);
    let first = Tmux::spawn(&env, &["--approve", "yolo"], SIZE, &[]);
    let id = banner_id(&first.expect("/help for commands"));
    assert!(!id.is_empty(), "{}", first.screen());
    let second = Tmux::spawn(&env, &["attach", &id], SIZE, &[]);
    second.expect(&format!("attached to {id}"));
    first.type_text("hello from the first terminal");
    first.press(&["Enter"]);
    let screen = first.expect("Shared answer for both.");
    // The prompt is shown once, from the session's event (no local echo).
    assert_eq!(screen.matches("hello from the first terminal").count(), 1, "{screen}");
    second.expect("› hello from the first terminal");
    second.expect("Shared answer for both.");
    for term in [&first, &second] {
        term.type_text("/quit");
        term.press(&["Enter"]);
        assert_eq!(term.wait(), Some(0));
    }
}

#[test]
fn ctrl_c_cancels_a_running_run() {
    if !Tmux::available() {
        return;
    }
    let env = CliEnv::start(vec![Reply::tool_call("bash", json!({"command": "sleep 30"}))]);
    let term = Tmux::spawn(&env, &["--approve", "yolo"], SIZE, &[]);
    term.expect("/help for commands");
    term.type_text("wait a long time");
    term.press(&["Enter"]);
    term.expect("→ bash sleep 30");
    term.expect("running `bash`");
    term.press(&["C-c"]);
    term.expect("cancelling the run");
    term.expect("run cancelled");
    term.type_text("/tree");
    term.press(&["Enter"]);
    term.expect("user: wait a long time");
    term.type_text("/quit");
    term.press(&["Enter"]);
    assert_eq!(term.wait(), Some(0));
    assert_eq!(env.requests().len(), 1);
}

#[test]
fn ctrl_c_asks_once_then_cancels_and_drops_the_queue() {
    if !Tmux::available() {
        return;
    }
    let env = CliEnv::start(vec![Reply::tool_call("bash", json!({"command": "sleep 30"}))]);
    let term = Tmux::spawn(&env, &["--approve", "yolo"], SIZE, &[]);
    let id = banner_id(&term.expect("/help for commands"));
    term.type_text("wait a long time");
    term.press(&["Enter"]);
    term.expect("→ bash sleep 30");
    // Typed during the run: a steering message, queued.
    term.type_text("and then this");
    term.press(&["Enter"]);
    term.expect("queue 1 steer, 0 follow-up");
    term.press(&["C-c"]);
    term.expect("Ctrl-C again cancels the run and drops 1 queued message(s); Esc keeps them");
    term.press(&["C-c"]);
    term.expect("cancelling the run and dropping 1 queued message(s)");
    term.expect("run cancelled");
    // Nothing queued started a new run: the session is idle with one prompt.
    let state = env.rpc_ok("session/state", json!({"session_id": id}));
    assert_eq!(state["running"], false, "{state}");
    assert_eq!(state["queues"], json!({"steering": [], "follow_up": []}), "{state}");
    let users: Vec<_> = env.messages(&id).into_iter().filter(|m| m["role"] == "user").collect();
    assert_eq!(users.len(), 1, "{users:?}");
    assert_eq!(env.requests().len(), 1);
    term.press(&["C-d"]);
    assert_eq!(term.wait(), Some(0));
}

#[test]
fn esc_cancels_the_run_and_the_queued_message_runs_next() {
    if !Tmux::available() {
        return;
    }
    let env = CliEnv::start(vec![
        Reply::tool_call("bash", json!({"command": "sleep 30"})),
        Reply::text("The queued message ran."),
    ]);
    let term = Tmux::spawn(&env, &["--approve", "yolo"], SIZE, &[]);
    term.expect("/help for commands");
    term.type_text("wait a long time");
    term.press(&["Enter"]);
    term.expect("→ bash sleep 30");
    term.type_text("then say it ran");
    term.press(&["Enter"]);
    term.expect("queue 1 steer, 0 follow-up");
    term.press(&["Escape"]);
    term.expect("cancelling the run…");
    term.expect("The queued message ran.");
    let requests = env.requests();
    assert_eq!(requests.len(), 2);
    assert!(request_mentions(&requests[1], "then say it ran"), "the queue was not kept");
    term.press(&["C-d"]);
    assert_eq!(term.wait(), Some(0));
}

#[test]
fn attach_shows_the_conversation_so_far() {
    if !Tmux::available() {
        return;
    }
    let env = CliEnv::start(vec![Reply::text("An earlier answer.")]);
    let output = env.run(&["run", "--approve", "yolo", "an earlier question"]);
    assert_eq!(output.status.code(), Some(0));
    let id = cli_support::session_id(&cli_support::stderr(&output));
    // No session given: the most recent session of the directory.
    let term = Tmux::spawn(&env, &["attach"], SIZE, &[]);
    term.expect(&format!("attached to {id}"));
    term.expect("› an earlier question");
    term.expect("An earlier answer.");
    term.press(&["C-d"]);
    assert_eq!(term.wait(), Some(0));
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

#[test]
fn without_a_terminal_rein_falls_back_to_line_mode() {
    let env = CliEnv::start(vec![]);
    let mut child = env
        .rein()
        .args(["--approve", "yolo"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"/status\n").unwrap();
    }
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", cli_support::stderr(&output));
    let out = cli_support::stdout(&output);
    assert!(out.contains("/help for commands"), "{out}");
    assert!(out.contains("approval policy yolo"), "{out}");
    // Nothing was prompted, so the session it created is gone again.
    let listed = env.rpc_ok("session/list", json!({}));
    assert_eq!(listed["sessions"], json!([]), "{listed}");
}
