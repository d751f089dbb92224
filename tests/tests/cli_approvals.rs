//! End-to-end: approvals across terminals with the real full-screen `rein` in tmux. The
//! terminal that could answer is closed while a request waits; a terminal that attaches
//! afterwards is shown the waiting request, answers it, and the answer names that terminal's
//! client (name, pid, tty). A denial reason being typed when another terminal answers is
//! dropped, never sent as a prompt.

mod cli_support;

use cli_support::{CliEnv, Tmux, banner_id};
use rein_testkit::fake_provider::Reply;
use serde_json::json;

#[test]
fn a_terminal_attaching_late_is_shown_the_waiting_approval_and_answers_it() {
    if !Tmux::available() {
        return;
    }
    let env = CliEnv::start(vec![
        Reply::tool_call("bash", json!({"command": "echo late-approved"})),
        Reply::text("Finished after the late answer."),
    ]);
    let first = Tmux::spawn(&env, &["--approve", "ask"], (100, 30), &[]);
    let id = banner_id(&first.expect("/help for commands"));
    assert!(!id.is_empty(), "{}", first.screen());
    first.type_text("run it");
    first.press(&["Enter"]);
    let dialog = first.expect("[y] allow once");
    assert!(dialog.contains("approval needed: bash"), "{dialog}");
    // The terminal goes away without answering.
    drop(first);

    let second = Tmux::spawn(&env, &["attach", &id], (100, 30), &[]);
    second.expect(&format!("attached to {id}"));
    let dialog = second.expect("[y] allow once");
    assert!(dialog.contains("$ echo late-approved"), "{dialog}");
    second.press(&["y"]);
    second.expect(&format!("approved once by rein (pid {}, /dev/pts/", second.pid()));
    second.expect("✓ bash echo late-approved");
    second.expect("Finished after the late answer.");
    second.type_text("/quit");
    second.press(&["Enter"]);
    assert_eq!(second.wait(), Some(0));
}

#[test]
fn a_reason_typed_while_another_terminal_answers_is_not_sent_as_a_prompt() {
    if !Tmux::available() {
        return;
    }
    let env = CliEnv::start(vec![
        Reply::tool_call("bash", json!({"command": "echo answered-elsewhere"})),
        Reply::text("Ran it."),
    ]);
    let first = Tmux::spawn(&env, &["--approve", "ask"], (100, 30), &[]);
    let id = banner_id(&first.expect("/help for commands"));
    first.type_text("run it");
    first.press(&["Enter"]);
    first.expect("[y] allow once");
    let second = Tmux::spawn(&env, &["attach", &id], (100, 30), &[]);
    second.expect("[y] allow once");
    // The first terminal starts denying with a reason; the second allows meanwhile.
    first.press(&["r"]);
    first.type_text("too risky");
    first.expect("reason: too risky");
    second.press(&["y"]);
    first.expect("the reason you were typing was dropped");
    first.press(&["Enter"]);
    first.expect("Ran it.");
    let users: Vec<_> = env.messages(&id).into_iter().filter(|m| m["role"] == "user").collect();
    assert_eq!(users.len(), 1, "the reason became a prompt: {users:?}");
    assert_eq!(env.requests().len(), 2);
    for term in [&first, &second] {
        term.press(&["C-d"]);
        assert_eq!(term.wait(), Some(0));
    }
}
