//! The socket's security through the real `reind`: the run directory is 0700 and the socket
//! 0600, and even with both opened up by hand, a client running as another user is refused
//! by the peer-credential check (it gets one error line saying why, then the connection
//! closes) while a client of our own user is served.
//!
//! The other-user part needs root (to start a process as `nobody`); elsewhere it says so and
//! checks only the modes. The other-user client is this test binary started again with
//! `REIN_PEER_CHILD_SOCKET` set, running [`child_connects_and_reports`].

use rein_testkit::connection::RawConnection as Client;
use rein_testkit::daemon::DaemonFixture;
use serde_json::json;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::Duration;

/// The uid and gid of `nobody`.
const NOBODY: u32 = 65534;

/// Run as the child: connect, send `daemon/info`, print what came back: `refused: MESSAGE`
/// for an error line about the connection (id `null`), `closed` when nothing came.
#[test]
fn child_connects_and_reports() {
    let Some(socket) = std::env::var_os("REIN_PEER_CHILD_SOCKET") else { return };
    let outcome = match UnixStream::connect(&socket) {
        Err(error) => format!("connect-failed: {error}"),
        Ok(mut stream) => {
            let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
            let request = json!({"jsonrpc": "2.0", "id": 1, "method": "daemon/info"});
            let _ = stream.write_all(format!("{request}\n").as_bytes());
            let mut line = String::new();
            match BufReader::new(stream).read_line(&mut line) {
                // The daemon drops the connection unread, which may arrive as a reset.
                Ok(0) => "closed".to_string(),
                Err(error) if error.kind() == std::io::ErrorKind::ConnectionReset => {
                    "closed".to_string()
                }
                Ok(_) => match serde_json::from_str::<serde_json::Value>(&line) {
                    Ok(reply) if reply["id"].is_null() && reply["error"].is_object() => {
                        format!("refused: {}", reply["error"]["message"])
                    }
                    _ => format!("answered: {}", line.trim()),
                },
                Err(error) => format!("read-failed: {error}"),
            }
        }
    };
    println!("PEER-OUTCOME {outcome}");
}

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).map(|m| m.permissions().mode() & 0o777).unwrap_or(0)
}

#[test]
fn the_socket_is_private_and_other_users_are_refused() {
    let daemon = match DaemonFixture::start_reachable_by_others() {
        Ok(daemon) => daemon,
        Err(why) => {
            println!("{why}, so no other user can reach a socket; skipped");
            return;
        }
    };
    let run_dir = daemon.socket().parent().map(std::path::Path::to_path_buf).unwrap_or_default();
    assert_eq!(mode(&run_dir), 0o700, "run directory mode");
    assert_eq!(mode(daemon.socket()), 0o600, "socket mode");

    let root = std::fs::metadata(daemon.socket()).map(|m| m.uid()).unwrap_or(1) == 0;
    if !root {
        println!("not root: the other-user check needs root to start a process as nobody");
        return;
    }
    // Open the way, so only the peer-credential check stands between them.
    daemon.open_to_other_users();

    let exe = std::env::current_exe().unwrap_or_default();
    let started = Command::new(exe)
        .args(["--exact", "child_connects_and_reports", "--nocapture", "--test-threads=1"])
        .env("REIN_PEER_CHILD_SOCKET", daemon.socket())
        .uid(NOBODY)
        .gid(NOBODY)
        .output();
    let output = match started {
        Ok(output) => output,
        // The test binary sits where `nobody` may not reach it (a checkout under /root).
        Err(error) if error.kind() == std::io::ErrorKind::PermissionDenied => {
            println!("nobody cannot run this test binary ({error}); other-user check skipped");
            return;
        }
        Err(error) => panic!("cannot start the other-user client: {error}"),
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let outcome = stdout
        .lines()
        .find_map(|line| line.split_once("PEER-OUTCOME ").map(|(_, outcome)| outcome))
        .unwrap_or_else(|| panic!("the child reported nothing: {stdout} {output:?}"))
        .to_string();
    assert!(
        outcome.starts_with("refused: ") && outcome.contains("another user"),
        "another user's client got through, or was not told why: {outcome}"
    );

    // Our own user is still served.
    let mut own = Client::connect_as(daemon.socket(), "owner");
    let info = own.call_next_ok("daemon/info", json!({}));
    assert_eq!(info["protocol_version"], "1.0");
}
