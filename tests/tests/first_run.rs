//! End-to-end: the first run without friction. A local model server found on its own, a key
//! stored once with `rein login` and used by a daemon that was already running, and
//! `rein doctor` naming each problem with its fix.

#![allow(clippy::unwrap_used)] // tests: a failure should stop the test

use rein_testkit::background::BackgroundFake;
use rein_testkit::daemon::{DaemonFixture, LOCAL_PROBE_PORTS};
use rein_testkit::fake_provider::Reply;
use serde_json::{Value, json};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Output, Stdio};

/// The variable the `keyed` provider of these tests reads its key from.
const KEY_VARIABLE: &str = "REIN_E2E_KEYED_API_KEY";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn port_of(base_url: &str) -> String {
    base_url.trim_end_matches("/v1").rsplit(':').next().unwrap().to_string()
}

fn run(mut command: Command, args: &[&str], stdin: &str) -> Output {
    command.args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    if let Err(error) = child.stdin.take().unwrap().write_all(stdin.as_bytes()) {
        // A command that ends without reading its input (a run refused at once) closes the
        // pipe first; what it printed is still checked.
        assert_eq!(error.kind(), std::io::ErrorKind::BrokenPipe, "{error}");
    }
    child.wait_with_output().unwrap()
}

/// Stops a daemon that `rein` started in the background (the fixture only kills its own).
struct StopOnDrop<'a>(&'a DaemonFixture);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        let _ = self.0.run_rein(&["daemon", "stop"]);
    }
}

#[test]
fn with_nothing_set_up_a_local_server_answers_the_first_prompt() {
    let fake = BackgroundFake::start(vec![Reply::text("hello from the local server")]);
    let daemon = DaemonFixture::new();
    let _stop = StopOnDrop(&daemon);
    let project = tempfile::tempdir().unwrap();
    let port = port_of(&fake.base_url());
    let rein = || {
        let mut command = daemon.rein();
        command.env(LOCAL_PROBE_PORTS, &port).current_dir(project.path());
        command
    };
    // No config.toml, no key: `rein run` starts the daemon, which finds the server.
    assert!(!daemon.home().join("config.toml").exists());
    let output = run(rein(), &["run", "hi"], "");
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("hello from the local server"), "{stdout}");
    let base_url = format!("http://127.0.0.1:{port}/v1");
    assert!(
        stderr.contains("using an OpenAI-compatible server at") && stderr.contains(&base_url),
        "{stderr}"
    );
    assert!(stderr.contains("local/fake-model"), "{stderr}");
    let requests = fake.requests();
    assert!(requests.iter().any(|r| r.method == "GET" && r.path == "/v1/models"));
    let chat = requests.iter().find(|r| r.path == "/v1/chat/completions").unwrap();
    assert_eq!(chat.body["model"], "fake-model");

    // The daemon says which server and model it chose.
    let status = run(rein(), &["daemon", "status"], "");
    let shown = text(&status.stdout);
    assert!(
        shown.contains(&format!(
            "local model: an OpenAI-compatible server at {base_url} (default local/fake-model)"
        )),
        "{shown}"
    );
    let status = run(rein(), &["daemon", "status", "--json"], "");
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["local_server"]["model"], "local/fake-model");
    assert_eq!(status["local_server"]["base_url"], base_url.as_str());
    assert_eq!(status["local_server"]["models"], json!(["fake-model"]));

    // `rein models` lists what the server offers, as the default.
    let models = run(rein(), &["models"], "");
    let listed = text(&models.stdout);
    assert!(listed.contains("default: local/fake-model"), "{listed}");
    assert!(listed.contains("* local/fake-model"), "{listed}");
    assert!(listed.contains("anthropic/claude-sonnet-4-5"), "{listed}");
}

#[test]
fn a_configured_model_or_key_means_no_probing() {
    let fake = BackgroundFake::start(vec![]);
    let mut daemon = DaemonFixture::new();
    std::fs::write(daemon.home().join("config.toml"), fake.config("")).unwrap();
    let port = port_of(&fake.base_url());
    daemon.spawn_with(|command| {
        command.env(LOCAL_PROBE_PORTS, &port);
    });
    let info = daemon.connect().call_ok(1, "daemon/info", json!({}));
    assert!(info.get("local_server").is_none(), "{info}");
    assert!(fake.requests().is_empty(), "nothing was probed");
}

fn keyed_config(base_url: &str) -> String {
    format!(
        "model = \"keyed/test-model\"\n\n[providers.keyed]\napi = \"openai-chat\"\nbase_url = \"{base_url}\"\napi_key_env = \"{KEY_VARIABLE}\"\n\n[retry]\nmax_retries = 0\n"
    )
}

#[test]
fn login_gives_a_running_daemon_its_key_and_logout_takes_it_back() {
    let secret = "sk-e2e-stored-0123456789";
    let fake = BackgroundFake::start(vec![
        Reply::tool_call("bash", json!({"command": "env; echo done"})),
        Reply::text("logged in and answering"),
    ]);
    let mut daemon = DaemonFixture::new();
    std::fs::write(daemon.home().join("config.toml"), keyed_config(&fake.base_url())).unwrap();
    daemon.spawn();
    let project = tempfile::tempdir().unwrap();
    let rein = || {
        let mut command = daemon.rein();
        command.current_dir(project.path());
        command
    };

    let before = run(rein(), &["run", "hi"], "");
    assert_eq!(before.status.code(), Some(1));
    assert!(text(&before.stderr).contains(KEY_VARIABLE), "{}", text(&before.stderr));

    // Without a terminal the provider must be named, and an empty key stores nothing.
    assert_eq!(run(rein(), &["login"], secret).status.code(), Some(2));
    assert_eq!(run(rein(), &["login", "keyed"], "\n").status.code(), Some(2));
    assert!(!daemon.home().join("auth.toml").exists());

    let login = run(rein(), &["login", "keyed"], &format!("{secret}\n"));
    let (stdout, stderr) = (text(&login.stdout), text(&login.stderr));
    assert!(login.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("stored the key for keyed"), "{stdout}");
    assert!(stderr.contains("no restart needed"), "{stderr}");
    assert!(!stdout.contains(secret) && !stderr.contains(secret));
    let auth = daemon.home().join("auth.toml");
    assert_eq!(std::fs::metadata(&auth).unwrap().permissions().mode() & 0o777, 0o600);

    let after = run(rein(), &["run", "--approve", "yolo", "hi"], "");
    let out = text(&after.stdout);
    assert!(after.status.success(), "{out}\n{}", text(&after.stderr));
    assert!(out.contains("logged in and answering"), "{out}");
    let requests = fake.requests();
    let chats: Vec<_> = requests.iter().filter(|r| r.method == "POST").collect();
    assert_eq!(chats.len(), 2);
    for chat in &chats {
        assert_eq!(chat.header("authorization"), Some(format!("Bearer {secret}").as_str()));
    }
    // The tool ran `env`: its output went back to the model without the key.
    let tool_output = chats[1].body["messages"].to_string();
    assert!(tool_output.contains("done"), "{tool_output}");
    assert!(!tool_output.contains(secret), "a tool saw the stored key");
    // Nor does the key reach the session files or the log.
    for file in walk(daemon.home()) {
        if file.ends_with("auth.toml") {
            continue;
        }
        let content = std::fs::read(&file).unwrap_or_default();
        assert!(!text(&content).contains(secret), "the key is in {}", file.display());
    }

    // `rein providers` status as the daemon sees it: from the auth file.
    let status = daemon.connect().call_ok(1, "providers/check", json!({}));
    let keyed = status["providers"].as_array().unwrap().iter().find(|p| p["name"] == "keyed");
    assert_eq!(keyed.unwrap()["key"]["source"], "auth_file", "{status}");
    assert!(!status.to_string().contains(secret));

    let logout = run(rein(), &["logout", "keyed"], "");
    assert!(logout.status.success());
    assert!(text(&logout.stdout).contains("removed the stored key for keyed"));
    let again = run(rein(), &["run", "hi"], "");
    assert_eq!(again.status.code(), Some(1), "{}", text(&again.stdout));
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else if path.is_file() {
            files.push(path);
        }
    }
    files
}

#[test]
fn a_key_in_the_environment_wins_and_is_reported() {
    let fake = BackgroundFake::start(vec![Reply::text("ok")]);
    let mut daemon = DaemonFixture::new();
    std::fs::write(daemon.home().join("config.toml"), keyed_config(&fake.base_url())).unwrap();
    daemon.spawn_with(|command| {
        command.env(KEY_VARIABLE, "sk-from-the-environment");
    });
    let login = run(daemon.rein(), &["login", "keyed"], "sk-stored-but-unused");
    assert!(login.status.success());
    let stderr = text(&login.stderr);
    assert!(stderr.contains(KEY_VARIABLE) && stderr.contains("wins"), "{stderr}");
    let project = tempfile::tempdir().unwrap();
    let mut rein = daemon.rein();
    rein.current_dir(project.path());
    let output = run(rein, &["run", "hi"], "");
    assert!(output.status.success(), "{}", text(&output.stderr));
    let chat = fake.requests().into_iter().find(|r| r.method == "POST").unwrap();
    assert_eq!(chat.header("authorization"), Some("Bearer sk-from-the-environment"));
    let doctor = run(daemon.rein(), &["doctor"], "");
    assert!(text(&doctor.stdout).contains(&format!("key from ${KEY_VARIABLE}")));
}

#[test]
fn doctor_passes_when_a_prompt_can_work() {
    let fake = BackgroundFake::start(vec![]);
    let mut daemon = DaemonFixture::new();
    std::fs::write(daemon.home().join("config.toml"), fake.config("")).unwrap();
    daemon.spawn();
    let output = daemon.run_rein(&["doctor"]);
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("ok    provider local"), "{stdout}");
    assert!(stdout.contains("everything a prompt needs is in order"), "{stdout}");
    let json_output = daemon.run_rein(&["doctor", "--json"]);
    let report: Value = serde_json::from_slice(&json_output.stdout).unwrap();
    assert_eq!(report["ok"], true);
    let names: Vec<&str> =
        report["checks"].as_array().unwrap().iter().filter_map(|c| c["name"].as_str()).collect();
    for expected in
        ["config", "daemon", "model", "REIN_HOME", "socket", "disk", "git", "bwrap", "tmux"]
    {
        assert!(names.contains(&expected), "{expected} missing from {names:?}");
    }
}

#[test]
fn doctor_names_a_missing_key_with_its_fix() {
    let fake = BackgroundFake::start(vec![]);
    let mut daemon = DaemonFixture::new();
    std::fs::write(daemon.home().join("config.toml"), keyed_config(&fake.base_url())).unwrap();
    daemon.spawn();
    let output = daemon.run_rein(&["doctor"]);
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("FAIL  provider keyed"), "{stdout}");
    assert!(
        stdout.contains(&format!("fix: rein login keyed (or export {KEY_VARIABLE}")),
        "{stdout}"
    );
}

#[test]
fn doctor_names_an_unreachable_provider_with_its_fix() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let mut daemon = DaemonFixture::new();
    let config = format!(
        "model = \"gone/m\"\n[providers.gone]\napi = \"openai-chat\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\n"
    );
    std::fs::write(daemon.home().join("config.toml"), config).unwrap();
    daemon.spawn();
    let output = daemon.run_rein(&["doctor"]);
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("FAIL  provider gone") && stdout.contains("unreachable"), "{stdout}");
    assert!(
        stdout.contains(&format!("fix: start the server at http://127.0.0.1:{port}/v1")),
        "{stdout}"
    );
}

#[test]
fn doctor_names_a_bad_configuration_with_its_fix() {
    let daemon = DaemonFixture::new();
    std::fs::write(daemon.home().join("config.toml"), "[limits]\nmax_turns = \"lots\"\n").unwrap();
    let output = daemon.run_rein(&["doctor"]);
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("FAIL  config") && stdout.contains("max_turns"), "{stdout}");
    assert!(stdout.contains("fix: correct the setting named above"), "{stdout}");
    assert!(stdout.contains("FAIL  daemon"), "{stdout}");
    // The daemon was not started with the broken file.
    assert!(!daemon.socket().exists());
}
