//! Running one hook command: its own process group, the event as JSON on stdin, stdout and
//! stderr captured separately up to a cap, killed (the whole group) at its timeout or when
//! the work it belongs to is cancelled.

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

/// Bytes of stdout and of stderr kept from one hook; the rest is read and dropped.
pub const MAX_HOOK_OUTPUT: usize = 64 * 1024;

/// How long output is still collected after the hook exited, while something it left in the
/// background keeps a pipe open.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(200);

/// What to run.
#[derive(Debug, Clone)]
pub(crate) struct HookProcess<'a> {
    /// The shell that runs the command (`<shell> -c <command>`).
    pub(crate) shell: &'a Path,
    /// The command line.
    pub(crate) command: &'a str,
    /// Where it runs.
    pub(crate) cwd: &'a Path,
    /// Variables added to its environment.
    pub(crate) env: &'a [(String, String)],
    /// Variables removed from its environment (API keys).
    pub(crate) hidden_env: &'a [String],
    /// When to kill it.
    pub(crate) timeout: Duration,
}

/// How a hook process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HookExit {
    /// It exited with this code.
    Code(i32),
    /// A signal ended it.
    Signal(i32),
    /// It ran past its timeout and was killed.
    TimedOut,
    /// The work it belonged to was cancelled and it was killed.
    Cancelled,
    /// It could not be started.
    SpawnFailed(String),
}

/// A finished hook process.
#[derive(Debug, Clone)]
pub(crate) struct HookProcessResult {
    /// How it ended.
    pub(crate) exit: HookExit,
    /// Its standard output, up to the cap.
    pub(crate) stdout: String,
    /// Its standard error, up to the cap.
    pub(crate) stderr: String,
    /// How long it ran.
    pub(crate) duration: Duration,
}

/// Runs one hook with `input` on its stdin.
pub(crate) async fn run_hook_process(
    process: &HookProcess<'_>,
    input: &[u8],
    cancel: &CancellationToken,
) -> HookProcessResult {
    let started = Instant::now();
    let failed = |error: std::io::Error| HookProcessResult {
        exit: HookExit::SpawnFailed(error.to_string()),
        stdout: String::new(),
        stderr: String::new(),
        duration: started.elapsed(),
    };
    let mut command = tokio::process::Command::new(process.shell);
    command
        .arg("-c")
        .arg(process.command)
        .current_dir(process.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    for variable in process.hidden_env {
        command.env_remove(variable);
    }
    for (name, value) in process.env {
        command.env(name, value);
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(error) => return failed(error),
    };
    let group = child.id().and_then(|pid| i32::try_from(pid).ok()).map(Pid::from_raw);
    let mut killer = GroupKiller(group);
    if let Some(mut stdin) = child.stdin.take() {
        let input = input.to_vec();
        // A hook that does not read its input closes the pipe early; that is not an error.
        tokio::spawn(async move {
            let _ = stdin.write_all(&input).await;
            let _ = stdin.shutdown().await;
        });
    }
    let stdout = Arc::new(Mutex::new(Vec::new()));
    let stderr = Arc::new(Mutex::new(Vec::new()));
    let readers = [
        child.stdout.take().map(|pipe| tokio::spawn(read_capped(pipe, stdout.clone()))),
        child.stderr.take().map(|pipe| tokio::spawn(read_capped(pipe, stderr.clone()))),
    ];
    let exit = tokio::select! {
        waited = child.wait() => match waited {
            Ok(status) => {
                use std::os::unix::process::ExitStatusExt;
                match (status.code(), status.signal()) {
                    (Some(code), _) => HookExit::Code(code),
                    (None, Some(signal)) => HookExit::Signal(signal),
                    (None, None) => HookExit::Signal(0),
                }
            }
            Err(error) => HookExit::SpawnFailed(error.to_string()),
        },
        () = tokio::time::sleep(process.timeout) => HookExit::TimedOut,
        () = cancel.cancelled() => HookExit::Cancelled,
    };
    match exit {
        HookExit::TimedOut | HookExit::Cancelled => {
            killer.kill();
            let _ = child.wait().await;
        }
        // What the hook left running in the background may go on.
        _ => killer.0 = None,
    }
    for reader in readers.into_iter().flatten() {
        let abort = reader.abort_handle();
        if tokio::time::timeout(DRAIN_AFTER_EXIT, reader).await.is_err() {
            abort.abort();
        }
    }
    let text = |buffer: &Arc<Mutex<Vec<u8>>>| {
        String::from_utf8_lossy(&buffer.lock().unwrap_or_else(PoisonError::into_inner)).into_owned()
    };
    HookProcessResult {
        exit,
        stdout: text(&stdout),
        stderr: text(&stderr),
        duration: started.elapsed(),
    }
}

/// Reads a pipe to its end, keeping the first [`MAX_HOOK_OUTPUT`] bytes.
async fn read_capped(mut pipe: impl AsyncRead + Unpin, kept: Arc<Mutex<Vec<u8>>>) {
    let mut buffer = vec![0u8; 8 * 1024];
    loop {
        match pipe.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                let mut kept = kept.lock().unwrap_or_else(PoisonError::into_inner);
                let room = MAX_HOOK_OUTPUT.saturating_sub(kept.len());
                kept.extend_from_slice(&buffer[..n.min(room)]);
            }
        }
    }
}

/// Kills the hook's process group when told to or when dropped armed (the future running the
/// hook was dropped).
struct GroupKiller(Option<Pid>);

impl GroupKiller {
    fn kill(&mut self) {
        if let Some(group) = self.0.take()
            && let Err(error) = killpg(group, Signal::SIGKILL)
        {
            tracing::debug!(group = group.as_raw(), %error, "killing a hook's process group");
        }
    }
}

impl Drop for GroupKiller {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn process<'a>(command: &'a str, cwd: &'a Path, timeout: Duration) -> HookProcess<'a> {
        HookProcess { shell: Path::new("sh"), command, cwd, env: &[], hidden_env: &[], timeout }
    }

    #[tokio::test]
    async fn stdin_stdout_stderr_and_the_exit_code_are_kept_apart() {
        let dir = tempfile::tempdir().unwrap();
        let cancel = CancellationToken::new();
        let hook = process("cat; echo oops >&2; exit 3", dir.path(), Duration::from_secs(30));
        let result = run_hook_process(&hook, b"{\"a\":1}", &cancel).await;
        assert_eq!(result.exit, HookExit::Code(3));
        assert_eq!(result.stdout, "{\"a\":1}");
        assert_eq!(result.stderr, "oops\n");
    }

    #[tokio::test]
    async fn a_hook_past_its_timeout_is_killed_with_its_group() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let command = format!("sleep 300 & echo $! > {}; wait", pid_file.display());
        let hook = process(&command, dir.path(), Duration::from_millis(500));
        let result = run_hook_process(&hook, b"", &CancellationToken::new()).await;
        assert_eq!(result.exit, HookExit::TimedOut);
        let pid: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
        // The background sleep was in the hook's group, so it is gone too (or a zombie
        // about to be reaped by init).
        let mut gone = false;
        for _ in 0..100 {
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            if state.is_empty() || state.contains(") Z ") {
                gone = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(gone, "the hook's background child survived");
    }

    #[tokio::test]
    async fn output_is_capped() {
        let dir = tempfile::tempdir().unwrap();
        let hook =
            process("head -c 200000 /dev/zero | tr '\\0' x", dir.path(), Duration::from_secs(30));
        let result = run_hook_process(&hook, b"", &CancellationToken::new()).await;
        assert_eq!(result.exit, HookExit::Code(0));
        assert_eq!(result.stdout.len(), MAX_HOOK_OUTPUT);
    }

    #[tokio::test]
    async fn a_missing_directory_is_a_spawn_failure() {
        let hook = process("true", Path::new("/no/such/dir"), Duration::from_secs(5));
        let result = run_hook_process(&hook, b"", &CancellationToken::new()).await;
        assert!(matches!(result.exit, HookExit::SpawnFailed(_)), "{:?}", result.exit);
    }
}
