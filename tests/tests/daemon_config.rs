//! End-to-end: the daemon reads `$REIN_HOME/config.toml` and serves `models/list` from it.

use rein_testkit::daemon::DaemonFixture;
use serde_json::{Value, json};

#[test]
fn models_list_reflects_the_configuration() {
    let mut daemon = DaemonFixture::new();
    std::fs::write(
        daemon.home().join("config.toml"),
        r#"
model = "local/test-model"
[providers.local]
api = "openai-chat"
base_url = "http://127.0.0.1:9/v1"
[providers.local.models."test-model"]
context_window = 32768
"#,
    )
    .unwrap();
    daemon.spawn();
    let response = daemon.connect().call(1, "models/list", json!({}));
    let result = &response["result"];
    assert_eq!(result["default_model"], "local/test-model", "{response}");
    let models = result["models"].as_array().unwrap();
    let local: Vec<&Value> = models.iter().filter(|m| m["provider"] == "local").collect();
    assert_eq!(local.len(), 1, "{models:?}");
    assert_eq!(local[0]["id"], "test-model");
    assert_eq!(local[0]["context_window"], 32768);
    assert_eq!(local[0]["api"], "openai-chat");
    // Built-in providers are listed with their catalog models.
    assert!(models.iter().any(|m| m["provider"] == "anthropic"));
}

#[test]
fn a_broken_configuration_stops_the_daemon_with_a_clear_message() {
    let daemon = DaemonFixture::new();
    std::fs::write(daemon.home().join("config.toml"), "[limits]\nmax_turns = \"lots\"\n").unwrap();
    let output = daemon.reind().arg("--foreground").output().unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("config.toml") && stderr.contains("max_turns"), "{stderr}");
}

#[test]
fn a_plain_http_provider_needs_no_system_certificates() {
    // The daemon must not load the system's root certificates for a provider reached over
    // plain HTTP (it costs tens of milliseconds on the first prompt). Pointing the certificate
    // variables at an empty file and directory makes loading them fail, so a prompt answered
    // here shows they were never loaded.
    let fake = rein_testkit::background::BackgroundFake::start(vec![
        rein_testkit::fake_provider::Reply::text("plain answer"),
    ]);
    let mut daemon = DaemonFixture::new();
    std::fs::write(daemon.home().join("config.toml"), fake.config("")).unwrap();
    let no_certs = tempfile::tempdir().unwrap();
    let empty_file = no_certs.path().join("none.pem");
    std::fs::write(&empty_file, "").unwrap();
    daemon.spawn_with(|command| {
        command.env("SSL_CERT_FILE", &empty_file).env("SSL_CERT_DIR", no_certs.path());
    });
    let project = tempfile::tempdir().unwrap();
    let cwd = project.path().to_str().unwrap();
    let output = daemon.run_rein(&["run", "--cwd", cwd, "--approve", "yolo", "say something"]);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "plain answer\n");
}
