//! End-to-end: the line-mode client (`rein` without a terminal) runs the same slash commands
//! as the full-screen one, through the one implementation both share: `/fork`, `/new`,
//! `/resume` (a numbered list, then `/resume N`), `/clear` and `/export FILE`.

#![allow(clippy::unwrap_used)] // test helpers: a failure should stop the test

mod cli_support;

use cli_support::CliEnv;
use rein_testkit::fake_provider::Reply;
use serde_json::json;
use std::io::{Read, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// `rein` with piped standard streams, typed into line by line.
struct LineClient {
    child: Child,
    stdin: ChildStdin,
    output: Arc<Mutex<String>>,
    seen: usize,
}

impl LineClient {
    fn spawn(env: &CliEnv, args: &[&str]) -> Self {
        let mut child = env
            .rein()
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let output = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&output);
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buffer) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().push_str(&String::from_utf8_lossy(&buffer[..n]));
            }
        });
        Self { child, stdin, output, seen: 0 }
    }

    fn type_line(&mut self, line: &str) {
        self.stdin.write_all(format!("{line}\n").as_bytes()).unwrap();
        self.stdin.flush().unwrap();
    }

    /// Waits until `needle` is printed after what earlier expects consumed; returns the
    /// output from there up to the end of the line holding it.
    fn expect(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + cli_support::EXPECT_TIMEOUT;
        loop {
            {
                let output = self.output.lock().unwrap();
                if let Some(at) = output[self.seen..].find(needle) {
                    let start = self.seen;
                    let end = self.seen + at + needle.len();
                    let end = output[end..].find('\n').map_or(output.len(), |n| end + n);
                    self.seen = end;
                    return output[start..end].to_string();
                }
                assert!(Instant::now() < deadline, "no {needle:?} in:\n{}", *output);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for LineClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn line_mode_switches_sessions_with_the_shared_slash_commands() {
    let env = CliEnv::start(vec![Reply::text("First answer.")]);
    let mut rein = LineClient::spawn(&env, &["--approve", "yolo"]);
    let banner = rein.expect("/help for commands");
    let first = cli_support::banner_id(&banner);
    rein.type_line("first question");
    rein.expect("First answer.");
    rein.expect("done:");

    // /fork: a copy holding the conversation, which the client now follows.
    rein.type_line("/fork");
    let forked = rein.expect("forked into ");
    let fork = forked.rsplit("forked into ").next().unwrap_or_default().trim().to_string();
    assert_ne!(fork, first);
    let copied = env.messages(&fork);
    assert_eq!(copied.len(), 2, "{copied:?}");

    // /export FILE writes the session shown (the fork).
    rein.type_line("/export fork.md");
    rein.expect("exported to fork.md");
    let exported = std::fs::read_to_string(env.project.path().join("fork.md")).unwrap();
    assert!(exported.contains("first question"), "{exported}");

    // /new, then /resume lists the two sessions with a prompt and /resume N opens one.
    rein.type_line("/new");
    let created = rein.expect("rein: new session ");
    let new = cli_support::banner_id(&created);
    rein.type_line("/resume");
    let listed = rein.expect("sessions of this directory (/resume N opens one):");
    let list = listed + &rein.expect(&first);
    assert!(!list.contains(&new), "the empty new session was listed: {list}");
    let number = list
        .lines()
        .find(|line| line.contains(&first))
        .and_then(|line| line.split_whitespace().next())
        .unwrap_or_default()
        .to_string();
    rein.type_line(&format!("/resume {number}"));
    rein.expect(&format!("rein: switched to {first}"));
    rein.expect("first question");
    // The new session, never prompted, was removed when the client moved on.
    let listed = env.rpc_ok("session/list", json!({}));
    let ids: Vec<&str> = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["session_id"].as_str())
        .collect();
    assert!(!ids.contains(&new.as_str()), "{ids:?}");
    assert!(ids.contains(&first.as_str()) && ids.contains(&fork.as_str()), "{ids:?}");

    // /clear has no screen to clear here, and says so.
    rein.type_line("/clear");
    rein.expect("not a terminal: nothing to clear");
    rein.type_line("/status");
    rein.expect(&format!("session {first}"));
    rein.type_line("/quit");
    let status = rein.child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
}
