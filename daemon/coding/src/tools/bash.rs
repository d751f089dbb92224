//! `bash`: run a shell command in the session's directory, streaming its output.
//!
//! The command runs in a process group of its own, so a timeout or a cancellation kills it
//! together with everything it started (pipelines, background jobs, grandchildren). Standard
//! output and standard error share one pipe, so their lines arrive in the order they were
//! written. [`run_command`] is public so the host can reuse it for user shell commands.

use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use rein_agent::ToolOutput;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

use super::capture::{CapturedOutput, OutputCapture, Utf8Chunks};
use super::spill::{self, SpillLimits};
use super::{ToolCall, ToolContext, ToolSpec, TypedTool};
use crate::environment::CommandCall;

/// How long output is still collected after the shell exited, while something it left in the
/// background keeps the pipe open.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(200);
/// How long output is collected after the process group was killed.
const DRAIN_AFTER_KILL: Duration = Duration::from_millis(500);
/// The longest timeout a call may ask for.
const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);

const DESCRIPTION: &str = "Run a shell command in the working directory and return its \
output (stdout and stderr merged, in order). Output streams live; the result keeps the last \
2000 lines or 50 KB, and when it is cut, the full output is saved to a file whose path is \
given. Standard input is empty. Times out after 120 s unless timeout (seconds) says otherwise. \
A non-zero exit status is reported as an error, with the output.";

const GUIDANCE: &str = "Use bash to build, test, run programs, use git and inspect the \
system. Prefer read, grep, find and ls for looking at files, and edit or write for changing \
them. Commands cannot be interactive: pass flags that avoid prompts and pagers. Give \
long-running commands a larger timeout; do not start servers that never exit without `&` and \
a way to stop them.";

/// What to run, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandRequest {
    /// The command line, passed to the shell with `-c`.
    pub command: String,
    /// The directory it runs in.
    pub cwd: PathBuf,
    /// The shell; `None` picks `bash` when installed, else `sh`.
    pub shell: Option<PathBuf>,
    /// When to kill it.
    pub timeout: Duration,
    /// Where the full output goes when it is too long to keep in memory.
    pub output_dir: PathBuf,
    /// How large that file may grow, and the free space it must leave.
    pub spill: SpillLimits,
    /// Environment variables the command does not get (see [`BashSettings::hidden_env`]).
    pub hidden_env: Vec<String>,
}

/// How a command ended and what it printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandOutcome {
    /// The end of the output, within the result caps.
    pub output: String,
    /// True when `output` is not everything the command printed.
    pub truncated: bool,
    /// Lines in `output`.
    pub shown_lines: usize,
    /// Bytes the command printed.
    pub total_bytes: u64,
    /// Lines the command printed.
    pub total_lines: u64,
    /// The file holding the whole output (or its start), when it was cut.
    pub full_output_path: Option<PathBuf>,
    /// Where the full output went, its cap, or why it was not saved, for the result.
    pub full_output_note: Option<String>,
    /// The exit code, when the shell exited normally.
    pub exit_code: Option<i32>,
    /// The signal that ended the shell, if one did.
    pub signal: Option<i32>,
    /// How long it ran.
    pub duration: Duration,
    /// True when the timeout killed it.
    pub timed_out: bool,
    /// True when a cancellation killed it.
    pub cancelled: bool,
}

impl CommandOutcome {
    /// True when the command ran to the end and exited with status 0.
    pub fn succeeded(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out && !self.cancelled
    }
}

/// Runs `request` on the host, handing each chunk of output to `on_output` as it arrives.
/// Cancelling `cancel`, reaching the timeout, or dropping the returned future kills the
/// command's whole process group. Errors are failures to start the command at all.
pub async fn run_command(
    request: &CommandRequest,
    mut on_output: impl FnMut(&str) + Send,
    cancel: &CancellationToken,
) -> std::io::Result<CommandOutcome> {
    run_launched(request, &Launch::shell(request), &mut on_output, cancel).await
}

/// The process that runs a command: the shell itself, or a sandbox wrapping it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// The program started (through the parent-death launcher, see
    /// [`crate::process_groups::command`]).
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// `None`: the daemon's environment minus [`CommandRequest::hidden_env`]. `Some`: only
    /// these variables.
    pub env: Option<Vec<(OsString, OsString)>>,
}

impl Launch {
    /// `<shell> -c <command>` on the host.
    pub fn shell(request: &CommandRequest) -> Self {
        let shell = request.shell.clone().unwrap_or_else(|| default_shell().to_path_buf());
        Self { program: shell, args: vec!["-c".into(), request.command.clone().into()], env: None }
    }
}

/// Runs `request` as `launch` says: see [`run_command`].
pub(crate) async fn run_launched(
    request: &CommandRequest,
    launch: &Launch,
    on_output: &mut (dyn FnMut(&str) + Send),
    cancel: &CancellationToken,
) -> std::io::Result<CommandOutcome> {
    if !request.cwd.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("working directory {} does not exist", request.cwd.display()),
        ));
    }
    let (reader, writer) = std::io::pipe()?;
    let mut command = crate::process_groups::command(&launch.program);
    command.args(&launch.args);
    match &launch.env {
        None => {
            for variable in &request.hidden_env {
                command.env_remove(variable);
            }
        }
        Some(variables) => {
            command.env_clear().envs(variables.iter().map(|(k, v)| (k, v)));
        }
    }
    command
        .current_dir(&request.cwd)
        .stdin(Stdio::null())
        .stdout(writer.try_clone()?)
        .stderr(writer)
        .env("PAGER", "cat")
        .env("GIT_PAGER", "cat")
        .env("GIT_TERMINAL_PROMPT", "0")
        .process_group(0)
        .kill_on_drop(true);
    let started = Instant::now();
    let mut child = command.spawn()?;
    let _recorded = crate::process_groups::record(child.id());
    // The command holds the parent's copies of the pipe's write end; without dropping it the
    // pipe would never report end of file.
    drop(command);
    let mut group = GroupKiller::new(child.id());
    let mut pipe = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(reader))?;

    let mut output = OutputForwarder {
        capture: OutputCapture::new(&request.output_dir, request.spill),
        chunks: Utf8Chunks::default(),
        on_output,
    };
    let mut buffer = vec![0u8; 16 * 1024];
    let deadline = tokio::time::sleep(request.timeout.min(MAX_TIMEOUT));
    tokio::pin!(deadline);
    let mut status: Option<ExitStatus> = None;
    let mut end_of_output = false;
    let mut killed = Killed::No;
    while !(end_of_output && status.is_some()) {
        tokio::select! {
            read = pipe.read(&mut buffer), if !end_of_output => match read {
                Ok(0) => end_of_output = true,
                Ok(n) => output.push(&buffer[..n]),
                Err(err) => {
                    tracing::warn!(error = %err, "reading command output failed");
                    end_of_output = true;
                }
            },
            waited = child.wait(), if status.is_none() => status = Some(waited?),
            () = &mut deadline => { killed = Killed::Timeout; break; }
            () = cancel.cancelled() => { killed = Killed::Cancel; break; }
            () = tokio::time::sleep(DRAIN_AFTER_EXIT), if status.is_some() => break,
        }
    }

    if killed == Killed::No {
        // Whatever the command left running in the background may go on.
        group.disarm();
    } else {
        group.kill();
        status = Some(child.wait().await?);
        let drain = async {
            while let Ok(n) = pipe.read(&mut buffer).await {
                if n == 0 {
                    break;
                }
                output.push(&buffer[..n]);
            }
        };
        let _ = tokio::time::timeout(DRAIN_AFTER_KILL, drain).await;
    }

    let duration = started.elapsed();
    let CapturedOutput { text, truncated, shown_lines, total_bytes, total_lines, spill } =
        output.finish();
    let (exit_code, signal) = match status {
        Some(status) => {
            use std::os::unix::process::ExitStatusExt;
            (status.code(), status.signal())
        }
        None => (None, None),
    };
    Ok(CommandOutcome {
        output: text,
        truncated,
        shown_lines,
        total_bytes,
        total_lines,
        full_output_path: spill.path().map(Path::to_path_buf),
        full_output_note: spill::describe(&spill),
        exit_code,
        signal,
        duration,
        timed_out: killed == Killed::Timeout,
        cancelled: killed == Killed::Cancel,
    })
}

/// Sends each chunk of output both to the capture and, as text, to the caller.
struct OutputForwarder<'a> {
    capture: OutputCapture,
    chunks: Utf8Chunks,
    on_output: &'a mut (dyn FnMut(&str) + Send),
}

impl OutputForwarder<'_> {
    fn push(&mut self, bytes: &[u8]) {
        self.capture.push(bytes);
        let text = self.chunks.push(bytes);
        if !text.is_empty() {
            (self.on_output)(&text);
        }
    }

    /// Forwards what was held back (an incomplete character at the very end) and ends the
    /// capture.
    fn finish(self) -> CapturedOutput {
        let rest = self.chunks.finish();
        if !rest.is_empty() {
            (self.on_output)(&rest);
        }
        self.capture.finish()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Killed {
    No,
    Timeout,
    Cancel,
}

/// Kills a process group when told to, or when dropped while still armed (the future running
/// the command was dropped).
struct GroupKiller {
    group: Option<Pid>,
}

impl GroupKiller {
    fn new(leader: Option<u32>) -> Self {
        let group = leader.and_then(|pid| i32::try_from(pid).ok()).map(Pid::from_raw);
        Self { group }
    }

    fn kill(&mut self) {
        if let Some(group) = self.group.take()
            && let Err(err) = killpg(group, Signal::SIGKILL)
        {
            tracing::debug!(group = group.as_raw(), error = %err, "killing process group");
        }
    }

    fn disarm(&mut self) {
        self.group = None;
    }
}

impl Drop for GroupKiller {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `bash` when it is installed, else `sh`.
pub(crate) fn default_shell() -> &'static Path {
    static SHELL: OnceLock<PathBuf> = OnceLock::new();
    SHELL.get_or_init(|| {
        let path = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&path)
            .map(|dir| dir.join("bash"))
            .find(|candidate| candidate.is_file())
            .unwrap_or_else(|| PathBuf::from("sh"))
    })
}

/// The `bash` tool.
pub struct BashTool;

impl TypedTool for BashTool {
    type Args = BashArgs;
    const SPEC: ToolSpec = ToolSpec::sequential("bash", DESCRIPTION, GUIDANCE);

    async fn run(ctx: Arc<ToolContext>, args: BashArgs, call: ToolCall) -> ToolOutput {
        let timeout = match args.timeout {
            None => ctx.bash.default_timeout,
            Some(seconds) if seconds.is_finite() && seconds > 0.0 => {
                Duration::from_secs_f64(seconds.min(MAX_TIMEOUT.as_secs_f64()))
            }
            Some(seconds) => {
                return ToolOutput::error(format!(
                    "timeout must be a positive number of seconds, not {seconds}"
                ));
            }
        };
        if args.command.trim().is_empty() {
            return ToolOutput::error("command is empty");
        }
        let request = CommandRequest {
            command: args.command,
            cwd: ctx.cwd.clone(),
            shell: ctx.bash.shell.clone(),
            timeout,
            output_dir: ctx.output_dir.clone(),
            spill: ctx.bash.spill,
            hidden_env: ctx.bash.hidden_env.clone(),
        };
        let first = run_streamed(ctx.env.as_ref(), &request, &call).await;
        let refused = matches!(&first, Ok(outcome) if !outcome.succeeded() && !outcome.cancelled
            && !outcome.timed_out && looks_refused(&outcome.output));
        let unconfined = ctx.env.unconfined().filter(|_| refused);
        let (Ok(outcome), Some(host)) = (&first, unconfined) else {
            return finish(first, timeout, None);
        };
        let why = format!(
            "`{}` failed in the {} and its output says it was not permitted; run it again \
             outside the sandbox, on the host?",
            request.command,
            ctx.env.describe()
        );
        let escalation = match &ctx.escalation {
            Some(escalation) => {
                escalation
                    .allow_unconfined(&call.call_id, &request.command, why, &call.cancel)
                    .await
            }
            None => Err("nobody can be asked here".to_string()),
        };
        match escalation {
            Ok(()) => {
                let again = run_streamed(host.as_ref(), &request, &call).await;
                let note = "[The sandbox refused the first attempt; this ran outside the sandbox \
                            after approval]";
                finish(again, timeout, Some(note.to_string()))
            }
            Err(reason) => {
                let note = format!(
                    "[The sandbox ({}) seems to have refused this command; running it outside \
                     the sandbox needs approval, which was not given: {reason}]",
                    ctx.env.describe()
                );
                finish(Ok(outcome.clone()), timeout, Some(note))
            }
        }
    }
}

/// The arguments of `bash`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BashArgs {
    /// The command line to run (with bash -c, or sh -c without bash).
    command: String,
    /// Seconds before the command is killed (default 120).
    #[schemars(extend("exclusiveMinimum" = 0))]
    timeout: Option<f64>,
}

/// Runs `request` in `env`, streaming its output as the call's updates; the last update is
/// out before this returns.
async fn run_streamed(
    env: &dyn crate::environment::Environment,
    request: &CommandRequest,
    call: &ToolCall,
) -> std::io::Result<CommandOutcome> {
    let (mut on_output, delivered) = coalesced_updates(call.updates.clone());
    let command = CommandCall { request, on_output: &mut on_output, cancel: &call.cancel };
    let outcome = env.run(command).await;
    drop(on_output);
    let _ = delivered.await;
    outcome
}

/// The tool result for a command that ran (or did not start), with an extra note.
fn finish(
    outcome: std::io::Result<CommandOutcome>,
    timeout: Duration,
    note: Option<String>,
) -> ToolOutput {
    let mut output = match outcome {
        Ok(outcome) => result(&outcome, timeout),
        Err(err) => return ToolOutput::error(format!("Cannot run the command: {err}")),
    };
    if let Some(note) = note
        && let Some(rein_protocol::message::ContentBlock::Text { text, .. }) =
            output.content.first_mut()
    {
        text.push_str("\n\n");
        text.push_str(&note);
    }
    output
}

/// Whether a failed command's output reads like the sandbox refused it: a write to a
/// read-only mount, a denied operation, or no network.
fn looks_refused(output: &str) -> bool {
    const SIGNS: [&str; 7] = [
        "Read-only file system",
        "Permission denied",
        "Operation not permitted",
        "Network is unreachable",
        "Could not resolve host",
        "Temporary failure in name resolution",
        "Name or service not known",
    ];
    SIGNS.iter().any(|sign| output.contains(sign))
}

/// Output is forwarded as an update at most this often ...
const UPDATE_INTERVAL: Duration = Duration::from_millis(50);
/// ... or as soon as this much of it is waiting.
const UPDATE_BYTES: usize = 16 * 1024;

/// Batches a command's output into updates: one per [`UPDATE_INTERVAL`] or per
/// [`UPDATE_BYTES`], whichever comes first, so a command printing 60,000 short lines makes a
/// few dozen events instead of one per line. Returns the callback for [`run_command`] and the
/// task that sends the last batch once the callback is dropped.
fn coalesced_updates(
    updates: rein_agent::ToolUpdateSink,
) -> (impl FnMut(&str) + Send, tokio::task::JoinHandle<()>) {
    let (sender, mut chunks) = tokio::sync::mpsc::unbounded_channel::<String>();
    let task = tokio::spawn(async move {
        let mut pending = String::new();
        let mut due: Option<tokio::time::Instant> = None;
        loop {
            let wait = async {
                match due {
                    Some(due) => tokio::time::sleep_until(due).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                chunk = chunks.recv() => match chunk {
                    Some(chunk) => {
                        pending.push_str(&chunk);
                        due.get_or_insert_with(|| tokio::time::Instant::now() + UPDATE_INTERVAL);
                        if pending.len() < UPDATE_BYTES {
                            continue;
                        }
                    }
                    None => {
                        if !pending.is_empty() {
                            updates.text(pending);
                        }
                        return;
                    }
                },
                () = wait => {}
            }
            updates.text(std::mem::take(&mut pending));
            due = None;
        }
    });
    (move |chunk: &str| drop(sender.send(chunk.to_string())), task)
}

/// The tool result for a finished command.
fn result(outcome: &CommandOutcome, timeout: Duration) -> ToolOutput {
    let mut text =
        if outcome.output.is_empty() { "(no output)".to_string() } else { outcome.output.clone() };
    if !text.ends_with('\n') {
        text.push('\n');
    }
    let mut notes = Vec::new();
    if outcome.truncated {
        notes.push(format!(
            "[Output truncated: showing the last {} of {} lines ({} of {} bytes). {}]",
            outcome.shown_lines,
            outcome.total_lines,
            outcome.output.len(),
            outcome.total_bytes,
            outcome.full_output_note.as_deref().unwrap_or("Full output not saved.")
        ));
    }
    if outcome.timed_out {
        notes.push(format!(
            "[Timed out after {} s; the command and its child processes were killed]",
            timeout.as_secs_f64()
        ));
    } else if outcome.cancelled {
        notes.push("[Cancelled; the command and its child processes were killed]".to_string());
    } else if let Some(signal) = outcome.signal {
        notes.push(format!("[Killed by signal {signal}]"));
    } else if let Some(code) = outcome.exit_code.filter(|&code| code != 0) {
        notes.push(format!("[Exit code {code}]"));
    }
    for note in notes {
        text.push('\n');
        text.push_str(&note);
    }
    let details = json!({
        "exitCode": outcome.exit_code,
        "signal": outcome.signal,
        "durationMs": u64::try_from(outcome.duration.as_millis()).unwrap_or(u64::MAX),
        "truncated": outcome.truncated,
        "fullOutputPath": outcome.full_output_path.as_ref().map(|p| p.display().to_string()),
        "totalBytes": outcome.total_bytes,
        "totalLines": outcome.total_lines,
        "timedOut": outcome.timed_out,
        "cancelled": outcome.cancelled,
    });
    let output = ToolOutput::text(text.trim_end().to_string()).with_details(details);
    ToolOutput { is_error: !outcome.succeeded(), ..output }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use rein_agent::ToolUpdateSink;

    /// Waits (without a deadline of its own; the test harness bounds it) until `path` holds a
    /// process id.
    async fn wait_for_pid(path: &Path) -> i32 {
        loop {
            if let Ok(text) = std::fs::read_to_string(path)
                && let Ok(pid) = text.trim().parse()
                && let Some(pid) = host_pid(pid, path.parent().unwrap())
            {
                return pid;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// The host's pid of the process a command in `project` knew as `pid`. Without a sandbox
    /// they are the same; in one (a pid namespace of its own) it is the process whose
    /// innermost pid is `pid` and whose working directory is `project`, or `None` once no
    /// such process lives.
    fn host_pid(pid: i32, project: &Path) -> Option<i32> {
        if std::env::var_os("REIN_TEST_SANDBOX").is_none() {
            return Some(pid);
        }
        std::fs::read_dir("/proc").ok()?.flatten().find_map(|entry| {
            let host: i32 = entry.file_name().to_str()?.parse().ok()?;
            let status = std::fs::read_to_string(entry.path().join("status")).ok()?;
            let inner = status.lines().find_map(|l| l.strip_prefix("NSpid:"))?;
            let inner: i32 = inner.split_whitespace().last()?.parse().ok()?;
            let cwd = std::fs::read_link(entry.path().join("cwd")).ok()?;
            (inner == pid && cwd == project && alive(host)).then_some(host)
        })
    }

    /// True while `pid` is a live process (a zombie waiting to be reaped counts as gone).
    fn alive(pid: i32) -> bool {
        if nix::sys::signal::kill(Pid::from_raw(pid), None).is_err() {
            return false;
        }
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat) => !stat.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'),
            Err(_) => false,
        }
    }

    async fn wait_until_gone(pid: i32) {
        for _ in 0..500 {
            if !alive(pid) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("process {pid} is still running");
    }

    #[tokio::test]
    async fn output_is_merged_and_exit_status_reported() {
        let f = Fixture::new();
        let out = f.call("bash", json!({"command": "echo out; echo err >&2; echo done"})).await;
        assert!(!out.is_error, "{out:?}");
        assert_eq!(text(&out), "out\nerr\ndone");
        let details = out.details.unwrap();
        assert_eq!(details["exitCode"], 0);
        assert_eq!(details["truncated"], false);
        assert!(details["durationMs"].is_u64());

        let out = f.call("bash", json!({"command": "echo failing; exit 3"})).await;
        assert!(out.is_error);
        assert_eq!(text(&out), "failing\n\n[Exit code 3]");
        assert_eq!(out.details.unwrap()["exitCode"], 3);
    }

    #[tokio::test]
    async fn runs_in_the_cwd_with_empty_stdin() {
        let f = Fixture::new();
        f.write("marker.txt", "here");
        let out = f.call("bash", json!({"command": "cat marker.txt; cat; echo end"})).await;
        assert_eq!(text(&out), "hereend");
        let out = f.call("bash", json!({"command": "true"})).await;
        assert_eq!(text(&out), "(no output)");
    }

    #[tokio::test]
    async fn output_streams_as_updates() {
        let f = Fixture::new();
        let (updates, mut rx) = ToolUpdateSink::channel();
        let args = json!({"command": "echo one; echo two"});
        let out = f.tool("bash").execute(invocation(args, updates, CancellationToken::new())).await;
        assert!(!out.is_error);
        let mut streamed = String::new();
        while let Ok(blocks) = rx.try_recv() {
            streamed.extend(blocks.iter().filter_map(|b| b.as_text().map(str::to_string)));
        }
        assert_eq!(streamed, "one\ntwo\n");
    }

    #[tokio::test]
    async fn chatty_output_is_coalesced_into_few_updates() {
        let f = Fixture::new();
        let (updates, mut rx) = ToolUpdateSink::channel();
        // One write per line: without batching, about one update each.
        let args = json!({"command": "for i in $(seq 1 20000); do echo $i; done"});
        let started = Instant::now();
        let out = f.tool("bash").execute(invocation(args, updates, CancellationToken::new())).await;
        let elapsed = started.elapsed();
        assert!(!out.is_error);
        let mut streamed = String::new();
        let mut count = 0u128;
        while let Ok(blocks) = rx.try_recv() {
            count += 1;
            streamed.extend(blocks.iter().filter_map(|b| b.as_text().map(str::to_string)));
        }
        let expected: String = (1..=20000).map(|n| format!("{n}\n")).collect();
        assert_eq!(streamed, expected);
        // At most one update per interval plus one per full batch (and the last one).
        let bound = elapsed.as_millis() / UPDATE_INTERVAL.as_millis()
            + (expected.len() / UPDATE_BYTES) as u128
            + 2;
        assert!(count <= bound, "{count} updates for 20,000 lines in {elapsed:?}");
    }

    #[tokio::test]
    async fn timeout_kills_the_whole_group() {
        let f = Fixture::new();
        let pidfile = f.path("pid");
        let command = "sleep 300 & echo $! > pid; echo started; wait";
        let out = f.call("bash", json!({"command": command, "timeout": 0.5})).await;
        assert!(out.is_error);
        let text = text(&out);
        assert!(text.starts_with("started\n"), "{text}");
        assert!(text.contains("[Timed out after 0.5 s"), "{text}");
        assert_eq!(out.details.unwrap()["timedOut"], true);
        let pid: i32 = std::fs::read_to_string(pidfile).unwrap().trim().parse().unwrap();
        if let Some(pid) = host_pid(pid, &f.ctx.cwd) {
            wait_until_gone(pid).await;
        }
    }

    #[tokio::test]
    async fn cancel_kills_a_grandchild() {
        let f = Fixture::new();
        let tool = f.tool("bash");
        let cancel = CancellationToken::new();
        let (updates, _rx) = ToolUpdateSink::channel();
        let args = json!({"command": "sleep 300 & echo $! > pid; wait"});
        let call = tokio::spawn({
            let cancel = cancel.clone();
            async move { tool.execute(invocation(args, updates, cancel)).await }
        });
        let pid = wait_for_pid(&f.path("pid")).await;
        assert!(alive(pid));
        cancel.cancel();
        let out = call.await.unwrap();
        assert!(out.is_error);
        assert!(text(&out).contains("[Cancelled"), "{}", text(&out));
        assert_eq!(out.details.unwrap()["cancelled"], true);
        wait_until_gone(pid).await;
    }

    #[tokio::test]
    async fn dropping_the_call_kills_the_group() {
        let f = Fixture::new();
        let tool = f.tool("bash");
        let (updates, _rx) = ToolUpdateSink::channel();
        let args = json!({"command": "sleep 300 & echo $! > pid; wait"});
        let call = tokio::spawn(async move {
            tool.execute(invocation(args, updates, Default::default())).await
        });
        let pid = wait_for_pid(&f.path("pid")).await;
        call.abort();
        let _ = call.await;
        wait_until_gone(pid).await;
    }

    #[tokio::test]
    async fn long_output_is_cut_and_saved_in_full() {
        let f = Fixture::new();
        let out = f.call("bash", json!({"command": "seq 1 100000"})).await;
        assert!(!out.is_error);
        let details = out.details.clone().unwrap();
        assert_eq!(details["truncated"], true);
        assert_eq!(details["totalLines"], 100_000);
        let text = text(&out);
        assert!(text.starts_with("98001\n"), "{}", &text[..20]);
        assert!(text.contains("100000\n\n[Output truncated: showing the last 2000 of 100000"));
        let path = details["fullOutputPath"].as_str().unwrap();
        assert!(text.contains(path));
        assert!(path.starts_with(f.ctx.output_dir.to_str().unwrap()));
        let full = std::fs::read_to_string(path).unwrap();
        let expected: String = (1..=100_000).map(|i| format!("{i}\n")).collect();
        assert_eq!(full, expected);
    }

    #[tokio::test]
    async fn invalid_calls() {
        let f = Fixture::new();
        let out = f.call("bash", json!({"command": "true", "timeout": 0})).await;
        assert!(out.is_error && text(&out).contains("timeout must be"));
        let out = f.call("bash", json!({"command": "  "})).await;
        assert!(out.is_error && text(&out).contains("empty"));
        let mut ctx = f.ctx.clone();
        ctx.cwd = f.path("missing");
        let tool = super::super::coding_tools(ctx).into_iter().find(|t| t.name() == "bash");
        let (updates, _rx) = ToolUpdateSink::channel();
        let out = tool
            .unwrap()
            .execute(invocation(json!({"command": "true"}), updates, Default::default()))
            .await;
        assert!(out.is_error && text(&out).contains("does not exist"), "{out:?}");
    }

    #[tokio::test]
    async fn run_command_is_usable_on_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let request = CommandRequest {
            command: "printf 'a\\nb'; exit 7".into(),
            cwd: dir.path().to_path_buf(),
            shell: Some(PathBuf::from("sh")),
            timeout: Duration::from_secs(30),
            hidden_env: Vec::new(),
            output_dir: dir.path().join("out"),
            spill: SpillLimits::default(),
        };
        let mut seen = String::new();
        let outcome =
            run_command(&request, |chunk| seen.push_str(chunk), &CancellationToken::new())
                .await
                .unwrap();
        assert_eq!(seen, "a\nb");
        assert_eq!(outcome.output, "a\nb");
        assert_eq!(outcome.exit_code, Some(7));
        assert!(!outcome.succeeded());
        assert_eq!(outcome.total_lines, 2);
    }
}
