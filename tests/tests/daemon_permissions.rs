//! End-to-end: what the daemon keeps under `REIN_HOME` is private to its user, and a socket
//! directory that others could tamper with is refused with a clear error. Through the real
//! `reind` and `rein`.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use rein_testkit::background::BackgroundFake;
use rein_testkit::daemon::DaemonFixture;
use rein_testkit::fake_provider::Reply;
use serde_json::json;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Stdio;

/// Every directory and regular file under `dir` whose mode is not private, with its mode.
fn not_private(dir: &Path, out: &mut Vec<(String, u32)>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let mode = meta.mode() & 0o7777;
        if meta.is_dir() {
            if mode & 0o077 != 0 {
                out.push((path.display().to_string(), mode));
            }
            not_private(&path, out);
        } else if meta.is_file() && mode & 0o077 != 0 {
            out.push((path.display().to_string(), mode));
        } else if meta.file_type().is_socket() {
            assert_eq!(mode & 0o077, 0, "the socket {} is open to others", path.display());
        }
    }
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn everything_the_daemon_keeps_is_private_to_its_user() {
    // A tool whose output is long enough to spill to a file, then an answer.
    let fake = BackgroundFake::start(vec![
        Reply::tool_call("bash", json!({"command": "seq 1 30000"})),
        Reply::text("counted"),
    ]);
    let mut daemon = DaemonFixture::new();
    std::fs::write(daemon.home().join("config.toml"), fake.config("approval_policy = \"yolo\""))
        .unwrap();
    // What an older version (or another tool) left open to everyone.
    let home = daemon.home().to_path_buf();
    std::fs::create_dir_all(home.join("logs")).unwrap();
    std::fs::write(home.join("logs").join("old.log"), "old\n").unwrap();
    set_mode(&home.join("logs").join("old.log"), 0o644);
    set_mode(&home.join("logs"), 0o755);
    set_mode(&home.join("config.toml"), 0o644);
    set_mode(&home, 0o755);
    daemon.spawn();
    // The home is closed before the daemon listens; what it holds is walked later.
    assert_eq!(std::fs::metadata(&home).unwrap().mode() & 0o077, 0, "the home is still open");

    let project = tempfile::tempdir().unwrap();
    let output = daemon
        .rein()
        .current_dir(project.path())
        .args(["run", "count to thirty thousand"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let trusted = daemon.run_rein(&["trust", &project.path().display().to_string()]);
    assert!(trusted.status.success(), "{}", String::from_utf8_lossy(&trusted.stderr));

    let spilled = home.join("tmp").join("bash-output");
    assert!(
        std::fs::read_dir(&spilled).is_ok_and(|mut d| d.next().is_some()),
        "no spill file was written, so this test proves less than it says"
    );
    assert!(home.join("trust.json").exists());
    daemon.wait_for_home_walk();
    let mut open = Vec::new();
    if std::fs::metadata(&home).unwrap().mode() & 0o077 != 0 {
        open.push((home.display().to_string(), 0));
    }
    not_private(&home, &mut open);
    assert!(open.is_empty(), "readable by others: {open:?}");
}

#[test]
fn a_socket_directory_others_could_tamper_with_is_refused() {
    let daemon = DaemonFixture::new();
    let run_dir = daemon.socket().parent().unwrap().to_path_buf();

    // Writable by everyone.
    std::fs::create_dir(&run_dir).unwrap();
    set_mode(&run_dir, 0o777);
    let output = daemon.reind().arg("--foreground").stdin(Stdio::null()).output().unwrap();
    assert!(!output.status.success(), "the daemon served from a 0777 directory");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("refusing to use") && stderr.contains("mode 0777"), "{stderr}");
    assert!(!daemon.socket().exists(), "a socket was bound anyway");

    // A symbolic link (to a directory that is itself fine).
    std::fs::remove_dir(&run_dir).unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), &run_dir).unwrap();
    // Through the client, which starts the daemon itself: the reason reaches the user.
    let output = daemon.run_rein(&["rpc", "daemon/info"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("symbolic link"), "{stderr}");
    assert!(std::fs::read_dir(elsewhere.path()).unwrap().next().is_none());

    // Once the directory is safe the daemon starts.
    std::fs::remove_file(&run_dir).unwrap();
    let output = daemon.run_rein(&["rpc", "daemon/info"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let _ = daemon.run_rein(&["daemon", "stop"]);
}
