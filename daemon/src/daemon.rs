//! The daemon's shared state: where it lives, when it started, and how it stops.

use crate::clients::ClientDirectory;
use crate::config::Config;
use crate::config_reload::ConfigWatch;
use crate::hub::Hub;
use crate::keys::KeyStore;
use crate::server::limits::{ConnectionLimits, InputBudget};
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
    /// Most connections served at once; further ones get the restricted service of
    /// [`crate::server::connection`].
    pub max_connections: u64,
    /// What each connection may hold.
    pub limits: ConnectionLimits,
}

/// State shared by every connection.
#[derive(Debug)]
pub struct Daemon {
    /// Start-up settings.
    pub options: DaemonOptions,
    /// The configuration file's settings.
    pub config: Config,
    /// Providers and models as loaded at start-up; after a configuration reload the ones in
    /// force are `hub.env().registry`.
    pub registry: Arc<Registry>,
    /// The loaded sessions.
    pub hub: Arc<Hub>,
    /// When the daemon started.
    pub started: Instant,
    /// Cancelled to shut the daemon down gracefully.
    pub shutdown: CancellationToken,
    /// Daemon-wide events for `daemon/subscribe`.
    pub events: broadcast::Sender<DaemonEvent>,
    /// Bytes of unfinished input all connections may hold together.
    pub input_budget: InputBudget,
    /// The pid and tty each client gave at `initialize`.
    pub clients: ClientDirectory,
    /// Where API keys come from (environment, then `auth.toml`).
    pub keys: Arc<KeyStore>,
    /// The local model server chosen at start-up because nothing else was set up.
    pub local_server: Option<LocalServer>,
    connections: AtomicU64,
    overflow: AtomicU64,
    config_watch: std::sync::OnceLock<ConfigWatch>,
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
        let input_budget = InputBudget::new(options.limits.max_buffered_input);
        let keys = KeyStore::new(&options.home);
        Self {
            input_budget,
            options,
            config,
            registry,
            hub,
            started: Instant::now(),
            shutdown: CancellationToken::new(),
            events,
            clients: ClientDirectory::default(),
            keys,
            local_server: None,
            connections: AtomicU64::new(0),
            overflow: AtomicU64::new(0),
            config_watch: std::sync::OnceLock::new(),
        }
    }

    /// Starts watching the configuration file for changes (see [`ConfigWatch`]). Only the
    /// first call has an effect.
    pub fn watch_config(&self, watch: ConfigWatch) {
        let _ = self.config_watch.set(watch);
    }

    /// Reloads the configuration when its file changed, telling daemon subscribers how it
    /// went. Called before each request; a `stat` or two when nothing changed.
    pub fn reload_config_if_changed(&self) {
        if let Some(watch) = self.config_watch.get()
            && let Some(event) = watch.check(&self.hub)
        {
            let _ = self.events.send(event);
        }
    }

    /// The configuration file in force and why the last reload failed, if it did.
    pub fn config_status(&self) -> (Option<PathBuf>, Option<String>) {
        self.config_watch.get().map(ConfigWatch::status).unwrap_or_default()
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

    /// Counts a connection served over the limit in the restricted mode; false when even
    /// those are at their limit (the connection is then refused at once).
    pub fn overflow_opened(&self) -> bool {
        let previous = self.overflow.fetch_add(1, Ordering::Relaxed);
        if previous >= self.options.limits.max_overflow_connections {
            self.overflow.fetch_sub(1, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// Counts a closed over-the-limit connection.
    pub fn overflow_closed(&self) {
        self.overflow.fetch_sub(1, Ordering::Relaxed);
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
