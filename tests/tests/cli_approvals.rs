//! End-to-end: approvals across terminals with the real interactive `rein` on pseudo-
//! terminals. The terminal that could answer is closed while a request waits; a terminal that
//! attaches afterwards is shown the waiting request, answers it, and the answer names that
//! terminal's client (name, pid, tty).

mod cli_support;

use cli_support::{CliEnv, Pty};
use rein_testkit::fake_provider::Reply;
use serde_json::json;

#[test]
fn a_terminal_attaching_late_is_shown_the_waiting_approval_and_answers_it() {
    let env = CliEnv::start(vec![
        Reply::tool_call("bash", json!({"command": "echo late-approved"})),
        Reply::text("Finished after the late answer."),
    ]);
    let mut first = Pty::spawn(&env, &["--approve", "ask"]);
    let banner = first.expect("/help for commands");
    let id = banner.rsplit("session ").next().unwrap_or_default();
    let id = id.split_whitespace().next().unwrap_or_default().to_string();
    assert!(!id.is_empty(), "{banner}");
    first.expect("> ");
    first.send("run it\r");
    first.expect("approval needed: bash echo late-approved");
    // The terminal goes away without answering.
    drop(first);

    let mut second = Pty::spawn(&env, &["attach", &id]);
    second.expect(&format!("attached to {id}"));
    second.expect("approval needed: bash echo late-approved");
    second.expect("> ");
    second.send("y\r");
    let answered = second.expect("approved once by rein (pid ");
    assert!(!answered.is_empty());
    second.expect("/dev/pts/");
    second.expect("✓ bash: late-approved");
    second.expect("Finished after the late answer.");
    second.send("/quit\r");
    assert_eq!(second.wait(), Some(0));
}
