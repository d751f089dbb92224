//! `rein daemon start|stop|status`.

use crate::client::{Client, ClientError};
use crate::commands::exit;
use crate::launcher;
use rein_protocol::method::{DaemonInfo, names};
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

/// How long `stop` waits for the socket to go away.
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

/// Asks the daemon to shut down and waits until its socket is gone.
pub async fn stop(socket: &Path) -> Result<u8, ClientError> {
    let mut client = match Client::connect(socket).await {
        Ok(client) => client,
        Err(ClientError::Connect { .. }) => {
            println!("reind is not running");
            return Ok(exit::OK);
        }
        Err(other) => return Err(other),
    };
    client.call(names::DAEMON_SHUTDOWN, json!({})).await?;
    drop(client);
    let deadline = Instant::now() + STOP_TIMEOUT;
    while Instant::now() < deadline {
        if !socket.exists() {
            println!("reind stopped");
            return Ok(exit::OK);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eprintln!("rein: reind did not stop within {} s", STOP_TIMEOUT.as_secs());
    Ok(exit::FAILURE)
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
    let value = client.call(names::DAEMON_INFO, json!({})).await?;
    serde_json::from_value(value).map_err(|error| ClientError::InvalidMessage(error.to_string()))
}
