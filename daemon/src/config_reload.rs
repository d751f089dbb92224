//! Noticing that the configuration file changed and applying it to the running daemon.
//!
//! Before each request the daemon compares the configuration files' stamps (modification
//! time, size, inode) with the ones it loaded; when any moved (edited, created, removed), it
//! reads the configuration again. A good file replaces the providers, models and session
//! defaults for every request from then on, loaded sessions included; a bad one is reported
//! (log, `daemon/info`'s `config_error`, a `config_reloaded` daemon event) and the daemon keeps
//! the settings it had. `[sessions]` settings apply at the next start only.

use crate::config::{self, session_defaults};
use crate::hub::Hub;
use crate::keys::KeyStore;
use rein_ai::Registry;
use rein_protocol::event::DaemonEvent;
use rein_protocol::method::LocalServer;
use rein_protocol::paths::config_candidates;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

/// What identifies one version of a file cheaply.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    modified: Option<SystemTime>,
    len: u64,
    inode: u64,
}

fn stamps(home: &Path) -> Vec<Option<Stamp>> {
    config_candidates(home)
        .iter()
        .map(|path| {
            std::fs::metadata(path).ok().map(|meta| Stamp {
                modified: meta.modified().ok(),
                len: meta.len(),
                inode: meta.ino(),
            })
        })
        .collect()
}

#[derive(Debug)]
struct WatchState {
    stamps: Vec<Option<Stamp>>,
    path: Option<PathBuf>,
    error: Option<String>,
}

/// The configuration file the daemon runs with, and whether it changed since.
pub struct ConfigWatch {
    home: PathBuf,
    keys: Arc<KeyStore>,
    local_server: Option<LocalServer>,
    state: Mutex<WatchState>,
}

impl std::fmt::Debug for ConfigWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfigWatch").field("home", &self.home).finish_non_exhaustive()
    }
}

impl ConfigWatch {
    /// Watches the configuration of `home`, loaded just now from `path`. A reloaded
    /// configuration reads provider keys through `keys`, as the first one did, and keeps the
    /// local model server chosen at start-up as the default while nothing else is set up.
    pub fn new(
        home: &Path,
        path: Option<PathBuf>,
        keys: Arc<KeyStore>,
        local_server: Option<LocalServer>,
    ) -> Self {
        let state = WatchState { stamps: stamps(home), path, error: None };
        Self { home: home.to_path_buf(), keys, local_server, state: Mutex::new(state) }
    }

    /// The configuration file in force and why the last reload failed, if it did.
    pub fn status(&self) -> (Option<PathBuf>, Option<String>) {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        (state.path.clone(), state.error.clone())
    }

    /// Reloads when a configuration file changed since the last look, applying a good file to
    /// `hub`. Returns the event that reports the reload; `None` when nothing changed.
    pub fn check(&self, hub: &Hub) -> Option<DaemonEvent> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let now = stamps(&self.home);
        if now == state.stamps {
            return None;
        }
        state.stamps = now;
        match self.reload(hub) {
            Ok(path) => {
                tracing::info!(config = ?path, "configuration reloaded");
                state.path = path;
                state.error = None;
            }
            Err(error) => {
                tracing::warn!(%error, "configuration not reloaded; keeping the previous settings");
                state.error = Some(error);
            }
        }
        Some(DaemonEvent::ConfigReloaded {
            path: state.path.as_ref().map(|path| path.display().to_string()),
            error: state.error.clone(),
        })
    }

    fn reload(&self, hub: &Hub) -> Result<Option<PathBuf>, String> {
        let (config, path) = config::load(&self.home).map_err(|error| error.to_string())?;
        let providers = config.providers_config();
        let registry = match &self.local_server {
            Some(server) => crate::first_run::with_local_server(&providers, &self.keys, server),
            None => Registry::with_environment(providers, self.keys.environment())
                .inspect(|registry| self.keys.learn(registry)),
        }
        .map_err(|error| format!("invalid configuration: {error}"))?;
        let mut env = rein_coding::session::CodingEnvironment::clone(&hub.env());
        env.defaults = session_defaults(&self.home, &config, &registry);
        env.defaults.config_file = path.clone();
        env.registry = Arc::new(registry);
        hub.reconfigure(Arc::new(env));
        Ok(path)
    }
}
