//! The container environment: one container per session, through the Docker- or
//! Podman-compatible CLI.
//!
//! The container starts from the configured image on the session's first command
//! (`run -d --rm --init`, the project bind-mounted at the same path, no network unless
//! `network = true`, idling on `sleep infinity`); each command runs in it with `exec`, under
//! `sh`, in a process group of its own whose id is left in the container's `/tmp`, so a timeout
//! or a cancellation kills the whole group inside the container and not only the local `exec`
//! client. The container is removed when the session unloads ([`Environment::shutdown`]) or,
//! failing that, when the environment is dropped. The file tools work on the host's copy of
//! the project, which is the container's; they write nowhere else.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use futures::future::BoxFuture;
use rein_protocol::method::SandboxMode;
use tokio::sync::OnceCell;

use super::sandbox::find_on_path;
use super::{
    CommandCall, CommandFuture, Confinement, Environment, EnvironmentError, FilePolicy,
    SandboxSettings,
};
use crate::tools::{CommandRequest, Launch, run_launched};

/// Runs a command inside the container: records its process group, then becomes the command.
/// `$0` is the record's path, `$1` the command line.
const GROUP_WRAPPER: &str = "echo $$ > \"$0\"; exec sh -c \"$1\"";

/// A session's container. See the module docs.
#[derive(Debug)]
pub struct ContainerEnvironment {
    engine: PathBuf,
    image: String,
    project: PathBuf,
    name: String,
    started: OnceCell<Result<(), String>>,
    confinement: Confinement,
}

impl ContainerEnvironment {
    /// A container environment for `project`, after checking that an image is configured and
    /// the engine answers. The container itself starts on first use.
    pub fn new(project: &Path, settings: &SandboxSettings) -> Result<Self, EnvironmentError> {
        let unavailable = |reason: String| EnvironmentError::ContainerUnavailable { reason };
        let image = settings
            .image
            .clone()
            .ok_or_else(|| unavailable("no image is configured".to_string()))?;
        let engine = match &settings.engine {
            Some(engine) if engine.components().count() > 1 => engine.clone(),
            Some(name) => find_on_path(&name.to_string_lossy())
                .ok_or_else(|| unavailable(format!("`{}` is not on PATH", name.display())))?,
            None => find_on_path("docker")
                .or_else(|| find_on_path("podman"))
                .ok_or_else(|| unavailable("neither docker nor podman is on PATH".to_string()))?,
        };
        engine_answers(&engine).map_err(unavailable)?;
        let project = super::policy::resolve_existing(project);
        Ok(Self {
            confinement: Confinement {
                mode: SandboxMode::Container,
                policy: FilePolicy::project_only("container", &project),
                network: settings.network,
            },
            name: format!("rein-{}", uuid::Uuid::now_v7()),
            engine,
            image,
            project,
            started: OnceCell::new(),
        })
    }

    /// The container's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Starts the container once; later calls get the first outcome.
    async fn ensure_started(&self) -> std::io::Result<()> {
        let started = self
            .started
            .get_or_init(|| async {
                let mut command = tokio::process::Command::new(&self.engine);
                command.args(["run", "-d", "--rm", "--init", "--name", &self.name]);
                if !self.confinement.network {
                    command.args(["--network", "none"]);
                }
                let mount = format!("{0}:{0}", self.project.display());
                command.args(["-v", &mount, "-w"]).arg(&self.project);
                command.args([self.image.as_str(), "sleep", "infinity"]);
                let output = command.stdin(Stdio::null()).output().await;
                match output {
                    Ok(output) if output.status.success() => Ok(()),
                    Ok(output) => Err(format!(
                        "starting a container from {} failed: {}",
                        self.image,
                        String::from_utf8_lossy(&output.stderr).trim()
                    )),
                    Err(err) => Err(format!("cannot run {}: {err}", self.engine.display())),
                }
            })
            .await;
        started.clone().map_err(std::io::Error::other)
    }

    /// The `exec` that runs `request` in the container, leaving its group id in `record`.
    fn launch(&self, request: &CommandRequest, record: &str) -> Launch {
        let mut args: Vec<OsString> = vec!["exec".into(), "-w".into(), request.cwd.clone().into()];
        for (name, value) in [("PAGER", "cat"), ("GIT_PAGER", "cat"), ("GIT_TERMINAL_PROMPT", "0")]
        {
            args.extend(["-e".into(), format!("{name}={value}").into()]);
        }
        args.extend([self.name.clone().into(), "setsid".into(), "sh".into(), "-c".into()]);
        args.extend([GROUP_WRAPPER.into(), record.into(), request.command.clone().into()]);
        Launch { program: self.engine.clone(), args, env: None }
    }

    /// Kills the process group recorded in `record` inside the container.
    async fn kill_group(&self, record: &str) {
        let script = format!("kill -KILL -- -$(cat {record}) 2>/dev/null; rm -f {record}");
        let kill = self.engine_command(&["exec", &self.name, "sh", "-c", &script]);
        let _ = tokio::process::Command::from(kill).status().await;
    }

    /// The engine CLI with `args`, its input and output discarded.
    fn engine_command(&self, args: &[&str]) -> std::process::Command {
        let mut command = std::process::Command::new(&self.engine);
        command.args(args).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        command
    }

    /// `rm -f` of the container, once it was started (removing it twice is harmless).
    fn removal(&self) -> Option<std::process::Command> {
        let started = self.started.get().is_some_and(Result::is_ok);
        started.then(|| self.engine_command(&["rm", "-f", &self.name]))
    }
}

impl Environment for ContainerEnvironment {
    fn describe(&self) -> String {
        format!("container {} ({})", self.name, self.image)
    }

    fn confinement(&self) -> &Confinement {
        &self.confinement
    }

    fn run<'a>(&'a self, call: CommandCall<'a>) -> CommandFuture<'a> {
        let CommandCall { request, on_output, cancel } = call;
        Box::pin(async move {
            self.ensure_started().await?;
            let record = format!("/tmp/rein-group-{}", uuid::Uuid::now_v7());
            let launch = self.launch(request, &record);
            let outcome = run_launched(request, &launch, on_output, cancel).await;
            if outcome.as_ref().is_ok_and(|o| o.timed_out || o.cancelled) {
                self.kill_group(&record).await;
            }
            outcome
        })
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Some(removal) = self.removal() {
                let _ = tokio::process::Command::from(removal).status().await;
            }
        })
    }
}

impl Drop for ContainerEnvironment {
    fn drop(&mut self) {
        // Removing an already removed container is harmless; this covers an environment that
        // went away without a shutdown (a failed load).
        if let Some(Ok(mut child)) = self.removal().map(|mut removal| removal.spawn()) {
            std::thread::spawn(move || child.wait());
        }
    }
}

/// Checks that the engine CLI reaches an engine (`version` fails without one).
fn engine_answers(engine: &Path) -> Result<(), String> {
    let output = std::process::Command::new(engine)
        .args(["version"])
        .stdin(Stdio::null())
        .output()
        .map_err(|err| format!("cannot run {}: {err}", engine.display()))?;
    if output.status.success() {
        Ok(())
    } else {
        let stderr = String::from_utf8_lossy(&output.stderr);
        Err(format!("{} reaches no engine: {}", engine.display(), stderr.trim()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_an_image_or_an_engine_there_is_no_container() {
        let dir = tempfile::tempdir().unwrap();
        let no_image = SandboxSettings::default();
        let err = ContainerEnvironment::new(dir.path(), &no_image).unwrap_err();
        assert!(err.to_string().contains("no image is configured"), "{err}");
        let no_engine = SandboxSettings {
            image: Some("debian:stable-slim".into()),
            engine: Some("/nonexistent/docker".into()),
            ..SandboxSettings::default()
        };
        let err = ContainerEnvironment::new(dir.path(), &no_engine).unwrap_err();
        assert!(err.to_string().contains("cannot run /nonexistent/docker"), "{err}");
    }
}
