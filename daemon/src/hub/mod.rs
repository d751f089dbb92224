//! The session hub: every loaded session, its event stream and the clients watching it.
//!
//! A session is loaded on first use and stays loaded while it runs or is watched; once idle and
//! unwatched for `sessions.idle_unload_secs` it is unloaded (its file lock released). Runs never
//! depend on the connection that started them: a client may prompt and hang up, and the run goes
//! on, its events buffered for whoever attaches next.
//!
//! Commands that change a session (prompt, branch, compact, model changes, ...) are serialized
//! per session through [`LoadedSession::command_lock`]; control calls (cancel, clearing queues,
//! answering approvals) and reads (state, messages, tree) never wait behind them.

pub mod events;

use crate::config::SessionsConfig;
use crate::rpc_error::RpcError;
use events::EventLog;
use rein_coding::session::{
    ApprovalGate, CodingEnvironment, CodingError, CodingSession, EventSink,
};
use rein_protocol::error::ErrorKind;
use rein_protocol::event::{DaemonEvent, SessionEvent};
use rein_protocol::method::{CreateSessionParams, SessionSummary};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

/// Counts the subscribers of one session that can answer approvals.
#[derive(Debug, Default)]
pub struct Approvers(AtomicUsize);

impl ApprovalGate for Approvers {
    fn has_approver(&self) -> bool {
        self.0.load(Ordering::SeqCst) > 0
    }
}

/// Keeps one approver counted while alive.
#[derive(Debug)]
pub struct ApproverGuard(Arc<Approvers>);

impl Drop for ApproverGuard {
    fn drop(&mut self) {
        self.0.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// One loaded session.
pub struct LoadedSession {
    /// The session itself.
    pub session: Arc<CodingSession>,
    /// Its numbered event stream.
    pub events: Arc<EventLog>,
    /// Serializes commands that change the session.
    pub command_lock: tokio::sync::Mutex<()>,
    approvers: Arc<Approvers>,
    last_activity: Mutex<Instant>,
}

impl std::fmt::Debug for LoadedSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedSession").field("id", &self.session.id()).finish_non_exhaustive()
    }
}

impl LoadedSession {
    /// The session's state, with the event stream's cursor.
    pub fn state(&self) -> rein_protocol::method::SessionState {
        let mut state = self.session.state(self.events.last_seq());
        state.stream = self.events.stream().to_string();
        state
    }

    /// Notes client activity (keeps the session loaded).
    pub fn touch(&self) {
        if let Ok(mut last) = self.last_activity.lock() {
            *last = Instant::now();
        }
    }

    /// Counts a subscriber that can answer approvals until the guard drops.
    pub fn add_approver(&self) -> ApproverGuard {
        self.approvers.0.fetch_add(1, Ordering::SeqCst);
        ApproverGuard(self.approvers.clone())
    }

    fn idle_for(&self) -> Duration {
        self.last_activity.lock().map(|last| last.elapsed()).unwrap_or_default()
    }
}

/// Maps a coding-layer failure onto the wire.
pub fn coding_error(error: CodingError) -> RpcError {
    RpcError::new(error.kind(), error.to_string())
}

/// Every loaded session.
pub struct Hub {
    env: Mutex<Arc<CodingEnvironment>>,
    settings: SessionsConfig,
    sessions: Mutex<HashMap<String, Arc<LoadedSession>>>,
    /// Held while a session is being loaded, so two clients opening it at once share one load.
    loading: tokio::sync::Mutex<()>,
    daemon_events: broadcast::Sender<DaemonEvent>,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub").field("loaded", &self.loaded_count()).finish_non_exhaustive()
    }
}

impl Hub {
    /// A hub over `env`, reporting lifecycle events on `daemon_events`.
    pub fn new(
        env: Arc<CodingEnvironment>,
        settings: SessionsConfig,
        daemon_events: broadcast::Sender<DaemonEvent>,
    ) -> Self {
        Self {
            env: Mutex::new(env),
            settings,
            sessions: Mutex::new(HashMap::new()),
            loading: tokio::sync::Mutex::new(()),
            daemon_events,
        }
    }

    /// The shared coding environment as of now (a configuration reload replaces it).
    pub fn env(&self) -> Arc<CodingEnvironment> {
        Arc::clone(&self.env.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// Puts a reloaded configuration in force: new sessions get `env`, and every loaded
    /// session takes its providers and defaults for its next request.
    pub fn reconfigure(&self, env: Arc<CodingEnvironment>) {
        *self.env.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::clone(&env);
        let loaded: Vec<Arc<LoadedSession>> = self
            .sessions
            .lock()
            .map(|sessions| sessions.values().cloned().collect())
            .unwrap_or_default();
        for session in loaded {
            session.session.reconfigure(CodingEnvironment::clone(&env));
        }
    }

    /// Sessions loaded now.
    pub fn loaded_count(&self) -> usize {
        self.sessions.lock().map(|s| s.len()).unwrap_or_default()
    }

    /// The loaded session with this id, without loading it.
    pub fn loaded(&self, session_id: &str) -> Option<Arc<LoadedSession>> {
        self.sessions.lock().ok()?.get(session_id).cloned()
    }

    fn all_loaded(&self) -> Vec<Arc<LoadedSession>> {
        self.sessions.lock().map(|s| s.values().cloned().collect()).unwrap_or_default()
    }

    /// The event log, approver count and sink a new session is wired to.
    fn wiring(&self) -> (Arc<EventLog>, Arc<Approvers>, EventSink) {
        let events = Arc::new(EventLog::unbound(
            self.settings.replay_buffer,
            self.settings.subscriber_queue,
            1,
        ));
        let approvers = Arc::new(Approvers::default());
        let sink_events = events.clone();
        let daemon_events = self.daemon_events.clone();
        let sink: EventSink = Arc::new(move |event: SessionEvent| {
            let lifecycle = match &event {
                SessionEvent::AgentStart { run_id } => Some((run_id.clone(), true)),
                SessionEvent::Settled => Some((String::new(), false)),
                _ => None,
            };
            sink_events.publish(event, now_millis());
            if let (Some((run_id, running)), Some(session_id)) =
                (lifecycle, sink_events.session_id())
            {
                let session_id = session_id.to_string();
                let _ = daemon_events.send(if running {
                    DaemonEvent::SessionRunning { session_id, run_id }
                } else {
                    DaemonEvent::SessionIdle { session_id }
                });
            }
        });
        (events, approvers, sink)
    }

    fn insert(
        &self,
        session: Arc<CodingSession>,
        events: Arc<EventLog>,
        approvers: Arc<Approvers>,
    ) -> Arc<LoadedSession> {
        events.bind(session.id().to_string());
        let loaded = Arc::new(LoadedSession {
            session,
            events,
            command_lock: tokio::sync::Mutex::new(()),
            approvers,
            last_activity: Mutex::new(Instant::now()),
        });
        if let Ok(mut sessions) = self.sessions.lock() {
            sessions.insert(loaded.session.id().to_string(), loaded.clone());
        }
        loaded
    }

    /// Creates a session and loads it.
    pub async fn create(
        &self,
        params: CreateSessionParams,
    ) -> Result<Arc<LoadedSession>, RpcError> {
        let (events, approvers, sink) = self.wiring();
        let gate: Arc<dyn ApprovalGate> = approvers.clone();
        let session =
            CodingSession::create(CodingEnvironment::clone(&self.env()), params, sink, gate)
                .await
                .map_err(coding_error)?;
        let loaded = self.insert(session, events, approvers);
        let _ = self.daemon_events.send(DaemonEvent::SessionCreated {
            session_id: loaded.session.id().to_string(),
            cwd: loaded.session.cwd().to_string(),
        });
        Ok(loaded)
    }

    /// The session with this id, loading it from disk on first use.
    pub async fn get(&self, session_id: &str) -> Result<Arc<LoadedSession>, RpcError> {
        if let Some(loaded) = self.loaded(session_id) {
            loaded.touch();
            return Ok(loaded);
        }
        let _loading = self.loading.lock().await;
        if let Some(loaded) = self.loaded(session_id) {
            return Ok(loaded);
        }
        let (events, approvers, sink) = self.wiring();
        let gate: Arc<dyn ApprovalGate> = approvers.clone();
        let session =
            CodingSession::open(CodingEnvironment::clone(&self.env()), session_id, sink, gate)
                .await
                .map_err(coding_error)?;
        Ok(self.insert(session, events, approvers))
    }

    /// Unloads a session: refused while it is busy (cancel first).
    pub async fn close(&self, session_id: &str) -> Result<(), RpcError> {
        let Some(loaded) = self.loaded(session_id) else {
            return Err(RpcError::new(
                ErrorKind::SessionNotFound,
                format!("session {session_id} is not loaded"),
            ));
        };
        if loaded.session.is_busy() {
            return Err(RpcError::new(
                ErrorKind::SessionBusy,
                "the session is running; cancel it before closing",
            ));
        }
        self.unload(&loaded).await;
        Ok(())
    }

    async fn unload(&self, loaded: &Arc<LoadedSession>) {
        if let Ok(mut sessions) = self.sessions.lock() {
            sessions.remove(loaded.session.id());
        }
        loaded.session.close().await;
        loaded.events.close();
    }

    /// Deletes a session's file; a loaded session is unloaded first (refused while busy).
    pub async fn delete(&self, session_id: &str) -> Result<(), RpcError> {
        if self.loaded(session_id).is_some() {
            self.close(session_id).await?;
        }
        self.env()
            .store
            .delete(session_id)
            .map_err(|error| RpcError::new(error.kind(), error.to_string()))?;
        let _ = self
            .daemon_events
            .send(DaemonEvent::SessionDeleted { session_id: session_id.to_string() });
        Ok(())
    }

    /// Sessions on disk (per project directory or all), marked loaded and running as they are.
    pub fn list(&self, cwd: Option<&str>) -> Result<Vec<SessionSummary>, RpcError> {
        let mut sessions = self
            .env()
            .store
            .list(cwd)
            .map_err(|error| RpcError::new(error.kind(), error.to_string()))?;
        for summary in &mut sessions {
            if let Some(loaded) = self.loaded(&summary.session_id) {
                summary.loaded = true;
                summary.running = loaded.session.is_busy();
            }
        }
        Ok(sessions)
    }

    /// Unloads sessions idle and unwatched for the configured time, until `stop` fires.
    pub fn spawn_idle_reaper(self: &Arc<Self>, stop: CancellationToken) {
        let hub = self.clone();
        let limit = Duration::from_secs(self.settings.idle_unload_secs);
        let period = (limit / 4).clamp(Duration::from_millis(200), Duration::from_secs(30));
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(period) => {}
                }
                for loaded in hub.all_loaded() {
                    let idle = !loaded.session.is_busy()
                        && loaded.events.subscriber_count() == 0
                        && loaded.idle_for() >= limit;
                    if idle {
                        tracing::debug!(session = loaded.session.id(), "unloading idle session");
                        hub.unload(&loaded).await;
                    }
                }
            }
        });
    }

    /// Tells loaded sessions at or below `path` that its trust changed.
    pub fn refresh_trust(&self, path: &std::path::Path) {
        for loaded in self.all_loaded() {
            if std::path::Path::new(loaded.session.cwd()).starts_with(path) {
                loaded.session.refresh_trust();
            }
        }
    }

    /// Cancels every run and closes every session, so each file ends with a valid history.
    pub async fn shutdown(&self) {
        let sessions = self.all_loaded();
        for loaded in &sessions {
            loaded.session.cancel();
        }
        for loaded in sessions {
            self.unload(&loaded).await;
        }
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
}
