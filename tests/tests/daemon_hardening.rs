//! End-to-end: the daemon under many connections and against other users.

use rein_testkit::daemon::DaemonFixture;
use serde_json::json;
use std::os::unix::process::CommandExt;

#[test]
fn five_hundred_concurrent_connections_are_served() {
    let daemon = DaemonFixture::start();
    let mut connections: Vec<_> = (0..500).map(|_| daemon.connect()).collect();
    for (i, connection) in connections.iter_mut().enumerate() {
        let request = json!({"jsonrpc": "2.0", "id": i, "method": "daemon/info"});
        connection.send_line(&request.to_string());
    }
    let mut most = 0;
    for (i, connection) in connections.iter_mut().enumerate() {
        let response = connection.read_json();
        assert_eq!(response["id"], i, "{response}");
        most = most.max(response["result"]["connections"].as_u64().unwrap_or(0));
    }
    assert!(most >= 500, "the daemon saw {most} connections at once");
}

#[test]
fn connections_from_another_user_are_refused() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("needs root to run a client as another user; skipped");
        return;
    }
    // The other user must be able to reach the socket, so only the peer check stands in the way.
    let daemon = match DaemonFixture::start_reachable_by_others() {
        Ok(daemon) => daemon,
        Err(why) => {
            eprintln!("{why}, so no other user can reach a socket; skipped");
            return;
        }
    };
    daemon.open_to_other_users();
    let output = daemon
        .rein()
        .args(["rpc", "daemon/info"])
        .env("REIN_DAEMON_BIN", "/nonexistent") // never start a daemon of its own
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    assert!(!output.status.success(), "a client of another user was served: {output:?}");
    // The daemon says why before closing, and the client passes it on.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("connections from another user are refused"), "{stderr}");
    // The log is written off the request path: the line may land a moment after the reply.
    daemon.wait_for_log("refused a connection from another user");
    // The owner is still served.
    assert!(daemon.run_rein(&["rpc", "daemon/info"]).status.success());
}
