//! Where tools run: the boundary every coding tool goes through to run a command or to read,
//! write, list and stat files.
//!
//! - [`LocalEnvironment`]: on the host as the daemon's user, no confinement (`sandbox = "off"`).
//! - [`sandbox::BwrapSandbox`]: commands run under bubblewrap (`read-only`,
//!   `workspace-write`); the file operations of the tools obey the same write rules on the host
//!   side.
//! - [`container::ContainerEnvironment`]: commands run in a container of the session's own
//!   (`container`).
//!
//! See `docs/sandbox.md` for what each promises.
//!
//! A session picks one when it loads ([`for_session`]); asking for a sandbox that cannot be had
//! is an [`EnvironmentError`], never a silent fall back to none.

pub mod container;
pub mod pids_cgroup;
pub mod policy;
pub mod sandbox;

use std::fs::{File, Metadata};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;
use ignore::WalkBuilder;
use rein_protocol::method::SandboxMode;
use tokio_util::sync::CancellationToken;

use crate::tools::{CommandOutcome, CommandRequest, run_command};

pub use container::ContainerEnvironment;
pub use policy::FilePolicy;
pub use sandbox::{BwrapSandbox, SandboxSettings};

/// Streams a command's output to its caller, chunk by chunk.
pub type OutputSink<'a> = &'a mut (dyn FnMut(&str) + Send);

/// A running command: how it ended, or why it could not start.
pub type CommandFuture<'a> = BoxFuture<'a, std::io::Result<CommandOutcome>>;

/// One command for [`Environment::run`]: what to run, where its output goes, and what stops
/// it.
pub struct CommandCall<'a> {
    /// The command.
    pub request: &'a CommandRequest,
    /// Receives its output, chunk by chunk.
    pub on_output: OutputSink<'a>,
    /// Kills the command's process group when cancelled.
    pub cancel: &'a CancellationToken,
}

/// What every environment states the same way: the sandbox mode commands run under, the
/// rules the file operations obey, and whether commands may use the network. An environment
/// holds one and answers [`Environment::mode`], [`Environment::policy`] and
/// [`Environment::confines_commands`] from it.
#[derive(Debug, Clone, Default)]
pub struct Confinement {
    /// The sandbox mode commands run under.
    pub mode: SandboxMode,
    /// The rules the file operations obey.
    pub policy: FilePolicy,
    /// Whether commands may use the network.
    pub network: bool,
}

impl Confinement {
    /// The host's: no sandbox, no file rules, the network open.
    pub fn host() -> Self {
        Self { mode: SandboxMode::Off, policy: FilePolicy::default(), network: true }
    }
}

/// What tools run commands and touch files through. File methods block (tools call them off
/// the async threads); [`Environment::run`] is async and kills the command's whole process
/// group on timeout, cancellation or drop.
pub trait Environment: Send + Sync + std::fmt::Debug {
    /// A short description for messages and logs (`local`, `sandbox workspace-write`).
    fn describe(&self) -> String;

    /// The mode, file rules and network of this environment.
    fn confinement(&self) -> &Confinement;

    /// The sandbox mode commands run under.
    fn mode(&self) -> SandboxMode {
        self.confinement().mode
    }

    /// True when commands run confined and without network: approvals may then let them
    /// through under `auto-edit`.
    fn confines_commands(&self) -> bool {
        let confinement = self.confinement();
        confinement.mode != SandboxMode::Off && !confinement.network
    }

    /// The rules the file operations obey.
    fn policy(&self) -> &FilePolicy {
        &self.confinement().policy
    }

    /// Runs a command, streaming its output to the call's sink. Errors are failures to start
    /// it.
    fn run<'a>(&'a self, call: CommandCall<'a>) -> CommandFuture<'a>;

    /// The same command on the host without confinement (after a person approved it), or
    /// `None` when this environment has no such thing (it is the host already).
    fn unconfined(&self) -> Option<Arc<dyn Environment>> {
        None
    }

    /// Metadata of `path`, following symlinks.
    fn stat(&self, path: &Path) -> std::io::Result<Metadata> {
        self.policy().check_read(path)?;
        std::fs::metadata(path)
    }

    /// Opens `path` for reading.
    fn open(&self, path: &Path) -> std::io::Result<File> {
        self.policy().check_read(path)?;
        File::open(path)
    }

    /// The whole content of `path`.
    fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        let mut bytes = Vec::new();
        self.open(path)?.read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    /// Replaces (or creates) `path` atomically, creating missing parent directories.
    fn write(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        self.policy().check_write(path)?;
        crate::atomic::write_atomic(path, bytes)
    }

    /// Stops what the environment keeps running between commands (a container); called when
    /// the session unloads.
    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }

    /// A gitignore-aware walk of `root` (see `tools::walk`), leaving out what may not be read.
    fn walk(&self, root: &Path) -> std::io::Result<WalkBuilder> {
        self.policy().check_read(root)?;
        let mut builder = crate::tools::walker(root);
        let policy = self.policy().clone();
        if policy.restricts_reads() {
            builder.filter_entry(move |entry| {
                entry.file_name() != ".git" && policy.check_read(entry.path()).is_ok()
            });
        }
        Ok(builder)
    }
}

/// Tools run on the host as the daemon's user: what rein did before sandboxes existed.
#[derive(Debug)]
pub struct LocalEnvironment {
    confinement: Confinement,
}

impl Default for LocalEnvironment {
    fn default() -> Self {
        Self { confinement: Confinement::host() }
    }
}

impl LocalEnvironment {
    /// The host, unconfined.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Environment for LocalEnvironment {
    fn describe(&self) -> String {
        "local".to_string()
    }

    fn confinement(&self) -> &Confinement {
        &self.confinement
    }

    fn run<'a>(&'a self, call: CommandCall<'a>) -> CommandFuture<'a> {
        Box::pin(run_command(call.request, call.on_output, call.cancel))
    }
}

/// Why a session's environment could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum EnvironmentError {
    /// bubblewrap is not installed, or cannot make namespaces here.
    #[error(
        "sandbox `{mode}` was asked for but bubblewrap cannot run here: {reason}. Install \
         bubblewrap (`apt-get install bubblewrap`) on a kernel that allows user and pid \
         namespaces, or choose `sandbox = \"off\"`"
    )]
    SandboxUnavailable {
        /// The mode asked for.
        mode: &'static str,
        /// What went wrong.
        reason: String,
    },
    /// No container can be started: no image configured, no engine CLI, or no engine.
    #[error(
        "sandbox `container` was asked for but no container can be started: {reason}. Set \
         `[sandbox_settings] image`, install a Docker- or Podman-compatible engine, or choose \
         another sandbox"
    )]
    ContainerUnavailable {
        /// What went wrong.
        reason: String,
    },
}

/// The environment of a session working in `project` under `mode`.
pub fn for_session(
    mode: SandboxMode,
    project: &Path,
    settings: &SandboxSettings,
    hidden_files: &[PathBuf],
) -> Result<Arc<dyn Environment>, EnvironmentError> {
    match mode {
        SandboxMode::Off => Ok(Arc::new(LocalEnvironment::new())),
        SandboxMode::ReadOnly | SandboxMode::WorkspaceWrite => {
            Ok(Arc::new(BwrapSandbox::new(mode, project, settings, hidden_files)?))
        }
        SandboxMode::Container => Ok(Arc::new(ContainerEnvironment::new(project, settings)?)),
    }
}
