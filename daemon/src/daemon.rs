//! The daemon's shared state: where it lives, when it started, and how it stops.

use crate::config::Config;
use crate::hub::Hub;
use crate::keys::KeyStore;
use rein_ai::registry::Registry;
use rein_protocol::event::DaemonEvent;
use rein_protocol::method::LocalServer;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

/// Settings fixed at start-up.
#[derive(Debug, Clone)]
pub struct DaemonOptions {
    /// The state directory (`REIN_HOME`).
    pub home: PathBuf,
    /// The socket served.
    pub socket: PathBuf,
    /// The longest accepted line in bytes.
    pub max_line_bytes: usize,
    /// Most connections served at once; further ones are closed at once.
    pub max_connections: u64,
}

/// State shared by every connection.
#[derive(Debug)]
pub struct Daemon {
    /// Start-up settings.
    pub options: DaemonOptions,
    /// The configuration file's settings.
    pub config: Config,
    /// Providers and models.
    pub registry: Arc<Registry>,
    /// The loaded sessions.
    pub hub: Arc<Hub>,
    /// When the daemon started.
    pub started: Instant,
    /// Cancelled to shut the daemon down gracefully.
    pub shutdown: CancellationToken,
    /// Daemon-wide events for `daemon/subscribe`.
    pub events: broadcast::Sender<DaemonEvent>,
    /// Where API keys come from (environment, then `auth.toml`).
    pub keys: Arc<KeyStore>,
    /// The local model server chosen at start-up because nothing else was set up.
    pub local_server: Option<LocalServer>,
    connections: AtomicU64,
}

impl Daemon {
    /// A daemon with the given settings.
    pub fn new(
        options: DaemonOptions,
        config: Config,
        registry: Arc<Registry>,
        hub: Arc<Hub>,
        events: broadcast::Sender<DaemonEvent>,
    ) -> Self {
        let keys = KeyStore::new(&options.home);
        Self {
            options,
            config,
            registry,
            hub,
            started: Instant::now(),
            shutdown: CancellationToken::new(),
            events,
            keys,
            local_server: None,
            connections: AtomicU64::new(0),
        }
    }

    /// The key store the registry reads through, and the local server chosen at start-up.
    pub fn with_first_run(
        mut self,
        keys: Arc<KeyStore>,
        local_server: Option<LocalServer>,
    ) -> Self {
        self.keys = keys;
        self.local_server = local_server;
        self
    }

    /// Open connections now.
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::Relaxed)
    }

    /// Counts a new connection; false when the limit is reached (the caller then closes it).
    pub fn connection_opened(&self) -> bool {
        let previous = self.connections.fetch_add(1, Ordering::Relaxed);
        if previous >= self.options.max_connections {
            self.connections.fetch_sub(1, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// Counts a closed connection.
    pub fn connection_closed(&self) {
        self.connections.fetch_sub(1, Ordering::Relaxed);
    }

    /// Starts a graceful shutdown: tells subscribers, then stops accepting and closes
    /// connections.
    pub fn begin_shutdown(&self) {
        if !self.shutdown.is_cancelled() {
            let _ = self.events.send(DaemonEvent::ShuttingDown);
            self.shutdown.cancel();
        }
    }
}
