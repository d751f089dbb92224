//! Secrets are never written: with an API key in the daemon's environment and debug logging
//! on, a session that runs tools and meets a provider error leaves the key in no file under
//! `REIN_HOME` (session files, logs, locks), in no event or response a client receives and
//! not on the daemon's stderr, while the key did reach the provider.

use rein_testkit::background::BackgroundFake;
use rein_testkit::connection::{RawConnection as Client, event_envelope};
use rein_testkit::daemon::DaemonFixture;
use rein_testkit::fake_provider::{Fault, Reply};
use serde_json::json;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

const CANARY: &str = "sk-canary-7f3a9c2e5b1d4f60-do-not-write";

/// Every file under `dir`, recursively, with its bytes.
fn files_under(dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        match entry.file_type() {
            Ok(kind) if kind.is_dir() => files_under(&path, out),
            Ok(kind) if kind.is_file() => {
                out.push((path.display().to_string(), std::fs::read(&path).unwrap_or_default()))
            }
            _ => {}
        }
    }
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|window| window == needle.as_bytes())
}

/// Runs one prompt to its end; returns every message the client received on the way.
fn run_prompt(client: &mut Client, session: &str, text: &str) -> Vec<String> {
    let mut received = Vec::new();
    let response = client.call_next("session/prompt", json!({"session_id": session, "text": text}));
    received.push(response.to_string());
    loop {
        let message = client
            .next_notification_within(Duration::from_secs(60))
            .unwrap_or_else(|e| panic!("the run did not settle: {e:?}"));
        received.push(message.to_string());
        if event_envelope(&message).is_some_and(|e| e["event"]["kind"] == "settled") {
            return received;
        }
    }
}

#[test]
fn the_api_key_reaches_the_provider_and_nothing_else() {
    let project = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
    std::fs::write(project.path().join("notes.txt"), "some notes\n").unwrap_or_default();
    let fake = BackgroundFake::start(vec![
        Reply::tool_call("read", json!({"path": "notes.txt"})),
        // A command that prints its environment must not see the key.
        Reply::tool_call("bash", json!({"command": "env; echo env-printed"})),
        Reply::text("read them"),
        Reply::fault(Fault::ServerError),
    ]);
    let daemon = DaemonFixture::new();
    let config = format!(
        "model = \"local/test-model\"\napproval_policy = \"yolo\"\n\n[providers.local]\n\
         api = \"openai-chat\"\nbase_url = \"{}\"\napi_key_env = \"REIN_CANARY_KEY\"\n\n\
         [retry]\nmax_retries = 0\n",
        fake.base_url()
    );
    std::fs::write(daemon.home().join("config.toml"), config).unwrap_or_default();
    let stderr_dir = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
    let stderr_path = stderr_dir.path().join("reind.stderr");
    let stderr = std::fs::File::create(&stderr_path).unwrap_or_else(|e| panic!("stderr: {e}"));
    let mut child = daemon
        .reind()
        .arg("--foreground")
        .env("REIN_CANARY_KEY", CANARY)
        .env("RUST_LOG", "debug")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start reind: {e}"));
    daemon.wait_until_answering();

    let mut client = Client::connect_as(daemon.socket(), "secrets");
    let state = client.call_next_ok("session/create", json!({"cwd": project.path()}));
    let session = state["session_id"].as_str().unwrap_or_default().to_string();
    client.subscribe(&session, None);
    let mut received = run_prompt(&mut client, &session, "read the notes");
    received.extend(run_prompt(&mut client, &session, "and now fail"));
    for method in ["session/messages", "session/tree", "session/state"] {
        received.push(client.call_next_ok(method, json!({"session_id": session})).to_string());
    }
    let export =
        client.call_next_ok("session/export", json!({"session_id": session, "format": "jsonl"}));
    received.push(export.to_string());
    client.call_next_ok("daemon/shutdown", json!({}));
    drop(client);
    let _ = child.wait();

    let requests = fake.requests();
    assert!(
        requests.iter().any(|r| r.header("authorization") == Some(&format!("Bearer {CANARY}"))),
        "the key was not sent to the provider, so this test proves nothing"
    );
    assert!(
        received.iter().any(|m| m.contains("env-printed")),
        "the env command did not run, so this test proves nothing for it"
    );
    for message in &received {
        assert!(!message.contains(CANARY), "a client received the key: {message}");
    }
    let mut files = Vec::new();
    files_under(daemon.home(), &mut files);
    files_under(project.path(), &mut files);
    files
        .push((stderr_path.display().to_string(), std::fs::read(&stderr_path).unwrap_or_default()));
    assert!(files.iter().any(|(path, _)| path.ends_with(".jsonl")), "no session file: {files:?}");
    for (path, bytes) in &files {
        assert!(!contains(bytes, CANARY), "the key was written to {path}");
    }
}
