//! Runs one task: a fresh workspace, a session in the daemon, the prompt with the task's
//! limits and checks, then the outputs. Talks to the daemon only through the protocol
//! (`session/create`, `session/subscribe`, `session/prompt`, `session/export`).

use super::atif::{self, AtifContext};
use super::outputs::{
    self, ATIF_FILE, ATTEMPT_FILE, Attempt, PARTIAL_DIR, PATCH_FILE, PartialMarker, RESULT_FILE,
    SESSION_FILE, SETUP_LOG, TaskDir, TaskResult, TaskStatus, Tokens, WORKSPACE_DIR,
};
use super::task::Task;
use super::workspace::{self, Workspace};
use crate::client::{Client, ClientError};
use crate::session;
use rein_protocol::event::{EndReason, SessionEvent, SubscriptionItem};
use rein_protocol::message::Usage;
use rein_protocol::method::{
    ApprovalPolicy, CreateSessionParams, ExportFormat, PromptParams, RunLimits, SandboxMode,
    SessionRef, SessionState,
};
use rein_protocol::requests as rq;
use rein_protocol::verify::RunOutcome;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// What every task of a batch shares.
#[derive(Debug, Clone)]
pub struct RunSettings {
    /// The daemon's socket.
    pub socket: PathBuf,
    /// The output directory.
    pub out: PathBuf,
    /// Where relative repository paths start (the task file's directory).
    pub base_dir: PathBuf,
    /// The model of tasks that name none.
    pub default_model: Option<String>,
    /// The approval policy of every session (nobody is there to answer).
    pub approval: ApprovalPolicy,
    /// The most one task may cost, in US dollars.
    pub task_max_cost: Option<f64>,
}

/// The batch's global cost budget: tasks start only while money is left, and each gets at
/// most what is left when it starts as its own cost limit.
#[derive(Debug, Default)]
pub struct Budget {
    limit: Option<f64>,
    spent: Mutex<f64>,
}

impl Budget {
    /// A budget of `limit` US dollars (`None`: unlimited), `spent` of it already gone.
    pub fn new(limit: Option<f64>, spent: f64) -> Self {
        Self { limit, spent: Mutex::new(spent) }
    }

    /// What is left (`None`: unlimited).
    pub fn remaining(&self) -> Option<f64> {
        let spent = *self.spent.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        self.limit.map(|limit| (limit - spent).max(0.0))
    }

    /// Whether nothing is left.
    pub fn exhausted(&self) -> bool {
        self.remaining().is_some_and(|left| left <= 0.0)
    }

    /// Records what a task cost.
    pub fn charge(&self, cost: f64) {
        *self.spent.lock().unwrap_or_else(std::sync::PoisonError::into_inner) += cost;
    }
}

/// How a run ended, as the batch records it.
#[derive(Debug, Clone, Default)]
struct RunEnd {
    reason: Option<EndReason>,
    outcome: Option<RunOutcome>,
    error: Option<String>,
    usage: Usage,
    turns: u32,
}

/// Why a task stopped without a result.
enum Stop {
    /// The batch is being interrupted: the attempt is kept as partial, the task runs again
    /// next time.
    Interrupted,
    /// The task cannot run; recorded as an `error` result.
    Failed(String),
}

impl From<ClientError> for Stop {
    fn from(error: ClientError) -> Self {
        Stop::Failed(format!("daemon: {error}"))
    }
}

impl From<workspace::WorkspaceError> for Stop {
    fn from(error: workspace::WorkspaceError) -> Self {
        Stop::Failed(error.to_string())
    }
}

/// Runs `task` to the end and writes its outputs; returns its result, or `None` when the batch
/// was interrupted (`interrupt` became true) before the task finished.
pub async fn run_task(
    settings: &RunSettings,
    task: &Task,
    budget: &Budget,
    interrupt: &watch::Receiver<bool>,
) -> Option<TaskResult> {
    let dir = TaskDir::new(&settings.out, &task.id);
    let started = Instant::now();
    let started_at = outputs::now_rfc3339();
    let previous = recover_interrupted(settings, &dir).await;
    let mut result = TaskResult {
        id: task.id.clone(),
        status: TaskStatus::Error,
        end_reason: None,
        outcome: None,
        error: None,
        cost_usd: 0.0,
        tokens: Tokens::default(),
        turns: 0,
        duration_ms: 0,
        session_id: None,
        model: None,
        base_commit: None,
        verification: None,
        attempt: previous + 1,
        started_at: started_at.clone(),
        finished_at: String::new(),
    };
    let mut attempt =
        Attempt { attempt: previous + 1, session_id: None, base_commit: None, started_at };
    match attempt_task(settings, task, budget, interrupt, &dir, &mut attempt, &mut result).await {
        Ok(()) => result.status = TaskStatus::Finished,
        Err(Stop::Interrupted) => {
            archive_partial(settings, &dir, "the batch was interrupted").await;
            return None;
        }
        Err(Stop::Failed(error)) => result.error = Some(error),
    }
    budget.charge(result.cost_usd);
    result.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    result.finished_at = outputs::now_rfc3339();
    if let Err(error) = outputs::write_json(&dir.file(RESULT_FILE), &result) {
        tracing::warn!(task = %task.id, %error, "cannot write the task's result");
        result.status = TaskStatus::Error;
        result.error = Some(format!("cannot write {RESULT_FILE}: {error}"));
        return Some(result);
    }
    let _ = std::fs::remove_file(dir.file(ATTEMPT_FILE));
    Some(result)
}

async fn attempt_task(
    settings: &RunSettings,
    task: &Task,
    budget: &Budget,
    interrupt: &watch::Receiver<bool>,
    dir: &TaskDir,
    attempt: &mut Attempt,
    result: &mut TaskResult,
) -> Result<(), Stop> {
    let io = |what: &str, error: std::io::Error| Stop::Failed(format!("{what}: {error}"));
    std::fs::create_dir_all(dir.root()).map_err(|e| io("cannot create the task directory", e))?;
    for stale in [RESULT_FILE, SESSION_FILE, ATIF_FILE, PATCH_FILE, SETUP_LOG] {
        let _ = std::fs::remove_file(dir.file(stale));
    }
    let workspace_dir = dir.file(WORKSPACE_DIR);
    if workspace_dir.exists() {
        remove_old_workspace(&workspace_dir)
            .await
            .map_err(|e| io("cannot remove the old workspace", e))?;
    }
    outputs::write_json(&dir.file(ATTEMPT_FILE), attempt)
        .map_err(|e| io("cannot write attempt.json", e))?;

    let workspace = workspace::prepare(task, &settings.base_dir, &workspace_dir).await?;
    result.base_commit = Some(workspace.base.clone());
    attempt.base_commit = Some(workspace.base.clone());
    outputs::write_json(&dir.file(ATTEMPT_FILE), attempt)
        .map_err(|e| io("cannot write attempt.json", e))?;
    workspace::run_setup(&task.setup, &workspace.dir, &dir.file(SETUP_LOG)).await?;
    if *interrupt.borrow() {
        return Err(Stop::Interrupted);
    }

    let mut client = Client::connect_or_start(&settings.socket).await?;
    let hello = client.initialize(false).await?;
    let state = create_session(&mut client, settings, task, &workspace).await?;
    let session_id = state.session_id.clone();
    result.session_id = Some(session_id.clone());
    result.model = Some(state.model.to_string());
    attempt.session_id = Some(session_id.clone());
    outputs::write_json(&dir.file(ATTEMPT_FILE), attempt)
        .map_err(|e| io("cannot write attempt.json", e))?;

    client.subscribe(&session_id, state.last_seq).await?;
    let limits = RunLimits {
        max_cost: min_cost([task.limits.max_cost, settings.task_max_cost, budget.remaining()]),
        ..task.limits.clone()
    };
    let params = PromptParams {
        session_id: session_id.clone(),
        text: task.instruction.clone(),
        images: Vec::new(),
        when_busy: None,
        limits,
        verify: task.verify.clone(),
    };
    let started = client.request::<rq::SessionPrompt>(params).await?;
    let (end, interrupted) =
        follow_run(&mut client, &session_id, &started.run_id, interrupt.clone()).await?;

    let exported = session::export_all(&mut client, &session_id, ExportFormat::Jsonl).await?;
    let end = match end {
        Some(end) => end,
        None => end_from_export(&exported.content, &started.run_id),
    };
    let verification = last_verification(&exported.content, &started.run_id);
    let session = SessionRef { session_id: session_id.clone() };
    let _ = client.request::<rq::SessionClose>(session).await;
    if interrupted {
        return Err(Stop::Interrupted);
    }
    result.end_reason = end.reason;
    result.outcome = end.outcome;
    result.error = end.error.clone();
    result.cost_usd = end.usage.cost.total;
    result.tokens = Tokens::of(&end.usage);
    result.turns = end.turns;
    result.verification = verification;

    write_trajectories(dir, &session_id, &exported.content, &hello.daemon_version, result, false)
        .map_err(|e| io("cannot write the trajectory", e))?;
    let patch = workspace::patch(&workspace).await?;
    outputs::write_atomic(&dir.file(PATCH_FILE), patch.as_bytes())
        .map_err(|e| io("cannot write patch.diff", e))?;
    Ok(())
}

/// The smallest of the cost limits that are set.
fn min_cost(limits: [Option<f64>; 3]) -> Option<f64> {
    limits.into_iter().flatten().reduce(f64::min)
}

/// `session/create` for the task's workspace, with the task's `sandbox` when it has one. A
/// sandbox that is not a known mode, or that the daemon cannot give, fails the task.
async fn create_session(
    client: &mut Client,
    settings: &RunSettings,
    task: &Task,
    workspace: &Workspace,
) -> Result<SessionState, Stop> {
    let sandbox = match &task.sandbox {
        Some(value) => Some(SandboxMode::deserialize(value).map_err(|error| {
            Stop::Failed(format!("the task's sandbox {value} is not a sandbox mode: {error}"))
        })?),
        None => None,
    };
    let params = CreateSessionParams {
        cwd: workspace.dir.display().to_string(),
        model: task.model.clone().or_else(|| settings.default_model.clone()),
        name: Some(format!("batch: {}", task.id)),
        approval_policy: Some(settings.approval),
        sandbox,
        ..CreateSessionParams::default()
    };
    match client.request::<rq::SessionCreate>(params).await {
        Ok(state) => Ok(state),
        Err(ClientError::Rpc(failure)) if let Some(sandbox) = sandbox => Err(Stop::Failed(
            format!("the daemon refused the session with sandbox {}: {failure}", sandbox.as_str()),
        )),
        Err(error) => Err(error.into()),
    }
}

/// Reads the session's events until the run `run_id` ends. On an interrupt it cancels the run
/// and still waits for its end. Returns the end (`None` when events were lost and the end must
/// be read from the session) and whether it was interrupted.
async fn follow_run(
    client: &mut Client,
    session_id: &str,
    run_id: &str,
    mut interrupt: watch::Receiver<bool>,
) -> Result<(Option<RunEnd>, bool), ClientError> {
    let mut cancelled = false;
    loop {
        if !cancelled && *interrupt.borrow() {
            cancelled = true;
            let session = SessionRef { session_id: session_id.to_string() };
            client.request::<rq::SessionCancel>(session).await?;
        }
        let notice = tokio::select! {
            changed = interrupt.changed(), if !cancelled => {
                if changed.is_err() {
                    // The batch dropped the sender: nobody can interrupt any more.
                    std::future::pending::<()>().await;
                }
                continue;
            }
            notice = client.next_session_item() => notice?,
        };
        match notice.item {
            SubscriptionItem::Event(envelope) => {
                if let SessionEvent::AgentEnd {
                    run_id: ended,
                    reason,
                    error,
                    usage,
                    turns,
                    outcome,
                } = envelope.event
                    && ended == run_id
                {
                    let end = RunEnd {
                        reason: Some(reason),
                        outcome: Some(outcome),
                        error,
                        usage,
                        turns,
                    };
                    return Ok((Some(end), cancelled));
                }
            }
            SubscriptionItem::Lagged { .. } | SubscriptionItem::ResyncRequired { .. } => {
                // The end may be among the lost events: wait for the session to be idle and
                // read the end from the session itself.
                wait_idle(client, session_id).await?;
                return Ok((None, cancelled));
            }
            SubscriptionItem::Keepalive { .. } | SubscriptionItem::Unknown => {}
        }
    }
}

async fn wait_idle(client: &mut Client, session_id: &str) -> Result<(), ClientError> {
    loop {
        let session = SessionRef { session_id: session_id.to_string() };
        let state = client.request::<rq::SessionState>(session).await?;
        if !state.running {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The run's end as the session file records it (for when the event was lost).
fn end_from_export(jsonl: &str, run_id: &str) -> RunEnd {
    let info = jsonl
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .rfind(|record| record["type"] == "run_info")
        .unwrap_or(Value::Null);
    let outcome = match last_verification(jsonl, run_id) {
        Some(round) if round["passed"] == true => RunOutcome::Verified,
        Some(_) => RunOutcome::VerifyFailed,
        None => RunOutcome::Unverified,
    };
    let mut usage: Usage = serde_json::from_value(info["usage"].clone()).unwrap_or_default();
    if let Some(cost) = info["cost"].as_f64() {
        usage.cost.total = cost;
    }
    RunEnd {
        reason: serde_json::from_value(info["end_reason"].clone()).ok(),
        outcome: Some(outcome),
        error: info["error"].as_str().map(str::to_string),
        usage,
        turns: info["steps"].as_u64().and_then(|n| u32::try_from(n).ok()).unwrap_or(0),
    }
}

/// The last verification round of run `run_id` in a JSONL trajectory.
fn last_verification(jsonl: &str, run_id: &str) -> Option<Value> {
    jsonl
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .rfind(|record| record["type"] == "verification" && record["run_id"] == run_id)
}

/// Writes `session.jsonl` and `trajectory.atif.json` into `dir`.
fn write_trajectories(
    dir: &TaskDir,
    session_id: &str,
    jsonl: &str,
    version: &str,
    result: &TaskResult,
    partial: bool,
) -> std::io::Result<()> {
    outputs::write_atomic(&dir.file(SESSION_FILE), jsonl.as_bytes())?;
    let mut extra = Map::new();
    extra.insert("task_id".into(), json!(result.id));
    extra.insert("end_reason".into(), json!(result.end_reason));
    extra.insert("outcome".into(), json!(result.outcome));
    extra.insert("base_commit".into(), json!(result.base_commit));
    let context =
        AtifContext { version: version.to_string(), model: result.model.clone(), partial, extra };
    let trajectory = atif::from_rein_jsonl(session_id, jsonl, &context);
    outputs::write_json(&dir.file(ATIF_FILE), &trajectory)
}

/// Before a task runs again: an attempt that left `attempt.json` but no result was
/// interrupted. Its session is cancelled if it still runs, and what it did is kept under
/// `partial/attempt-N/`, marked partial. Returns the number of the last attempt (0: none).
async fn recover_interrupted(settings: &RunSettings, dir: &TaskDir) -> u32 {
    if dir.attempt().is_some() {
        archive_partial(settings, dir, "the batch stopped before this attempt finished").await;
    }
    let archived = std::fs::read_dir(dir.file(PARTIAL_DIR))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.strip_prefix("attempt-")?.parse().ok())
        .max()
        .unwrap_or(0);
    archived.max(dir.result().map_or(0, |result| result.attempt))
}

/// Moves the current attempt's outputs to `partial/attempt-N/` with a `partial.json` marker,
/// exporting its session from the daemon (after cancelling it if it still runs) and the
/// workspace's changes so far. Best effort: what cannot be saved is logged and skipped.
async fn archive_partial(settings: &RunSettings, dir: &TaskDir, reason: &str) {
    let Some(attempt) = dir.attempt() else { return };
    let target = dir.file(PARTIAL_DIR).join(format!("attempt-{}", attempt.attempt));
    if let Err(error) = std::fs::create_dir_all(&target) {
        tracing::warn!(%error, path = %target.display(), "cannot keep a partial attempt");
        return;
    }
    let partial = TaskDir::new(&target, "");
    let exported = match &attempt.session_id {
        Some(session_id) => match export_stopped(&settings.socket, session_id).await {
            Ok(exported) => Some((session_id, exported)),
            Err(error) => {
                tracing::warn!(%error, session_id, "cannot export a partial attempt's session");
                None
            }
        },
        None => None,
    };
    if let Some((session_id, (jsonl, version))) = exported {
        let result = TaskResult {
            id: dir
                .root()
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            status: TaskStatus::Error,
            end_reason: None,
            outcome: None,
            error: Some(reason.to_string()),
            cost_usd: 0.0,
            tokens: Tokens::default(),
            turns: 0,
            duration_ms: 0,
            session_id: Some(session_id.clone()),
            model: None,
            base_commit: None,
            verification: None,
            attempt: attempt.attempt,
            started_at: attempt.started_at.clone(),
            finished_at: String::new(),
        };
        if let Err(error) =
            write_trajectories(&partial, session_id, &jsonl, &version, &result, true)
        {
            tracing::warn!(%error, "cannot write a partial trajectory");
        }
    }
    let workspace_dir = dir.file(WORKSPACE_DIR);
    if let Some(base) = attempt.base_commit.clone()
        && workspace_dir.is_dir()
        && let Ok(patch) = workspace::patch(&Workspace { dir: workspace_dir, base }).await
    {
        let _ = outputs::write_atomic(&partial.file(PATCH_FILE), patch.as_bytes());
    }
    let marker = PartialMarker {
        partial: true,
        attempt: attempt.attempt,
        session_id: attempt.session_id.clone(),
        reason: reason.to_string(),
    };
    if let Err(error) = outputs::write_json(&partial.file("partial.json"), &marker) {
        tracing::warn!(%error, "cannot mark a partial attempt");
    }
    let _ = std::fs::remove_file(dir.file(ATTEMPT_FILE));
}

/// How long removing an interrupted attempt's workspace keeps trying while something still
/// writes into it.
const OLD_WORKSPACE_PATIENCE: Duration = Duration::from_secs(10);

/// Removes the workspace an interrupted attempt left. A batch that was killed leaves its
/// `git clone` or setup command, and the daemon the tool its cancelled run was running, to
/// finish on their own: while they still write into the workspace, its removal finds a
/// directory refilled behind it, so it is tried again, for at most
/// [`OLD_WORKSPACE_PATIENCE`].
async fn remove_old_workspace(dir: &Path) -> std::io::Result<()> {
    remove_retrying(dir, OLD_WORKSPACE_PATIENCE, |dir: &Path| std::fs::remove_dir_all(dir)).await
}

/// Calls `remove` on `dir` until `dir` is gone, again after a pause while it fails the way a
/// directory still written to makes it fail, for at most `patience`.
async fn remove_retrying(
    dir: &Path,
    patience: Duration,
    mut remove: impl FnMut(&Path) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let deadline = tokio::time::Instant::now() + patience;
    loop {
        let error = match remove(dir) {
            Ok(()) => return Ok(()),
            Err(_) if !dir.exists() => return Ok(()),
            Err(error) => error,
        };
        // A directory made, or a file removed, behind the walk.
        let raced = matches!(
            error.kind(),
            std::io::ErrorKind::DirectoryNotEmpty | std::io::ErrorKind::NotFound
        );
        if !raced || tokio::time::Instant::now() >= deadline {
            return Err(error);
        }
        tracing::debug!(%error, dir = %dir.display(), "the old workspace is still written to");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Cancels a session's run if it still runs, waits for it to stop, and exports it. Returns the
/// JSONL and the daemon's version.
async fn export_stopped(socket: &Path, session_id: &str) -> Result<(String, String), ClientError> {
    let mut client = Client::connect_or_start(socket).await?;
    let hello = client.initialize(false).await?;
    let session = SessionRef { session_id: session_id.to_string() };
    let state = client.request::<rq::SessionOpen>(&session).await?;
    if state.running {
        let _ = client.request::<rq::SessionCancel>(&session).await;
        let waited =
            tokio::time::timeout(Duration::from_secs(30), wait_idle(&mut client, session_id));
        let _ = waited.await;
    }
    let exported = session::export_all(&mut client, session_id, ExportFormat::Jsonl).await?;
    let _ = client.request::<rq::SessionClose>(session).await;
    Ok((exported.content, hello.daemon_version))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A removal that finds the directory refilled behind it (what a killed batch's clone or
    /// setup command still writing does) is tried again; other failures, and one that lasts
    /// past the patience, are reported.
    #[tokio::test]
    async fn an_old_workspace_still_written_to_is_removed_on_a_later_try() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("workspace");
        std::fs::create_dir_all(&dir).unwrap();
        let not_empty = || std::io::Error::from(std::io::ErrorKind::DirectoryNotEmpty);
        let mut tries = 0;
        let removed = remove_retrying(&dir, Duration::from_secs(10), |dir| {
            tries += 1;
            if tries < 3 { Err(not_empty()) } else { std::fs::remove_dir_all(dir) }
        });
        removed.await.unwrap();
        assert_eq!(tries, 3);
        assert!(!dir.exists());

        std::fs::create_dir_all(&dir).unwrap();
        let mut tries = 0;
        let denied = remove_retrying(&dir, Duration::from_secs(10), |_| {
            tries += 1;
            Err(std::io::Error::from(std::io::ErrorKind::PermissionDenied))
        });
        assert_eq!(denied.await.unwrap_err().kind(), std::io::ErrorKind::PermissionDenied);
        assert_eq!(tries, 1);
        let stuck = remove_retrying(&dir, Duration::from_millis(120), |_| Err(not_empty()));
        assert_eq!(stuck.await.unwrap_err().kind(), std::io::ErrorKind::DirectoryNotEmpty);
    }

    #[test]
    fn the_smallest_set_cost_limit_wins() {
        assert_eq!(min_cost([None, None, None]), None);
        assert_eq!(min_cost([Some(2.0), None, Some(0.5)]), Some(0.5));
        assert_eq!(min_cost([None, Some(1.0), None]), Some(1.0));
    }

    #[test]
    fn the_budget_runs_out() {
        let budget = Budget::new(Some(1.0), 0.25);
        assert_eq!(budget.remaining(), Some(0.75));
        budget.charge(0.75);
        assert!(budget.exhausted());
        assert!(!Budget::new(None, 5.0).exhausted());
    }

    #[test]
    fn a_lost_end_is_read_from_the_session() {
        let jsonl = concat!(
            r#"{"type":"verification","run_id":"r1","round":1,"passed":false,"checks":[]}"#,
            "\n",
            r#"{"type":"verification","run_id":"r1","round":2,"passed":true,"checks":[]}"#,
            "\n",
            r#"{"type":"run_info","end_reason":"completed","steps":3,"cost":0.5,"usage":{"input":7,"output":3,"total_tokens":10}}"#,
            "\n",
        );
        let end = end_from_export(jsonl, "r1");
        assert_eq!(end.reason, Some(EndReason::Completed));
        assert_eq!(end.outcome, Some(RunOutcome::Verified));
        assert_eq!(end.turns, 3);
        assert_eq!(end.usage.input, 7);
        assert_eq!(end.usage.cost.total, 0.5);
        assert_eq!(end_from_export(jsonl, "other").outcome, Some(RunOutcome::Unverified));
    }
}
