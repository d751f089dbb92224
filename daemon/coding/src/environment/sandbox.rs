//! The Linux sandbox: commands run under bubblewrap (`bwrap`).
//!
//! Every sandboxed command gets a new user, pid, ipc and uts namespace (the daemon's `/proc`
//! is not visible: a fresh `/proc` shows only the command's own processes), a new session
//! (`--new-session`: no terminal to push input into), `--die-with-parent`, no capabilities, an
//! environment holding only `PATH`, `HOME`, `LANG`, `TERM` and `TMPDIR`, no network unless the
//! settings allow it (a new network namespace with only loopback, where nothing listens), and a
//! pids cgroup ([`super::pids_cgroup`]) bounding how many processes it may have. The whole file
//! system is mounted read-only, a private tmpfs on `/tmp`, and, under `workspace-write`, the
//! project directory read-write with its `.git` and `.rein` read-only again. Files rein keeps
//! secret (`auth.toml`) are covered by an empty file.
//!
//! When the command's shell exits, the namespace's first process exits and the kernel kills
//! everything else in it: nothing it left behind (`setsid`, `nohup`) outlives the call.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use rein_protocol::method::SandboxMode;

use super::pids_cgroup::{MAX_PIDS, PidsCgroup};
use super::{
    CommandCall, CommandFuture, Confinement, Environment, EnvironmentError, FilePolicy,
    LocalEnvironment,
};
use crate::tools::{CommandRequest, Launch, run_launched};

/// Environment variables a sandboxed command keeps (from the daemon's), everything else is
/// dropped.
const KEPT_ENV: [&str; 4] = ["PATH", "HOME", "LANG", "TERM"];

/// Sandbox settings from the configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SandboxSettings {
    /// Whether sandboxed commands may use the network (`network = true`).
    pub network: bool,
    /// The bubblewrap binary; `None` looks for `bwrap` on `PATH`.
    pub bwrap: Option<PathBuf>,
    /// The image of `container` sessions.
    pub image: Option<String>,
    /// The container CLI (`docker`, `podman`, or a path); `None` looks for `docker`, then
    /// `podman`, on `PATH`.
    pub engine: Option<PathBuf>,
}

/// Commands under bubblewrap; file operations under the same write rules. See the module docs.
#[derive(Debug)]
pub struct BwrapSandbox {
    confinement: Confinement,
    project: PathBuf,
    bwrap: PathBuf,
    hidden_files: Vec<PathBuf>,
}

impl BwrapSandbox {
    /// A sandbox for a session in `project`, after checking that bubblewrap runs here.
    pub fn new(
        mode: SandboxMode,
        project: &Path,
        settings: &SandboxSettings,
        hidden_files: &[PathBuf],
    ) -> Result<Self, EnvironmentError> {
        let unavailable =
            |reason: String| EnvironmentError::SandboxUnavailable { mode: mode.as_str(), reason };
        let bwrap = match &settings.bwrap {
            Some(path) => path.clone(),
            None => find_on_path("bwrap")
                .ok_or_else(|| unavailable("`bwrap` is not on PATH".to_string()))?,
        };
        probe(&bwrap).map_err(unavailable)?;
        let policy = match mode {
            SandboxMode::WorkspaceWrite => FilePolicy::workspace_write(mode.as_str(), project),
            _ => FilePolicy::read_only(mode.as_str()),
        };
        Ok(Self {
            confinement: Confinement { mode, policy, network: settings.network },
            project: super::policy::resolve_existing(project),
            bwrap,
            hidden_files: hidden_files.to_vec(),
        })
    }

    /// The `bwrap` arguments (before `--`) for a command running in `cwd`.
    fn arguments(&self, cwd: &Path) -> Vec<OsString> {
        let mut args: Vec<OsString> = [
            "--die-with-parent",
            "--new-session",
            "--unshare-user",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--cap-drop",
            "ALL",
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--tmpfs",
            "/tmp",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        if !self.confinement.network {
            args.push("--unshare-net".into());
        }
        let mut bind = |flag: &str, path: &Path| {
            args.push(flag.into());
            args.push(path.into());
            args.push(path.into());
        };
        match self.confinement.mode {
            SandboxMode::WorkspaceWrite => {
                bind("--bind", &self.project);
                for protected in [".git", ".rein"] {
                    let path = self.project.join(protected);
                    if path.exists() {
                        bind("--ro-bind", &path);
                    }
                }
            }
            // The private /tmp covers a project under /tmp; bring it back, read-only.
            _ => bind("--ro-bind", &self.project),
        }
        for hidden in self.hidden_files.iter().filter(|path| path.is_file()) {
            args.extend(["--ro-bind".into(), "/dev/null".into(), hidden.into()]);
        }
        args.extend(["--chdir".into(), cwd.into()]);
        args
    }

    /// What to start for `request`: bwrap (joined to `cgroup` first, when there is one) with a
    /// cleared environment, running the shell.
    fn launch(&self, request: &CommandRequest, cgroup: Option<&PidsCgroup>) -> Launch {
        let shell = request.shell.clone().unwrap_or_else(|| crate::tools::default_shell().into());
        let mut bwrap_argv = vec![self.bwrap.clone().into_os_string()];
        bwrap_argv.extend(self.arguments(&request.cwd));
        bwrap_argv.extend(["--".into(), shell.into_os_string(), "-c".into()]);
        bwrap_argv.push(request.command.clone().into());
        let (program, args) = match cgroup {
            // `sh` joins the cgroup, then becomes bwrap: every process of the command is
            // counted from the first one on.
            Some(cgroup) => {
                let mut args: Vec<OsString> = vec![
                    "-c".into(),
                    "echo $$ > \"$0\" && exec \"$@\"".into(),
                    cgroup.procs_file().into_os_string(),
                ];
                args.extend(bwrap_argv);
                (PathBuf::from("/bin/sh"), args)
            }
            None => {
                let program = PathBuf::from(bwrap_argv.remove(0));
                (program, bwrap_argv)
            }
        };
        let mut env: Vec<(OsString, OsString)> = KEPT_ENV
            .iter()
            .filter_map(|name| std::env::var_os(name).map(|value| ((*name).into(), value)))
            .collect();
        env.push(("TMPDIR".into(), "/tmp".into()));
        Launch { program, args, env: Some(env) }
    }
}

impl Environment for BwrapSandbox {
    fn describe(&self) -> String {
        let network = if self.confinement.network { ", network allowed" } else { "" };
        format!("sandbox {}{network}", self.confinement.mode.as_str())
    }

    fn confinement(&self) -> &Confinement {
        &self.confinement
    }

    fn run<'a>(&'a self, call: CommandCall<'a>) -> CommandFuture<'a> {
        let CommandCall { request, on_output, cancel } = call;
        Box::pin(async move {
            let cgroup = match PidsCgroup::create(MAX_PIDS) {
                Ok(cgroup) => Some(cgroup),
                Err(err) => {
                    warn_once_without_cgroup(&err);
                    None
                }
            };
            let launch = self.launch(request, cgroup.as_ref());
            let outcome = run_launched(request, &launch, on_output, cancel).await;
            if let Some(cgroup) = cgroup {
                cgroup.remove().await;
            }
            outcome
        })
    }

    fn unconfined(&self) -> Option<Arc<dyn Environment>> {
        Some(Arc::new(LocalEnvironment::new()))
    }
}

/// Says once per process that commands run without a process ceiling.
fn warn_once_without_cgroup(err: &std::io::Error) {
    static WARNED: OnceLock<()> = OnceLock::new();
    WARNED.get_or_init(|| {
        tracing::warn!(
            error = %err,
            "no pids cgroup can be made: sandboxed commands run without a process ceiling"
        );
    });
}

/// `name` in a directory of `PATH`.
pub(crate) fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|candidate| candidate.is_file())
}

/// What probing one bubblewrap binary found.
type Probed = (PathBuf, Result<(), String>);

/// Checks once per binary that bubblewrap can make the namespaces the sandbox uses.
fn probe(bwrap: &Path) -> Result<(), String> {
    static PROBED: OnceLock<Mutex<Vec<Probed>>> = OnceLock::new();
    let probed = PROBED.get_or_init(Default::default);
    let mut probed = probed.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, result)) = probed.iter().find(|(path, _)| path == bwrap) {
        return result.clone();
    }
    let result = run_probe(bwrap);
    probed.push((bwrap.to_path_buf(), result.clone()));
    result
}

fn run_probe(bwrap: &Path) -> Result<(), String> {
    let output = std::process::Command::new(bwrap)
        .args([
            "--die-with-parent",
            "--new-session",
            "--unshare-user",
            "--unshare-pid",
            "--unshare-net",
            "--cap-drop",
            "ALL",
            "--ro-bind",
            "/",
            "/",
            "--proc",
            "/proc",
            "--",
            "true",
        ])
        .env_clear()
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|err| format!("cannot start {}: {err}", bwrap.display()))?;
    if output.status.success() {
        Ok(())
    } else {
        let stderr = String::from_utf8_lossy(&output.stderr);
        Err(format!("{} failed ({}): {}", bwrap.display(), output.status, stderr.trim()))
    }
}
