//! End-to-end: the full-screen client (`rein`, `rein attach`) in real terminals (tmux) against
//! the real daemon and the scripted provider: text and tool output stream as they arrive, an
//! edit's approval dialog shows its diff in every attached terminal (also one attaching while
//! it waits), an answer in one terminal closes the dialog in the other and names who answered,
//! a stray `y` after that is not sent as a prompt, the client reconnects after `kill -9` of
//! the daemon and after its connection dropped while the daemon lived on (replayed, or filled
//! from the session when the replay no longer reaches back), keys follow `tui.toml`, and
//! `NO_COLOR`, a non-UTF-8 locale and an 80x24 terminal are respected. Also: a daemon left
//! from an older release is named with how to restart it, a failed first prompt leaves no
//! session, the slash commands (`/rename`, `/approve`, `/status`, `/undo`, `/fork`, `/new`,
//! the `/resume` picker), Tab completion, `@file` and image mentions, reasoning folded until
//! Ctrl-T, and the prompt history kept across runs.
//!
//! Built with `--release`, the tests drive the release binaries (the testkit builds the
//! profile the tests are built with).

mod cli_support;

use cli_support::{CliEnv, Tmux, banner_id, stop_daemon};
use rein_testkit::fake_provider::Reply;
use rein_testkit::socket_proxy::SocketProxy;
use serde_json::json;

const SIZE: (u16, u16) = (100, 30);

fn slow_text(text: &str) -> Reply {
    Reply { delay_ms: Some(60), chunk_size: Some(40), delta_size: Some(4), ..Reply::text(text) }
}

/// Leaves with Ctrl-D on an empty input; rein exits 0.
fn leave(term: &Tmux) {
    term.press(&["C-d"]);
    assert_eq!(term.wait(), Some(0));
}

/// With `REIN_TUI_CAPTURE=DIR`, keeps the screen as `DIR/NAME.txt` (the screens in
/// docs/cli.md come from here).
fn capture(name: &str, screen: &str) {
    if let Ok(dir) = std::env::var("REIN_TUI_CAPTURE") {
        let path = std::path::Path::new(&dir).join(format!("{name}.txt"));
        std::fs::write(&path, screen).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

/// Whether `screen` (captured with colours) paints `text` in ANSI colour `colour`, as tmux
/// writes it (`ESC[3Nm` or `ESC[38;5;Nm`).
fn painted(screen: &str, text: &str, colour: u8) -> bool {
    screen.contains(&format!("\u{1b}[3{colour}m{text}"))
        || screen.contains(&format!("\u{1b}[38;5;{colour}m{text}"))
}

#[test]
fn text_and_tool_output_stream_as_they_arrive() {
    if !Tmux::available() {
        return;
    }
    let env = CliEnv::start(vec![
        Reply::tool_call(
            "bash",
            json!({"command": "printf 'out-%s\\n' one; sleep 2; printf 'out-%s\\n' two"}),
        ),
        slow_text(
            "Streaming begins here and the paragraph keeps going for a while until the finale.",
        ),
    ]);
    let term = Tmux::spawn(&env, &["--approve", "yolo"], SIZE, &[]);
    term.expect("/help for commands");
    term.type_text("stream please");
    term.press(&["Enter"]);
    // The command's first line is on screen while it still runs.
    let running = term.expect("│ out-one");
    assert!(running.contains("→ bash printf"), "{running}");
    assert!(running.contains("running `bash`"), "{running}");
    assert!(!running.contains("out-two"), "{running}");
    term.expect("✓ bash printf");
    // The answer shows its first words before its last one arrived.
    let partial = term.expect("Streaming");
    assert!(!partial.contains("finale"), "the answer arrived all at once:\n{partial}");
    term.expect("finale.");
    leave(&term);
}

#[test]
fn an_edit_approval_shows_its_diff_everywhere_and_one_answer_closes_it() {
    if !Tmux::available() {
        return;
    }
    let env = CliEnv::start(vec![
        Reply::tool_call(
            "edit",
            json!({"path": "app.py", "edits": [{"oldText": "return 'hi'", "newText": "return 'hello'"}]}),
        ),
        Reply::text("Edited the greeting."),
    ]);
    std::fs::write(env.project.path().join("app.py"), "def greet():\n    return 'hi'\n").unwrap();
    let first = Tmux::spawn(&env, &["--approve", "ask"], SIZE, &[("NO_COLOR", "")]);
    let id = banner_id(&first.expect("/help for commands"));
    first.type_text("change the greeting");
    first.press(&["Enter"]);
    let dialog = first.expect("[y] allow once");
    capture("edit-approval", &dialog);
    assert!(dialog.contains("edit app.py (+1 -1)?"), "{dialog}");
    assert!(dialog.contains("-    return 'hi'"), "{dialog}");
    assert!(dialog.contains("+    return 'hello'"), "{dialog}");
    // The added line is green, the removed one red.
    let coloured = first.screen_with_colours();
    assert!(painted(&coloured, "  +    return 'hello'", 2), "{coloured}");
    assert!(painted(&coloured, "  -    return 'hi'", 1), "{coloured}");

    // A terminal attaching while the request waits is shown it too, and answers it.
    let second = Tmux::spawn(&env, &["attach", &id], SIZE, &[]);
    let late = second.expect("[y] allow once");
    assert!(late.contains("+    return 'hello'"), "{late}");
    let second_pid = second.pid();
    second.press(&["y"]);
    let answered = format!("approved once by rein (pid {second_pid}, /dev/pts/");
    second.expect(&answered);
    // The dialog is gone in the first terminal, which says who answered.
    let screen = first.expect(&answered);
    assert!(!screen.contains("[y] allow once"), "{screen}");
    // A y typed there now is held back, not sent to the model.
    first.type_text("y");
    first.press(&["Enter"]);
    first.expect("already answered");
    first.expect("Edited the greeting.");
    let edited = first.expect("✓ edit app.py");
    assert!(edited.contains("+1 -1"), "{edited}");
    assert_eq!(
        std::fs::read_to_string(env.project.path().join("app.py")).unwrap(),
        "def greet():\n    return 'hello'\n"
    );
    assert_eq!(env.requests().len(), 2);
    let users: Vec<_> = env.messages(&id).into_iter().filter(|m| m["role"] == "user").collect();
    assert_eq!(users.len(), 1, "a stray y became a prompt: {users:?}");
    // The held-back y is still in the first input box; Ctrl-U clears it.
    first.press(&["C-u"]);
    for term in [&first, &second] {
        leave(term);
    }
}

#[test]
fn the_client_reconnects_after_the_daemon_is_killed() {
    if !Tmux::available() {
        return;
    }
    let mut env =
        CliEnv::start(vec![Reply::text("Before the crash."), Reply::text("After the crash.")]);
    let term = Tmux::spawn(&env, &["--approve", "yolo"], SIZE, &[]);
    term.expect("/help for commands");
    term.type_text("first question");
    term.press(&["Enter"]);
    term.expect("Before the crash.");
    env.daemon.kill();
    term.expect("lost the daemon");
    // The client starts a new daemon and opens the session again.
    term.expect("reconnected: the daemon had restarted");
    term.type_text("second question");
    term.press(&["Enter"]);
    let screen = term.expect("After the crash.");
    assert!(screen.contains("Before the crash."), "{screen}");
    leave(&term);
    stop_daemon(&env);
}

#[test]
fn markdown_and_tables_fit_an_80x24_terminal_without_colour() {
    if !Tmux::available() {
        return;
    }
    let answer = "# Result\n\nThe **parser** now handles `empty` input.\n\n| file | change |\n|---|---|\n| lexer.rs | new guard |\n\n```rust\nfn main() {}\n```\n";
    let env = CliEnv::start(vec![Reply::text(answer)]);
    let term = Tmux::spawn(&env, &["--approve", "yolo"], (80, 24), &[]);
    term.expect("/help for commands");
    term.type_text("summarize");
    term.press(&["Enter"]);
    term.expect("done: 1 turn");
    let screen = term.expect("lexer.rs │ new guard");
    assert!(screen.contains("# Result"), "{screen}");
    assert!(screen.contains("The parser now handles empty input."), "{screen}");
    assert!(screen.contains("  fn main() {}"), "{screen}");
    assert!(screen.contains("approve yolo"), "{screen}");
    // The status line, the input and the hints keep their rows at the bottom.
    let rows: Vec<&str> = screen.lines().collect();
    assert_eq!(rows.len(), 24, "{screen}");
    assert!(rows[20].starts_with(" ready · "), "{screen}");
    assert_eq!(rows[22].trim_end(), "›", "{screen}");
    assert!(rows[23].starts_with("Enter sends"), "{screen}");
    // NO_COLOR: no colours at all (bold, dim and reverse remain).
    let coloured = term.screen_with_colours();
    assert!((0..8).all(|colour| !coloured.contains(&format!("\u{1b}[3{colour}m"))), "{coloured}");
    assert!(!coloured.contains("\u{1b}[38;5;"), "{coloured}");
    capture("markdown-80x24", &screen);
    leave(&term);
}

#[test]
fn a_non_utf8_terminal_gets_ascii() {
    if !Tmux::available() {
        return;
    }
    let env = CliEnv::start(vec![
        Reply::tool_call("bash", json!({"command": "echo plain"})),
        Reply::text("Done — with a dash."),
    ]);
    let term = Tmux::spawn(&env, &["--approve", "yolo"], SIZE, &[("LANG", "C"), ("LC_ALL", "C")]);
    term.expect("/help for commands");
    term.type_text("go");
    term.press(&["Enter"]);
    let screen = term.expect("Done ? with a dash.");
    assert!(screen.contains("+ bash echo plain"), "{screen}");
    assert!(screen.is_ascii(), "{screen}");
    leave(&term);
}

#[test]
fn attach_without_a_session_offers_the_others_and_skips_empty_ones() {
    if !Tmux::available() {
        return;
    }
    let env = CliEnv::start(vec![Reply::text("Older answer."), Reply::text("Newer answer.")]);
    let older = env.run(&["run", "--approve", "yolo", "the older question"]);
    assert_eq!(older.status.code(), Some(0));
    let newer = env.run(&["run", "--approve", "yolo", "the newer question"]);
    assert_eq!(newer.status.code(), Some(0));
    let newer_id = cli_support::session_id(&cli_support::stderr(&newer));
    // An empty session, newest of all: neither attached to nor offered.
    let project = cli_support::path_str(&env.project_dir());
    env.rpc_ok("session/create", json!({"cwd": project}));
    let term = Tmux::spawn(&env, &["attach"], SIZE, &[]);
    term.expect(&format!("attached to {newer_id}"));
    let picker = term.expect("resume a session");
    assert!(picker.contains("the newer question"), "{picker}");
    assert!(picker.contains("the older question"), "{picker}");
    assert_eq!(picker.matches("  20").count(), 2, "only the two sessions with a prompt: {picker}");
    term.press(&["Down", "Enter"]);
    let screen = term.expect("Older answer.");
    assert!(screen.contains("› the older question"), "{screen}");
    leave(&term);
}

/// A client behind a proxy in front of the daemon's socket (so its connection can be cut),
/// after a first question was answered with "First answer."; returns the session id too.
fn answered_behind_a_proxy(env: &CliEnv) -> (Tmux, SocketProxy, tempfile::TempDir, String) {
    let dir = tempfile::Builder::new()
        .prefix("rein-proxy-")
        .tempdir()
        .unwrap_or_else(|e| panic!("cannot create a temp dir: {e}"));
    let proxy = SocketProxy::start(&dir.path().join("proxy.sock"), env.daemon.socket());
    let socket = cli_support::path_str(proxy.path());
    let term = Tmux::spawn(env, &["--approve", "yolo"], SIZE, &[("REIN_SOCKET", &socket)]);
    let id = banner_id(&term.expect("/help for commands"));
    term.type_text("first question");
    term.press(&["Enter"]);
    term.expect("First answer.");
    (term, proxy, dir, id)
}

/// Cuts the client's connection, has `rein run` prompt the session directly while the
/// client is away, and lets the client back in; returns the screen once it says so.
fn away_while(env: &CliEnv, term: &Tmux, proxy: &SocketProxy, id: &str, reconnected: &str) {
    proxy.cut();
    term.expect("lost the daemon");
    let away = env.run(&["run", "--approve", "yolo", "--session", id, "question while away"]);
    cli_support::assert_exit(&away, 0);
    proxy.restore();
    term.expect(reconnected);
}

#[test]
fn a_dropped_connection_follows_on_from_the_last_event_seen() {
    if !Tmux::available() {
        return;
    }
    let env = CliEnv::start(vec![
        Reply::text("First answer."),
        Reply::text("Answer while cut off."),
        Reply::text("Third answer."),
    ]);
    let (term, proxy, _dir, id) = answered_behind_a_proxy(&env);
    let before = proxy.forwarded();
    away_while(&env, &term, &proxy, &id, "following on from where this client left off");
    assert!(proxy.forwarded() > before, "the client did not connect again");
    // The daemon replayed what the client missed: the other client's prompt and its answer.
    let screen = term.expect("Answer while cut off.");
    capture("reconnect", &screen);
    assert!(screen.contains("› question while away"), "{screen}");
    assert!(!screen.contains("fell behind"), "{screen}");
    // And the session goes on from here.
    term.type_text("third question");
    term.press(&["Enter"]);
    let screen = term.expect("Third answer.");
    assert!(screen.contains("First answer."), "{screen}");
    leave(&term);
    assert_eq!(env.requests().len(), 3);
}

#[test]
fn a_long_disconnection_is_filled_from_the_session_when_the_replay_no_longer_reaches() {
    if !Tmux::available() {
        return;
    }
    let long = "The answer given while the terminal was away goes on for many small deltas. ";
    let mut env = CliEnv::configured(vec![
        Reply::text("First answer."),
        Reply { delta_size: Some(3), ..Reply::text(long.repeat(4)) },
        Reply::text("Third answer."),
    ]);
    // A replay window of 32 events: room for a short answer followed live, not for the
    // missed run of about a hundred deltas.
    let config = env.daemon.home().join("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\n[sessions]\nreplay_buffer = 32\n");
    std::fs::write(&config, text).unwrap();
    env.daemon.spawn();
    let (term, proxy, _dir, id) = answered_behind_a_proxy(&env);
    proxy.cut();
    term.expect("lost the daemon");
    // Prompted by a call that does not follow the run (so nothing else can fall behind).
    env.rpc_ok("session/prompt", json!({"session_id": id, "text": "question while away"}));
    let deadline = std::time::Instant::now() + cli_support::EXPECT_TIMEOUT;
    while env.messages(&id).len() < 4 {
        assert!(std::time::Instant::now() < deadline, "the run while away did not end");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    proxy.restore();
    term.expect("following on from where this client left off");
    // The daemon said the events are gone; the client shows what the session recorded.
    let screen = term.expect("entries recovered from the session");
    assert!(screen.contains("fell behind the event stream"), "{screen}");
    let screen = term.expect("> question while away");
    assert!(screen.contains("many small deltas"), "{screen}");
    // The client still follows the session after the repair.
    term.type_text("third question");
    term.press(&["Enter"]);
    term.expect("Third answer.");
    leave(&term);
}

#[test]
fn keys_follow_tui_toml_and_a_mistake_there_is_named() {
    if !Tmux::available() {
        return;
    }
    let env = CliEnv::start(vec![Reply::text("Two lines received.")]);
    let keys = env.daemon.home().join("tui.toml");
    std::fs::write(&keys, "[keys]\nsubmit = \"ctrl-s\"\nnewline = \"enter\"\n").unwrap();
    let term = Tmux::spawn(&env, &["--approve", "yolo"], SIZE, &[]);
    let screen = term.expect("/help for commands");
    assert!(screen.contains("Ctrl-S sends · Enter new line"), "{screen}");
    term.type_text("first line");
    term.press(&["Enter"]);
    term.type_text("second line");
    term.press(&["C-s"]);
    term.expect("Two lines received.");
    let id = banner_id(&term.screen());
    let users: Vec<_> = env.messages(&id).into_iter().filter(|m| m["role"] == "user").collect();
    assert_eq!(users.len(), 1, "{users:?}");
    assert_eq!(users[0]["content"][0]["text"], "first line\nsecond line");
    leave(&term);

    // A mistake stops rein before it takes the screen (a pseudo-terminal keeps all it wrote).
    std::fs::write(&keys, "[keys]\ncancle = \"esc\"\n").unwrap();
    let mut pty = cli_support::Pty::spawn(&env, &["--approve", "yolo"]);
    pty.expect("tui.toml: [keys] unknown action `cancle` (the actions are: submit,");
    assert_eq!(pty.wait(), Some(2));
}

/// A daemon of an older release on `socket`: it refuses this rein's protocol version in
/// `initialize`, as `reind` does when the major versions differ.
fn old_daemon(socket: &std::path::Path) {
    let listener = std::os::unix::net::UnixListener::bind(socket)
        .unwrap_or_else(|e| panic!("cannot bind {}: {e}", socket.display()));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            std::thread::spawn(move || {
                use std::io::{BufRead, Write};
                let Ok(mut writer) = stream.try_clone() else { return };
                for line in std::io::BufReader::new(stream).lines() {
                    let Ok(line) = line else { return };
                    let Ok(request) = serde_json::from_str::<serde_json::Value>(&line) else {
                        return;
                    };
                    let answer = json!({"jsonrpc": "2.0", "id": request["id"], "error": {
                        "code": -32011,
                        "message": "client speaks protocol 1.0 but this daemon speaks 0.9; upgrade the older side",
                        "data": {"kind": "incompatible_protocol"}}});
                    if writeln!(writer, "{answer}").is_err() {
                        return;
                    }
                }
            });
        }
    });
}

#[test]
fn a_daemon_left_from_an_older_release_is_named_with_how_to_restart_it() {
    if !Tmux::available() {
        return;
    }
    let env = CliEnv::configured(vec![]);
    let dir = tempfile::Builder::new().prefix("rein-old-").tempdir().unwrap();
    let socket = dir.path().join("old.sock");
    old_daemon(&socket);
    let socket = cli_support::path_str(&socket);
    let term = Tmux::spawn(&env, &[], SIZE, &[("REIN_SOCKET", &socket)]);
    let hint =
        "this daemon speaks 0.9; upgrade the older side; restart it with `rein daemon restart`";
    term.expect_that(hint, |screen| screen.replace('\n', "").contains(hint));
    assert_eq!(term.wait(), Some(1));
    // Every other command says the same.
    let output = env
        .rein()
        .args(["run", "hello"])
        .env("REIN_SOCKET", &socket)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    cli_support::assert_exit(&output, 1);
    assert!(cli_support::stderr(&output).contains(hint), "{}", cli_support::stderr(&output));
}

#[test]
fn a_failed_first_prompt_leaves_no_session_behind() {
    if !Tmux::available() {
        return;
    }
    let env = CliEnv::start(vec![rein_testkit::fake_provider::Reply::fault(
        rein_testkit::fake_provider::Fault::ServerError,
    )]);
    let term = Tmux::spawn(&env, &["--approve", "yolo"], SIZE, &[]);
    let id = banner_id(&term.expect("/help for commands"));
    term.type_text("doomed question");
    term.press(&["Enter"]);
    let screen = term.expect("model error:");
    assert!(screen.contains("› doomed question"), "{screen}");
    let listed = env.rpc_ok("session/list", json!({}));
    assert_eq!(listed["sessions"][0]["session_id"], json!(id), "{listed}");
    leave(&term);
    // Leaving removed the session nothing was answered in: attach and run -c cannot pick it.
    let listed = env.rpc_ok("session/list", json!({}));
    assert_eq!(listed["sessions"], json!([]), "the failed session stayed: {listed}");
}

#[test]
fn slash_commands_tab_completion_and_file_mentions_in_the_full_screen_client() {
    if !Tmux::available() {
        return;
    }
    let mut env = CliEnv::configured(vec![
        Reply::tool_call("bash", json!({"command": "echo rewritten > main.txt"})),
        Reply::text("Rewrote it."),
    ]);
    // A model that takes images, so the attached one reaches the provider.
    let config = env.daemon.home().join("config.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        text.replace("context_window = 32768", "context_window = 32768\nimages = true"),
    )
    .unwrap();
    env.daemon.spawn();
    let dir = env.project.path();
    std::fs::write(dir.join("main.txt"), "original\n").unwrap();
    std::fs::write(dir.join("notes-for-the-model.txt"), "the secret word is walnut\n").unwrap();
    // A tiny PNG (the signature is all the client looks at).
    std::fs::write(dir.join("shot.png"), b"\x89PNG\r\n\x1a\n").unwrap();
    let term = Tmux::spawn(&env, &["--approve", "ask"], SIZE, &[]);
    let id = banner_id(&term.expect("/help for commands"));
    term.expect("approve ask");

    // Tab completes a command; /rename names the session.
    term.type_text("/ren");
    term.press(&["Tab"]);
    term.expect("› /rename");
    term.type_text("parser work");
    term.expect("› /rename parser work");
    term.press(&["Enter"]);
    term.expect("session named \"parser work\"");
    assert_eq!(env.rpc_ok("session/state", json!({"session_id": id}))["name"], "parser work");
    // /approve changes the policy: the status line follows, and bash no longer asks.
    term.type_text("/approve yolo");
    term.press(&["Enter"]);
    term.expect("approval policy: yolo");
    term.expect("approve yolo");

    // Tab completes an @path; the mentioned file's text and the image go with the prompt.
    term.type_text("rewrite main.txt, see @notes-for");
    term.press(&["Tab"]);
    term.expect("@notes-for-the-model.txt");
    term.type_text("and @shot.png");
    term.expect("see @notes-for-the-model.txt and @shot.png");
    term.press(&["Enter"]);
    term.expect("Rewrote it.");
    let requests = env.requests();
    assert!(request_text(&requests[0]).contains("the secret word is walnut"), "{:?}", requests[0]);
    assert!(
        request_text(&requests[0]).contains("data:image/png;base64,iVBORw0KGgo"),
        "no image: {:?}",
        requests[0]
    );
    assert_eq!(std::fs::read_to_string(dir.join("main.txt")).unwrap(), "rewritten\n");

    // /status: context use, tokens and cost; /undo puts the file back.
    term.type_text("/status");
    term.press(&["Enter"]);
    let status = term.expect("  used ");
    assert!(status.contains("session ") && status.contains("\"parser work\""), "{status}");
    assert!(status.contains("  approval policy yolo"), "{status}");
    let context = term.expect_that("context N of M tokens (P%)", |screen| {
        screen.lines().any(|line| line.starts_with("  context ") && line.ends_with("%)"))
    });
    assert!(context.contains(" of 32768 tokens ("), "{context}");
    term.expect_that("used N tokens, $C", |screen| {
        screen.lines().any(|line| line.starts_with("  used ") && line.contains(" tokens, $"))
    });
    term.type_text("/undo");
    term.press(&["Enter"]);
    term.expect("restored the files to before turn 1");
    assert_eq!(std::fs::read_to_string(dir.join("main.txt")).unwrap(), "original\n");
    leave(&term);
}

/// The request's body as text (base64 and JSON escapes as sent).
fn request_text(request: &rein_testkit::fake_provider::RecordedRequest) -> String {
    request.body.to_string()
}

#[test]
fn fork_new_and_the_resume_picker_switch_sessions_in_the_full_screen_client() {
    if !Tmux::available() {
        return;
    }
    let env = CliEnv::start(vec![Reply::text("First answer.")]);
    let term = Tmux::spawn(&env, &["--approve", "yolo"], SIZE, &[]);
    let first = banner_id(&term.expect("/help for commands"));
    term.type_text("first question");
    term.press(&["Enter"]);
    term.expect("First answer.");
    term.type_text("/fork");
    term.press(&["Enter"]);
    let screen = term.expect("forked into ");
    let fork = screen
        .lines()
        .find_map(|line| line.strip_prefix("forked into "))
        .map(|id| id.trim().to_string())
        .unwrap_or_default();
    assert!(!fork.is_empty() && fork != first, "{screen}");
    assert_eq!(env.messages(&fork).len(), 2);
    // /new: an empty session, which the picker does not offer.
    term.type_text("/new");
    term.press(&["Enter"]);
    let screen = term.expect_that("a second banner", |s| s.matches("new session ").count() == 1);
    let new = banner_id(&screen);
    assert!(new != first && new != fork, "{screen}");
    term.type_text("/resume");
    term.press(&["Enter"]);
    let picker = term.expect("resume a session");
    assert_eq!(picker.matches("first question").count(), 2, "{picker}");
    assert_eq!(picker.matches("  20").count(), 2, "the empty session was offered: {picker}");
    term.press(&["Down", "Enter"]);
    let screen = term.expect("attached to ");
    let chosen = banner_id(&screen);
    assert!(chosen == first || chosen == fork, "{screen}");
    term.expect("First answer.");
    // Moving on removed the new session nobody prompted.
    let listed = env.rpc_ok("session/list", json!({}));
    let ids: Vec<&str> = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["session_id"].as_str())
        .collect();
    assert!(!ids.contains(&new.as_str()) && ids.len() == 2, "{ids:?}");
    leave(&term);
}

#[test]
fn reasoning_is_one_dimmed_line_until_ctrl_t_shows_it() {
    if !Tmux::available() {
        return;
    }
    let env = CliEnv::start(vec![Reply {
        thinking: Some("First I look at the parser.\nThen the lexer.".into()),
        ..Reply::text("Answer after thinking.")
    }]);
    let term = Tmux::spawn(&env, &["--approve", "yolo"], SIZE, &[]);
    term.expect("/help for commands");
    term.type_text("think first");
    term.press(&["Enter"]);
    let folded = term.expect("Answer after thinking.");
    assert!(
        folded.contains("thinking: First I look at the parser. (+1 lines, Ctrl-T shows)"),
        "{folded}"
    );
    assert!(!folded.contains("Then the lexer."), "{folded}");
    // Dimmed (NO_COLOR keeps emphasis).
    let painted = term.screen_with_colours();
    assert!(painted.contains("\u{1b}[2m"), "{painted}");
    term.press(&["C-t"]);
    let shown = term.expect("  Then the lexer.");
    assert!(shown.contains("  First I look at the parser."), "{shown}");
    term.press(&["C-t"]);
    term.expect_that("folded again", |screen| !screen.contains("Then the lexer."));
    leave(&term);
}

#[test]
fn prompts_are_remembered_across_runs_of_the_client() {
    if !Tmux::available() {
        return;
    }
    let env = CliEnv::start(vec![Reply::text("Noted.")]);
    let term = Tmux::spawn(&env, &["--approve", "yolo"], SIZE, &[]);
    term.expect("/help for commands");
    term.type_text("a prompt worth\nremembering");
    term.press(&["Enter"]);
    term.expect("Noted.");
    leave(&term);
    drop(term);
    let again = Tmux::spawn(&env, &["--approve", "yolo"], SIZE, &[]);
    again.expect("/help for commands");
    again.press(&["Up"]);
    let recalled = again.expect("› a prompt worth");
    assert!(recalled.contains("\n  remembering"), "{recalled}");
    again.press(&["C-u"]);
    leave(&again);
}
