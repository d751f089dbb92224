//! Provider keys out of reach of every process the model starts.
//!
//! The model's `bash` runs as the daemon's user, so anything that user can read the model can
//! print into the conversation, and from there into the session file and the next request.
//! Three ways lead to a key the daemon was started with, and each is closed:
//!
//! - **its own environment**: tools are started without the key variables
//!   (`BashSettings::hidden_env`);
//! - **the daemon's `/proc/PID/environ`**: at start, while still single-threaded, the daemon
//!   moves the key variables out of its environment and re-executes itself without them. The
//!   keys travel to the new image through a pipe whose descriptor number is in
//!   `REIN_SECRETS_FD`; the new image reads them into memory and closes the pipe, so the
//!   environment the kernel shows for the daemon holds no key;
//! - **the daemon's memory** (`/proc/PID/mem`, `ptrace`): the daemon marks itself non-dumpable
//!   (`prctl(PR_SET_DUMPABLE, 0)`), which makes its `/proc/PID/{mem,environ,maps,fd}` owned by
//!   root and refuses `ptrace` from processes of the same user. (Root can still read them; a
//!   daemon running as root gives the model root, and nothing here can help.)

use std::collections::HashMap;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::sync::Arc;

/// The environment variable naming the descriptor that carries the keys to the re-executed
/// daemon.
pub const SECRETS_FD_VAR: &str = "REIN_SECRETS_FD";

/// The most bytes of keys carried (a pipe's buffer must hold them all before the exec).
const MAX_PAYLOAD: usize = 60 * 1024;

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
    #[error("the keys handed over in {SECRETS_FD_VAR} are malformed")]
    Malformed,
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

/// Whether a variable holds a provider key: one of `known` (the providers' `api_key_env`), or
/// any variable named `*_API_KEY`.
pub fn is_key_variable(name: &str, known: &[String]) -> bool {
    known.iter().any(|k| k == name) || name.ends_with("_API_KEY")
}

/// Moves the keys out of reach: called first thing by the serving daemon, while it has one
/// thread. On the first call it re-executes the daemon without the key variables (and does
/// not return unless that fails); in the re-executed daemon it collects the keys from the
/// pipe. Either way the daemon ends non-dumpable.
pub fn isolate(known: &[String]) -> Result<Secrets, SecretsError> {
    let secrets = match std::env::var(SECRETS_FD_VAR) {
        Ok(fd) => receive(&fd)?,
        Err(_) => {
            let keys: Vec<(String, String)> =
                std::env::vars().filter(|(name, _)| is_key_variable(name, known)).collect();
            if !keys.is_empty() {
                return Err(reexecute_without(&keys));
            }
            Secrets::default()
        }
    };
    nix::sys::prctl::set_dumpable(false).map_err(|errno| SecretsError::Io {
        action: "mark the daemon non-dumpable",
        source: errno.into(),
    })?;
    Ok(secrets)
}

/// Replaces this process with a fresh copy of the daemon whose environment lacks `keys`, which
/// it finds in a pipe instead. Returns only on failure.
fn reexecute_without(keys: &[(String, String)]) -> SecretsError {
    let payload = encode(keys);
    if payload.len() > MAX_PAYLOAD {
        return SecretsError::TooLarge;
    }
    let (reader, writer) = match std::io::pipe() {
        Ok(ends) => ends,
        Err(error) => return io("create a pipe")(error),
    };
    // Written before the exec: the pipe's buffer holds it until the new image reads it.
    let written = (&writer).write_all(&payload);
    drop(writer);
    if let Err(error) = written {
        return io("write the keys to the pipe")(error);
    }
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
    for (name, _) in keys {
        command.env_remove(name);
    }
    let error = command.exec();
    drop(reader);
    io("re-execute the daemon without the key variables")(error)
}

/// Reads the keys from the inherited descriptor `fd` and closes it.
fn receive(fd: &str) -> Result<Secrets, SecretsError> {
    let number: std::os::fd::RawFd = fd.trim().parse().map_err(|_| SecretsError::Malformed)?;
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
    nix::unistd::close(number).map_err(|errno| SecretsError::Io {
        action: "close the keys' pipe",
        source: errno.into(),
    })?;
    decode(&payload).map(|keys| Secrets(Arc::new(keys)))
}

/// `name NUL value NUL` for each key.
fn encode(keys: &[(String, String)]) -> Vec<u8> {
    let mut payload = Vec::new();
    for (name, value) in keys {
        payload.extend_from_slice(name.as_bytes());
        payload.push(0);
        payload.extend_from_slice(value.as_bytes());
        payload.push(0);
    }
    payload
}

fn decode(payload: &[u8]) -> Result<HashMap<String, String>, SecretsError> {
    let text = std::str::from_utf8(payload).map_err(|_| SecretsError::Malformed)?;
    if text.is_empty() {
        return Ok(HashMap::new());
    }
    let body = text.strip_suffix('\0').ok_or(SecretsError::Malformed)?;
    let parts: Vec<&str> = body.split('\0').collect();
    if !parts.len().is_multiple_of(2) || parts.chunks(2).any(|pair| pair[0].is_empty()) {
        return Err(SecretsError::Malformed);
    }
    Ok(parts.chunks(2).map(|pair| (pair[0].to_string(), pair[1].to_string())).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_survive_the_trip_through_the_payload() {
        let keys = vec![
            ("OPENAI_API_KEY".to_string(), "sk-one".to_string()),
            ("MY_KEY".to_string(), "with=equals and spaces".to_string()),
            ("EMPTY_KEY".to_string(), String::new()),
        ];
        let decoded = decode(&encode(&keys)).unwrap();
        assert_eq!(decoded.len(), 3);
        assert_eq!(decoded["MY_KEY"], "with=equals and spaces");
        assert_eq!(decoded["EMPTY_KEY"], "");
        assert!(decode(b"").unwrap().is_empty());
        assert!(decode(b"NAME_ONLY\0").is_err());
        assert!(decode(&[0xff, 0]).is_err());
    }

    #[test]
    fn key_variables_are_the_known_ones_and_any_api_key() {
        let known = vec!["REIN_CANARY_KEY".to_string()];
        assert!(is_key_variable("REIN_CANARY_KEY", &known));
        assert!(is_key_variable("GROQ_API_KEY", &known));
        assert!(!is_key_variable("HOME", &known));
    }

    #[test]
    fn debug_output_names_keys_but_never_values() {
        let secrets =
            Secrets(Arc::new(HashMap::from([("OPENAI_API_KEY".into(), "sk-secret".into())])));
        let shown = format!("{secrets:?}");
        assert!(shown.contains("OPENAI_API_KEY") && !shown.contains("sk-secret"), "{shown}");
    }
}
