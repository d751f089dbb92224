//! `rein daemon start|stop|restart|status`, and the warnings any command gives when the
//! daemon runs with a broken configuration, without a key the caller has, or is another
//! version than this `rein` (an upgrade left the old daemon running).

use crate::client::{Client, ClientError};
use crate::commands::exit;
use crate::launcher;
use rein_protocol::method::{DaemonInfo, Empty};
use rein_protocol::requests as rq;
use serde_json::json;
use std::path::Path;
use std::time::Duration;

/// How long `stop` waits for the daemon to exit.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// Starts the daemon unless one already answers.
pub async fn start(socket: &Path) -> Result<u8, ClientError> {
    if let Ok(mut client) = Client::connect(socket).await {
        let info = info(&mut client).await?;
        println!("reind is already running (pid {}) on {}", info.pid, info.socket_path);
        return Ok(exit::OK);
    }
    let owned = socket.to_path_buf();
    tokio::task::spawn_blocking(move || launcher::start_daemon(&owned))
        .await
        .map_err(|error| ClientError::Io(std::io::Error::other(error)))??;
    let mut client = Client::connect(socket).await?;
    let info = info(&mut client).await?;
    println!("reind started (pid {}) on {}", info.pid, info.socket_path);
    Ok(exit::OK)
}

/// Asks the daemon to shut down and waits until it has exited (its socket's lock is free).
pub async fn stop(socket: &Path) -> Result<u8, ClientError> {
    let mut client = match Client::connect(socket).await {
        Ok(client) => client,
        Err(ClientError::Connect { .. }) => {
            println!("reind is not running");
            return Ok(exit::OK);
        }
        Err(other) => return Err(other),
    };
    client.request::<rq::DaemonShutdown>(Empty {}).await?;
    drop(client);
    // Not just until the socket is gone: the daemon still holds its home until it exits, and a
    // start in between (`restart`) would be refused. It releases the socket's lock last.
    let owned = socket.to_path_buf();
    let exited = tokio::task::spawn_blocking(move || launcher::wait_for_exit(&owned, STOP_TIMEOUT))
        .await
        .map_err(|error| ClientError::Io(std::io::Error::other(error)))?;
    if exited {
        println!("reind stopped");
        return Ok(exit::OK);
    }
    eprintln!("rein: reind did not stop within {} s", STOP_TIMEOUT.as_secs());
    Ok(exit::FAILURE)
}

/// Stops the daemon (when it runs) and starts it again from this process, so it gets this
/// environment (API keys exported since it started, for instance).
pub async fn restart(socket: &Path) -> Result<u8, ClientError> {
    let stopped = stop(socket).await?;
    if stopped != exit::OK {
        return Ok(stopped);
    }
    start(socket).await
}

/// What the user should know about the daemon before using it: a configuration file it could
/// not use, and provider key variables set here that it lacks (with the way to hand them
/// over). Empty when all is well.
pub fn warnings(info: &DaemonInfo) -> Vec<String> {
    let mut warnings = Vec::new();
    if let Some(error) = &info.config_error {
        warnings.push(format!(
            "the daemon could not use its configuration and keeps its previous settings: {}",
            error.trim_end()
        ));
    }
    let lacking: Vec<&str> = info
        .missing_key_variables
        .iter()
        .map(String::as_str)
        .filter(|name| std::env::var_os(name).is_some_and(|value| !value.is_empty()))
        .collect();
    if info.version != env!("CARGO_PKG_VERSION") {
        warnings.push(format!(
            "the daemon is version {} and this rein is {}; `rein daemon restart` runs the new \
             one (sessions are saved)",
            info.version,
            env!("CARGO_PKG_VERSION")
        ));
    }
    if !lacking.is_empty() {
        warnings.push(format!(
            "{} set in this shell but not in the daemon's environment (it started earlier); \
             run `rein daemon restart` to restart it with this environment",
            match lacking.as_slice() {
                [one] => format!("{one} is"),
                many => format!("{} are", many.join(", ")),
            }
        ));
    }
    warnings
}

/// Prints [`warnings`] to stderr, asking the daemon for its info first, and answers that info
/// for the caller's later use (one request per command). Failing to ask is not an error (it
/// answers `None`): the command that follows will report a daemon that does not answer.
pub async fn warn(client: &mut Client) -> Option<DaemonInfo> {
    let info = info(client).await.ok()?;
    for warning in warnings(&info) {
        eprintln!("rein: {warning}");
    }
    Some(info)
}

/// Prints the daemon's info; exit 1 when it is not running.
pub async fn status(socket: &Path, as_json: bool) -> Result<u8, ClientError> {
    let mut client = match Client::connect(socket).await {
        Ok(client) => client,
        Err(ClientError::Connect { .. }) => {
            if as_json {
                println!(
                    "{}",
                    json!({"running": false, "socket_path": socket.display().to_string()})
                );
            } else {
                println!("reind is not running (socket {})", socket.display());
            }
            return Ok(exit::FAILURE);
        }
        Err(other) => return Err(other),
    };
    let info = info(&mut client).await?;
    if as_json {
        let mut value = serde_json::to_value(&info).unwrap_or_default();
        value["running"] = json!(true);
        println!("{value}");
    } else {
        println!("reind {} is running", info.version);
        println!("  pid:         {}", info.pid);
        println!("  socket:      {}", info.socket_path);
        println!("  home:        {}", info.rein_home);
        println!("  protocol:    {}", info.protocol_version);
        println!("  uptime:      {} s", info.uptime_ms / 1000);
        println!("  sessions:    {} loaded", info.sessions_loaded);
        println!("  connections: {}", info.connections);
        if let Some(free) = info.disk_free_bytes {
            let low = if info.low_disk_space { " (low: below storage.min_free_bytes)" } else { "" };
            println!("  disk free:   {free} bytes{low}");
        }
        let config = info.config_path.as_deref().unwrap_or("none (defaults)");
        println!("  config:      {config}");
        println!("  model:       {}", info.default_model.as_deref().unwrap_or("none"));
        println!("  keys:        {}", info.key_variables.join(", "));
        for warning in warnings(&info) {
            eprintln!("rein: {warning}");
        }
        if let Some(local) = &info.local_server {
            println!(
                "  local model: {} at {} (default {})",
                local.server, local.base_url, local.model
            );
        }
    }
    Ok(exit::OK)
}

async fn info(client: &mut Client) -> Result<DaemonInfo, ClientError> {
    client.request::<rq::DaemonInfo>(Empty {}).await
}

/// What to tell a person whose daemon speaks another protocol version than this `rein` (an
/// upgrade left the old daemon running): how to restart it. `None` for other errors.
pub fn version_hint(error: &ClientError) -> Option<String> {
    match error {
        ClientError::Rpc(failure)
            if failure.kind == rein_protocol::error::ErrorKind::IncompatibleProtocol =>
        {
            Some(format!(
                "the running daemon speaks another protocol version than this rein ({}): {}; \
                 restart it with `rein daemon restart` (sessions are saved)",
                env!("CARGO_PKG_VERSION"),
                failure.message
            ))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::RpcFailure;
    use rein_protocol::error::ErrorKind;

    fn info(version: &str) -> DaemonInfo {
        let value = json!({
            "version": version, "protocol_version": "1.0", "pid": 1, "uptime_ms": 0,
            "socket_path": "/s", "rein_home": "/h", "sessions_loaded": 0, "connections": 1
        });
        serde_json::from_value(value).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_daemon_of_another_version_is_named_with_how_to_restart_it() {
        assert!(warnings(&info(env!("CARGO_PKG_VERSION"))).is_empty());
        let warned = warnings(&info("0.0.1-old"));
        assert_eq!(warned.len(), 1, "{warned:?}");
        assert!(warned[0].starts_with("the daemon is version 0.0.1-old and this rein is "));
        assert!(warned[0].contains("`rein daemon restart`"), "{warned:?}");
    }

    #[test]
    fn an_incompatible_daemon_says_how_to_restart_it() {
        let failure = RpcFailure {
            code: -32011,
            message: "client speaks protocol 2.0 but this daemon speaks 1.0".into(),
            kind: ErrorKind::IncompatibleProtocol,
            data: serde_json::Value::Null,
        };
        let hint = version_hint(&ClientError::Rpc(failure)).unwrap_or_default();
        assert!(hint.contains("this daemon speaks 1.0; restart it with `rein daemon restart`"));
        assert!(version_hint(&ClientError::Closed).is_none());
    }

    /// A daemon that removes its socket as soon as it is asked to stop but exits (releases its
    /// socket's lock) only later, as reind does while it closes sessions and waits for its
    /// threads: `stop` must not return in between, or a `restart` finds the home still taken.
    #[tokio::test]
    async fn stop_returns_once_the_daemon_has_exited_not_when_its_socket_is_gone() {
        use std::io::{BufRead, BufReader, Write};
        use std::sync::atomic::{AtomicBool, Ordering};

        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("reind.sock");
        let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        let lock = std::fs::File::create(rein_protocol::paths::socket_lock(&socket)).unwrap();
        lock.lock().unwrap();
        let exited = std::sync::Arc::new(AtomicBool::new(false));
        let daemon = {
            let (socket, exited) = (socket.clone(), exited.clone());
            std::thread::spawn(move || {
                let (stream, _) = listener.accept().unwrap();
                let mut line = String::new();
                BufReader::new(&stream).read_line(&mut line).unwrap();
                let request: serde_json::Value = serde_json::from_str(&line).unwrap();
                assert_eq!(request["method"], "daemon/shutdown");
                let answer = json!({"jsonrpc": "2.0", "id": request["id"], "result": {"ok": true}});
                writeln!(&stream, "{answer}").unwrap();
                drop(stream);
                std::fs::remove_file(&socket).unwrap();
                std::thread::sleep(Duration::from_millis(400));
                exited.store(true, Ordering::SeqCst);
                drop(lock);
            })
        };
        assert_eq!(stop(&socket).await.unwrap(), exit::OK);
        assert!(exited.load(Ordering::SeqCst), "stop returned while the daemon was still there");
        daemon.join().unwrap();
    }
}
