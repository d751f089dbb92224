//! Provider keys out of reach of every process the model starts.
//!
//! The model's `bash` runs as the daemon's user, so anything that user can read the model can
//! print into the conversation, and from there into the session file and the next request.
//! Three ways lead to a key the daemon was started with, and each is closed:
//!
//! - **its own environment**: tools are started without the key variables
//!   (`BashSettings::hidden_env`);
//! - **the daemon's `/proc/PID/environ`**: the daemon is never left running with a key in the
//!   environment it was started with. `rein` starts it without the key variables and hands
//!   them over on a pipe named by `REIN_SECRETS_FD` (`rein_launch::key_handover`); a daemon
//!   that still finds key variables in its environment (started by hand or by a service
//!   manager, or by a starter that could not read the configuration) re-executes
//!   itself without them at start, while single-threaded, handing them over the same way.
//!   The daemon reads the pipe into memory and lets go of it, so the environment the kernel
//!   shows for the daemon holds no key;
//! - **the daemon's memory** (`/proc/PID/mem`, `ptrace`): the daemon marks itself non-dumpable
//!   (`prctl(PR_SET_DUMPABLE, 0)`), which makes its `/proc/PID/{mem,environ,maps,fd}` owned by
//!   root and refuses `ptrace` from processes of the same user. (Root can still read them; a
//!   daemon running as root gives the model root, and nothing here can help.)

use rein_launch::key_handover::{self, EnvironmentKeys, MAX_PAYLOAD, SECRETS_FD_VAR};
use std::collections::HashMap;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::sync::Arc;

/// Failures moving the keys.
#[derive(Debug, thiserror::Error)]
pub enum SecretsError {
    /// A system call failed.
    #[error("cannot {action}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The cause.
        source: std::io::Error,
    },
    /// The keys do not fit the pipe.
    #[error("the provider key variables hold more than {MAX_PAYLOAD} bytes")]
    TooLarge,
    /// The carried keys are not in the expected form.
    #[error(transparent)]
    Malformed(#[from] key_handover::MalformedKeys),
}

fn io(action: &'static str) -> impl FnOnce(std::io::Error) -> SecretsError {
    move |source| SecretsError::Io { action, source }
}

/// The provider keys, held in the daemon's memory only.
#[derive(Clone, Default)]
pub struct Secrets(Arc<HashMap<String, String>>);

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Names only: a value must never reach a log.
        f.debug_set().entries(self.0.keys()).finish()
    }
}

impl Secrets {
    /// The value of a key variable: the one moved out of the environment, else whatever the
    /// environment has now.
    pub fn get(&self, name: &str) -> Option<String> {
        self.0.get(name).cloned().or_else(|| std::env::var(name).ok())
    }

    /// The names of the keys held.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.0.keys().cloned().collect();
        names.sort();
        names
    }
}

/// Moves the keys out of reach: called first thing by the serving daemon, while it has one
/// thread. Collects the keys handed over on the `REIN_SECRETS_FD` pipe, if any; when key
/// variables (`known`, the providers' `api_key_env`, or `*_API_KEY`) are still in the
/// environment, re-executes the daemon without them, carrying all the keys (and does not
/// return unless that fails). Either way the daemon ends non-dumpable.
pub fn isolate(known: &[String]) -> Result<Secrets, SecretsError> {
    let mut held = match std::env::var(SECRETS_FD_VAR) {
        Ok(fd) => receive(&fd)?,
        Err(_) => HashMap::new(),
    };
    let left = EnvironmentKeys::of_this_process(known);
    if !left.is_empty() {
        held.extend(left.carried);
        return Err(reexecute_without(&held, &left.names));
    }
    nix::sys::prctl::set_dumpable(false).map_err(|errno| SecretsError::Io {
        action: "mark the daemon non-dumpable",
        source: errno.into(),
    })?;
    Ok(Secrets(Arc::new(held)))
}

/// Replaces this process with a fresh copy of the daemon whose environment lacks the
/// variables `names`, which finds `keys` in a pipe instead. Returns only on failure.
fn reexecute_without(keys: &HashMap<String, String>, names: &[std::ffi::OsString]) -> SecretsError {
    let carried = EnvironmentKeys {
        carried: keys.iter().map(|(name, value)| (name.clone(), value.clone())).collect(),
        names: names.to_vec(),
    };
    let reader = match key_handover::filled_pipe(&carried) {
        Ok(Some(reader)) => reader,
        Ok(None) => return SecretsError::TooLarge,
        Err(error) => return io("hand the keys over in a pipe")(error),
    };
    // The read end must survive the exec (std opens pipes close-on-exec).
    if let Err(errno) =
        nix::fcntl::fcntl(&reader, nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::empty()))
    {
        return io("keep the pipe open across exec")(errno.into());
    }
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(error) => return io("find the reind executable")(error),
    };
    let mut args = std::env::args_os();
    let mut command = std::process::Command::new(exe);
    if let Some(arg0) = args.next() {
        command.arg0(arg0);
    }
    command.args(args).env(SECRETS_FD_VAR, reader.as_raw_fd().to_string());
    for name in names {
        command.env_remove(name);
    }
    let error = command.exec();
    drop(reader);
    io("re-execute the daemon without the key variables")(error)
}

/// Reads the keys from the inherited descriptor `fd` and lets go of it.
fn receive(fd: &str) -> Result<HashMap<String, String>, SecretsError> {
    let number: std::os::fd::RawFd = fd.trim().parse().map_err(|_| key_handover::MalformedKeys)?;
    // Opening the descriptor's /proc entry gives a second handle on the pipe without unsafe
    // code; non-blocking, so an empty pipe cannot hang the start.
    let mut pipe = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(format!("/proc/self/fd/{number}"))
        .map_err(io("open the keys' pipe"))?;
    let mut payload = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match pipe.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => payload.extend_from_slice(&chunk[..n]),
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(io("read the keys' pipe")(error)),
        }
    }
    drop(pipe);
    rein_launch::let_go(number).map_err(io("let go of the keys' pipe"))?;
    Ok(key_handover::decode(&payload)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_names_keys_but_never_values() {
        let secrets =
            Secrets(Arc::new(HashMap::from([("OPENAI_API_KEY".into(), "sk-secret".into())])));
        let shown = format!("{secrets:?}");
        assert!(shown.contains("OPENAI_API_KEY") && !shown.contains("sk-secret"), "{shown}");
    }
}
