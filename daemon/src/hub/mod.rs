//! The session hub: every loaded session, its event stream and the clients watching it.
//!
//! A session is loaded on first use and stays loaded while it runs or is watched; once idle and
//! unwatched for `sessions.idle_unload_secs` it is unloaded (its file lock released). Runs never
//! depend on the connection that started them: a client may prompt and hang up, and the run goes
//! on, its events buffered for whoever attaches next.
//!
//! Commands that change a session (prompt, branch, compact, model changes, ...) are serialized
//! per session through [`LoadedSession::command_lock`]; control calls (cancel, clearing queues,
//! answering approvals) and reads (state, messages, tree) never wait behind them. Unloading
//! (`session/close`, `session/delete`, the idle reaper, shutdown) is a command too: it takes
//! the command lock, so a prompt can never start a run on a session being closed (it waits,
//! then finds the session closed).
//!
//! Loading reads and repairs the session file, which can take a while for a large one. It runs
//! on a blocking thread, and only callers of the *same* session wait for it: each session id
//! being loaded has its own lock, so two clients opening one session share one load while the
//! opening of any other session goes on beside it.
//!
//! # Approvals
//!
//! Only subscribers whose client declared the `approvals` capability count as approvers
//! ([`Approvers`]); a subscription stops counting the moment it ends. A waiting approval
//! request is part of the session's state ([`pending::PendingApprovals`]): a client that
//! subscribes while one waits is sent its `approval_requested` first. When the last approver
//! leaves while a request waits, the session waits `approvals.grace_secs` for one to come back,
//! then the request is denied with the reason in the tool result.
//!
//! # Lock order
//!
//! Locks are taken in this order and never the other way round; no `std` lock is held across
//! an `.await`:
//!
//! 1. a session's load lock (`Hub::loads`, async): held while that session loads or unloads,
//!    so a load never starts while an unload still holds the session's file lock;
//! 2. [`LoadedSession::command_lock`] (async): held for the length of one command or unload;
//! 3. the coding session's own locks (`rein-coding`), inside a command or a run;
//! 4. [`pending::PendingApprovals`] (std), taken by the event sink when an event is published;
//! 5. the [`events::EventLog`]'s state (std), inside the previous one.
//!
//! The hub's maps (`Hub::sessions`, `Hub::loads`) and a session's `last_activity` are leaves:
//! held only for a lookup or an update, with no other lock taken inside. Poisoned locks follow
//! the daemon's one convention ([`crate::sync`]): the guard is taken anyway, so an insert or a
//! remove is never skipped.

pub mod events;
pub mod pending;

use crate::config::SessionsConfig;
use crate::rpc_error::RpcError;
use crate::sync::lock;
use events::EventLog;
use futures::future::BoxFuture;
use pending::PendingApprovals;
use rein_coding::session::{
    ApprovalGate, CodingEnvironment, CodingError, CodingSession, EventSink, on_a_blocking_thread,
};
use rein_protocol::error::ErrorKind;
use rein_protocol::event::{ClientIdentity, DaemonEvent, EndReason, SessionEvent};
use rein_protocol::method::{CreateSessionParams, ListSessionsResult};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;

/// Counts the subscribers of one session that can answer approvals, and tells waiting
/// approval requests when the count changes.
#[derive(Debug)]
pub struct Approvers(watch::Sender<usize>);

impl Default for Approvers {
    fn default() -> Self {
        Self(watch::Sender::new(0))
    }
}

impl Approvers {
    /// Approvers attached now.
    pub fn count(&self) -> usize {
        *self.0.borrow()
    }
}

impl ApprovalGate for Approvers {
    fn has_approver(&self) -> bool {
        self.count() > 0
    }

    fn abandoned(&self, grace: Duration) -> BoxFuture<'static, ()> {
        let mut count = self.0.subscribe();
        Box::pin(async move {
            loop {
                // The sender goes with the session; a closed channel means nobody is left.
                if count.wait_for(|n| *n == 0).await.is_err() {
                    return;
                }
                tokio::select! {
                    () = tokio::time::sleep(grace) => return,
                    back = count.wait_for(|n| *n > 0) => if back.is_err() { return },
                }
            }
        })
    }
}

/// Keeps one approver counted while alive.
#[derive(Debug)]
pub struct ApproverGuard(Arc<Approvers>);

impl Drop for ApproverGuard {
    fn drop(&mut self) {
        self.0.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// One loaded session.
pub struct LoadedSession {
    /// The session itself.
    pub session: Arc<CodingSession>,
    /// Its numbered event stream.
    pub events: Arc<EventLog>,
    /// Serializes commands that change the session, and unloading.
    pub command_lock: tokio::sync::Mutex<()>,
    /// The approval requests waiting for an answer.
    pub pending: Arc<PendingApprovals>,
    approvers: Arc<Approvers>,
    /// The client whose `session/cancel` the next cancelled run's end is to name.
    canceller: Arc<Mutex<Option<ClientIdentity>>>,
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
        *lock(&self.last_activity) = Instant::now();
    }

    /// Counts a subscriber that can answer approvals until the guard drops.
    pub fn add_approver(&self) -> ApproverGuard {
        self.approvers.0.send_modify(|n| *n += 1);
        ApproverGuard(self.approvers.clone())
    }

    /// Cancels what runs in the session on behalf of the calling client, whom the cancelled
    /// run's `agent_end` then names. False when nothing was running.
    pub fn cancel(&self) -> bool {
        *lock(&self.canceller) = crate::clients::caller();
        let cancelled = self.session.cancel();
        if !cancelled {
            *lock(&self.canceller) = None;
        }
        cancelled
    }

    /// Subscribers that can answer approvals now.
    pub fn approver_count(&self) -> usize {
        self.approvers.count()
    }

    fn idle_for(&self) -> Duration {
        lock(&self.last_activity).elapsed()
    }

    /// Idle and unwatched for at least `limit`.
    fn is_idle(&self, limit: Duration) -> bool {
        !self.session.is_busy() && self.events.subscriber_count() == 0 && self.idle_for() >= limit
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
    /// One lock per session id being loaded or unloaded, so two clients opening one session
    /// share one load, a load waits for an unload of that session to release its file, and other
    /// sessions load beside it.
    loads: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
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
            loads: Mutex::new(HashMap::new()),
            daemon_events,
        }
    }

    /// The shared coding environment as of now (a configuration reload replaces it).
    pub fn env(&self) -> Arc<CodingEnvironment> {
        Arc::clone(&lock(&self.env))
    }

    /// Puts a reloaded configuration in force: new sessions get `env`, and every loaded
    /// session takes its providers and defaults for its next request.
    pub fn reconfigure(&self, env: Arc<CodingEnvironment>) {
        *lock(&self.env) = Arc::clone(&env);
        let loaded: Vec<Arc<LoadedSession>> = lock(&self.sessions).values().cloned().collect();
        for session in loaded {
            session.session.reconfigure(CodingEnvironment::clone(&env));
        }
    }

    /// Sessions loaded now.
    pub fn loaded_count(&self) -> usize {
        lock(&self.sessions).len()
    }

    /// The loaded session with this id, without loading it.
    pub fn loaded(&self, session_id: &str) -> Option<Arc<LoadedSession>> {
        lock(&self.sessions).get(session_id).cloned()
    }

    /// Whether `loaded` is still the loaded copy of its session (not unloaded meanwhile).
    pub fn is_loaded(&self, loaded: &Arc<LoadedSession>) -> bool {
        lock(&self.sessions).get(loaded.session.id()).is_some_and(|s| Arc::ptr_eq(s, loaded))
    }

    fn all_loaded(&self) -> Vec<Arc<LoadedSession>> {
        lock(&self.sessions).values().cloned().collect()
    }

    /// The event log, pending approvals, approver count and sink a new session is wired to.
    fn wiring(&self) -> Wiring {
        let events = Arc::new(EventLog::unbound(
            self.settings.replay_buffer,
            self.settings.replay_buffer_bytes,
            1,
        ));
        let pending = Arc::new(PendingApprovals::default());
        let approvers = Arc::new(Approvers::default());
        let canceller: Arc<Mutex<Option<ClientIdentity>>> = Arc::default();
        let sink_events = events.clone();
        let sink_pending = pending.clone();
        let sink_canceller = canceller.clone();
        let daemon_events = self.daemon_events.clone();
        let sink: EventSink = Arc::new(move |event: SessionEvent| {
            let lifecycle = match &event {
                SessionEvent::AgentStart { run_id } => Some((run_id.clone(), true)),
                SessionEvent::Settled => Some((String::new(), false)),
                _ => None,
            };
            // A cancelled run's end names the client that cancelled it; events a request
            // causes directly name the request's client.
            let client = match &event {
                SessionEvent::AgentEnd { reason: EndReason::Cancelled, .. } => {
                    lock(&sink_canceller).take()
                }
                // A cancel that stopped no run (a shell command, say) names nobody later.
                SessionEvent::AgentStart { .. } => {
                    lock(&sink_canceller).take();
                    crate::clients::caller()
                }
                _ => crate::clients::caller(),
            };
            sink_pending.publish(&sink_events, event, rein_protocol::clock::now_ms(), client);
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
        Wiring { events, pending, approvers, canceller, sink }
    }

    fn insert(&self, session: Arc<CodingSession>, wiring: Wiring) -> Arc<LoadedSession> {
        let Wiring { events, pending, approvers, canceller, sink: _ } = wiring;
        events.bind(session.id().to_string());
        let loaded = Arc::new(LoadedSession {
            session,
            events,
            command_lock: tokio::sync::Mutex::new(()),
            pending,
            approvers,
            canceller,
            last_activity: Mutex::new(Instant::now()),
        });
        lock(&self.sessions).insert(loaded.session.id().to_string(), loaded.clone());
        loaded
    }

    /// Creates a session and loads it.
    pub async fn create(
        &self,
        params: CreateSessionParams,
    ) -> Result<Arc<LoadedSession>, RpcError> {
        let wiring = self.wiring();
        let gate: Arc<dyn ApprovalGate> = wiring.approvers.clone();
        let env = CodingEnvironment::clone(&self.env());
        let sink = wiring.sink.clone();
        let session = off_the_workers(move || CodingSession::create(env, params, sink, gate))
            .await?
            .map_err(coding_error)?;
        let loaded = self.insert(session, wiring);
        let _ = self.daemon_events.send(DaemonEvent::SessionCreated {
            session_id: loaded.session.id().to_string(),
            cwd: loaded.session.cwd().to_string(),
        });
        Ok(loaded)
    }

    /// The session with this id, loading it from disk on first use. Callers of one session
    /// share one load; other sessions load beside it.
    pub async fn get(&self, session_id: &str) -> Result<Arc<LoadedSession>, RpcError> {
        if let Some(loaded) = self.loaded(session_id) {
            loaded.touch();
            return Ok(loaded);
        }
        let _turn = self.load_turn(session_id).await;
        match self.loaded(session_id) {
            Some(loaded) => Ok(loaded),
            None => self.load(session_id).await,
        }
    }

    /// Waits for this session's load lock: loads and unloads of one session take turns.
    async fn load_turn(&self, session_id: &str) -> LoadTurn<'_> {
        let lock_arc = lock(&self.loads).entry(session_id.to_string()).or_default().clone();
        let guard = lock_arc.clone().lock_owned().await;
        LoadTurn {
            hub: self,
            session_id: session_id.to_string(),
            lock: lock_arc,
            guard: Some(guard),
        }
    }

    /// Reads (and repairs) the session file on a blocking thread and wires the session in.
    async fn load(&self, session_id: &str) -> Result<Arc<LoadedSession>, RpcError> {
        let wiring = self.wiring();
        let gate: Arc<dyn ApprovalGate> = wiring.approvers.clone();
        let env = CodingEnvironment::clone(&self.env());
        let sink = wiring.sink.clone();
        let id = session_id.to_string();
        let session =
            off_the_workers(move || async move { CodingSession::open(env, &id, sink, gate).await })
                .await?
                .map_err(coding_error)?;
        Ok(self.insert(session, wiring))
    }

    /// Unloads a session: refused while it is busy (cancel first).
    pub async fn close(&self, session_id: &str) -> Result<(), RpcError> {
        let _turn = self.load_turn(session_id).await;
        let Some(loaded) = self.loaded(session_id) else {
            return Err(RpcError::new(
                ErrorKind::SessionNotFound,
                format!("session {session_id} is not loaded"),
            ));
        };
        let serial = loaded.command_lock.lock().await;
        if loaded.session.is_busy() {
            return Err(RpcError::new(
                ErrorKind::SessionBusy,
                "the session is running; cancel it before closing",
            ));
        }
        self.unload_locked(&loaded, serial).await;
        Ok(())
    }

    /// Unloads a session once the commands already waiting for it are done.
    async fn unload(&self, loaded: &Arc<LoadedSession>) {
        let _turn = self.load_turn(loaded.session.id()).await;
        let serial = loaded.command_lock.lock().await;
        self.unload_locked(loaded, serial).await;
    }

    /// Unloads a session whose command lock the caller holds (`_serial`), so no command can
    /// start on it meanwhile.
    async fn unload_locked(
        &self,
        loaded: &Arc<LoadedSession>,
        _serial: tokio::sync::MutexGuard<'_, ()>,
    ) {
        {
            let mut sessions = lock(&self.sessions);
            if sessions.get(loaded.session.id()).is_some_and(|s| Arc::ptr_eq(s, loaded)) {
                sessions.remove(loaded.session.id());
            }
            // A command waiting for the lock finds the session gone and loads it again.
        }
        loaded.session.close().await;
        loaded.events.close();
    }

    /// Deletes a session's file; a loaded session is unloaded first (refused while busy).
    pub async fn delete(&self, session_id: &str) -> Result<(), RpcError> {
        if self.loaded(session_id).is_some() {
            self.close(session_id).await?;
        }
        // Removing the files and syncing their directory is blocking work.
        let store = self.env().store.clone();
        let id = session_id.to_string();
        tokio::task::spawn_blocking(move || store.delete(&id))
            .await
            .map_err(|error| RpcError::new(ErrorKind::Internal, format!("delete failed: {error}")))?
            .map_err(|error| RpcError::new(error.kind(), error.to_string()))?;
        let _ = self
            .daemon_events
            .send(DaemonEvent::SessionDeleted { session_id: session_id.to_string() });
        Ok(())
    }

    /// Sessions on disk (per project directory or all), marked loaded and running as they are,
    /// with what could not be read.
    pub fn list(&self, cwd: Option<&str>) -> Result<ListSessionsResult, RpcError> {
        // A loaded session is summarized from memory: its file is not read again.
        let in_memory = |id: &str| self.loaded(id).and_then(|loaded| loaded.session.summary().ok());
        let mut listing = self
            .env()
            .store
            .list_with_errors_using(cwd, in_memory)
            .map_err(|error| RpcError::new(error.kind(), error.to_string()))?;
        for summary in &mut listing.sessions {
            if let Some(loaded) = self.loaded(&summary.session_id) {
                summary.loaded = true;
                summary.running = loaded.session.is_busy();
            }
        }
        Ok(listing)
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
                    if !loaded.is_idle(limit) {
                        continue;
                    }
                    // Check again behind any command that got in meanwhile.
                    let _turn = hub.load_turn(loaded.session.id()).await;
                    let serial = loaded.command_lock.lock().await;
                    if hub.is_loaded(&loaded) && loaded.is_idle(limit) {
                        tracing::debug!(session = loaded.session.id(), "unloading idle session");
                        hub.unload_locked(&loaded, serial).await;
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

/// A turn at one session's load lock. Dropping it releases the lock and, when nobody else
/// waits for it, forgets the lock so the map holds only sessions being loaded or unloaded.
struct LoadTurn<'h> {
    hub: &'h Hub,
    session_id: String,
    lock: Arc<tokio::sync::Mutex<()>>,
    guard: Option<tokio::sync::OwnedMutexGuard<()>>,
}

impl Drop for LoadTurn<'_> {
    fn drop(&mut self) {
        self.guard.take();
        let mut loads = lock(&self.hub.loads);
        // Two owners left (the map and this turn) means no caller waits on this lock; one that
        // clones it later does so under the map's lock and finds the entry gone.
        if loads
            .get(&self.session_id)
            .is_some_and(|l| Arc::ptr_eq(l, &self.lock) && Arc::strong_count(l) == 2)
        {
            loads.remove(&self.session_id);
        }
    }
}

/// What a session is wired to: its event log, pending approvals, approver count and the sink
/// the coding session emits into.
struct Wiring {
    events: Arc<EventLog>,
    pending: Arc<PendingApprovals>,
    approvers: Arc<Approvers>,
    canceller: Arc<Mutex<Option<ClientIdentity>>>,
    sink: EventSink,
}

/// Runs a session load (file reading and repair, blocking work) on a blocking thread, so the
/// async workers keep serving everyone else.
async fn off_the_workers<T, F>(load: impl FnOnce() -> F + Send + 'static) -> Result<T, RpcError>
where
    F: std::future::Future<Output = T>,
    T: Send + 'static,
{
    on_a_blocking_thread(load)
        .await
        .map_err(|error| RpcError::new(ErrorKind::Internal, format!("loading failed: {error}")))
}
