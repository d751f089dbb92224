//! End-to-end: what clients send is checked in one place, through the real `reind` (raw
//! socket) and `rein`: model ids that read as paths are refused by `session/create` as by
//! `session/set_model`, project directories are absolute, existing and stored canonical, and
//! trusting `/` or the home directory needs `force`.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use rein_testkit::daemon::{DaemonFixture, RawConnection};
use serde_json::{Value, json};
use std::process::Stdio;

/// A daemon whose home directory (`$HOME`) is `home`.
fn daemon_with_home(home: &std::path::Path) -> (DaemonFixture, std::process::Child) {
    let daemon = DaemonFixture::new();
    let child = daemon
        .reind()
        .arg("--foreground")
        .env("HOME", home)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    daemon.wait_until_answering();
    (daemon, child)
}

fn refused(response: &Value, field: &str) {
    assert_eq!(response["error"]["data"]["kind"], "invalid_params", "{response}");
    assert_eq!(response["error"]["data"]["field"], field, "{response}");
}

#[test]
fn model_ids_cwds_and_trust_targets_are_checked() {
    let home = tempfile::tempdir().unwrap();
    let (daemon, mut child) = daemon_with_home(home.path());
    let mut client = RawConnection::connect(daemon.socket());
    let project = tempfile::tempdir().unwrap();
    std::fs::create_dir(project.path().join("sub")).unwrap();

    // A model id that reads as a path is refused at creation, as set_model refuses it.
    for model in ["../../etc/passwd", "local/../../etc/passwd", "local/", "no-slash"] {
        let response =
            client.call(1, "session/create", json!({"cwd": project.path(), "model": model}));
        refused(&response, "model");
    }

    // The project directory: absolute, existing, a directory, stored canonical.
    refused(&client.call(2, "session/create", json!({"cwd": "relative/dir"})), "cwd");
    let missing = project.path().join("missing");
    refused(&client.call(3, "session/create", json!({"cwd": missing})), "cwd");
    std::fs::write(project.path().join("file"), "").unwrap();
    refused(&client.call(4, "session/create", json!({"cwd": project.path().join("file")})), "cwd");
    let messy = format!("{}/./sub/../sub/", project.path().display());
    let state = client.call_ok(5, "session/create", json!({"cwd": messy}));
    let canonical = project.path().canonicalize().unwrap().join("sub");
    assert_eq!(state["cwd"], canonical.display().to_string().as_str(), "{state}");
    let session = state["session_id"].as_str().unwrap();
    let listed = client.call_ok(6, "session/list", json!({"cwd": messy}));
    assert_eq!(listed["sessions"].as_array().unwrap().len(), 1, "{listed}");

    let response =
        client.call(7, "session/set_model", json!({"session_id": session, "model": "../../x"}));
    refused(&response, "model");

    // Trusting everything below / or the home directory needs force; revoking never does.
    let home_dir = home.path().display().to_string();
    for wide in ["/", home_dir.as_str()] {
        let response = client.call(8, "trust/set", json!({"path": wide, "trusted": true}));
        refused(&response, "path");
        assert!(response["error"]["message"].as_str().unwrap().contains("force"), "{response}");
        client.call_ok(9, "trust/set", json!({"path": wide, "trusted": true, "force": true}));
        client.call_ok(10, "trust/set", json!({"path": wide, "trusted": false}));
    }
    let inside = format!("{}/sub/..", project.path().display());
    client.call_ok(11, "trust/set", json!({"path": inside, "trusted": true}));
    let trusted = client.call_ok(12, "trust/list", json!({}));
    let expected = project.path().canonicalize().unwrap().display().to_string();
    assert_eq!(trusted["paths"], json!([expected]), "{trusted}");

    // The same through the command line.
    let mut rein = daemon.rein();
    let output = rein.env("HOME", home.path()).args(["trust", "/"]).output().unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("force"), "{output:?}");
    let mut rein = daemon.rein();
    let output = rein.env("HOME", home.path()).args(["trust", "--force", "/"]).output().unwrap();
    assert!(output.status.success(), "{output:?}");

    let _ = child.kill();
    let _ = child.wait();
}
