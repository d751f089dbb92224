//! Connecting to the daemon before the arguments are parsed, so that a daemon `rein run` has
//! to start starts sooner (issue 18).
//!
//! Parsing the command line builds clap's whole command tree, about half a millisecond. A
//! `rein run` that finds no daemon would start one only after that; connected ahead, the
//! daemon's own start (its exec, loading and set-up, some milliseconds) runs on the other
//! core meanwhile. Only a command line that plainly is `rein run` on the default socket is
//! connected ahead: any flag that clap might read as help or version, or another socket, and
//! the command connects itself after parsing, as every other command does. A `rein run` that
//! then stops at a usage error (no prompt, a bad `--cwd`) leaves the daemon it started
//! running, as any client's start does.

use crate::client::Client;
use rein_protocol::paths;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// A connection made before the arguments were parsed, for the command that turns out to use
/// it.
#[derive(Debug)]
pub struct Ahead {
    /// The socket it was made to.
    socket: PathBuf,
    /// The connection, as [`Client::connect_or_start`] made it.
    client: Client,
}

impl Ahead {
    /// For `args` (the command line without the program's name) that run a prompt on the
    /// default socket: connects there, starting the daemon when nothing answers, as the
    /// command itself would after parsing. `None` for any other command line, and when the
    /// connection fails: the command then tries again itself and reports why.
    pub async fn connect(args: &[OsString]) -> Option<Self> {
        if !runs_a_prompt_on_the_default_socket(args) {
            return None;
        }
        let socket = paths::default_socket().ok()?;
        match Client::connect_or_start(&socket).await {
            Ok(client) => Some(Self { socket, client }),
            Err(error) => {
                tracing::debug!(%error, "no connection ahead; the command connects itself");
                None
            }
        }
    }

    /// The connection, when it was made to `socket` (the one the parsed command uses).
    pub fn into_client_for(self, socket: &Path) -> Option<Client> {
        (self.socket == socket).then_some(self.client)
    }
}

/// Whether the command line is `run` followed by words none of which could change what it
/// does before connecting: no `--socket`, no help or version flag (long, or among short flags
/// given together), no argument that is not UTF-8. Errs towards false, which only costs the
/// head start.
fn runs_a_prompt_on_the_default_socket(args: &[OsString]) -> bool {
    let Some((command, rest)) = args.split_first() else { return false };
    if command.to_str() != Some("run") {
        return false;
    }
    rest.iter().all(|arg| match arg.to_str() {
        None => false,
        Some(long) if long.starts_with("--") => {
            let name = long.split('=').next().unwrap_or(long);
            !matches!(name, "--socket" | "--help" | "--version")
        }
        Some(short) if short.starts_with('-') => !short.contains(['h', 'V']),
        Some(_) => true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    #[test]
    fn only_a_plain_run_on_the_default_socket_is_connected_ahead() {
        for plain in [
            &["run", "say ok"][..],
            &["run", "--approve", "yolo", "fix", "the", "tests"],
            &["run", "-c", "--model=anthropic/claude-sonnet-4-5", "go", "on"],
            &["run"],
        ] {
            assert!(runs_a_prompt_on_the_default_socket(&line(plain)), "{plain:?}");
        }
        for other in [
            &[][..],
            &["sessions"],
            &["--socket", "/tmp/r.sock", "run", "hi"],
            &["run", "--socket=/tmp/r.sock", "hi"],
            &["run", "hi", "--socket", "/tmp/r.sock"],
            &["run", "--help"],
            &["run", "-ch"],
            &["run", "-V"],
            &["run", "--version"],
            &["daemon", "stop"],
            &["Run", "hi"],
        ] {
            assert!(!runs_a_prompt_on_the_default_socket(&line(other)), "{other:?}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn an_argument_that_is_not_utf8_is_left_to_the_parser() {
        use std::os::unix::ffi::OsStringExt;
        let args = vec![OsString::from("run"), OsString::from_vec(vec![0xff, 0xfe])];
        assert!(!runs_a_prompt_on_the_default_socket(&args));
    }
}
