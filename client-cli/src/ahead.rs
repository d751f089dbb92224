//! Connecting to the daemon before anything else, so that a daemon `rein run` has to start
//! starts sooner (issue 18).
//!
//! Parsing the command line builds clap's whole command tree, about half a millisecond, and
//! making the async runtime and its child-process handling takes a little more. A `rein run`
//! that finds no daemon would start one only after all that; connected ahead, at the top of
//! `main`, the daemon's own start (its exec, loading and set-up, some milliseconds) runs on
//! the other core meanwhile. Only a command line that plainly is `rein run` on the default
//! socket is connected ahead: any flag that clap might read as help or version, or another
//! socket, and the command connects itself after parsing, as every other command does. A
//! `rein run` that then stops at a usage error (no prompt, a bad `--cwd`) leaves the daemon it
//! started running, as any client's start does.

use crate::client::{Client, nobody_listens};
use crate::launcher;
use rein_protocol::paths;
use std::ffi::OsString;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

/// A connection made before the arguments were parsed and before the async runtime exists,
/// for the command that turns out to use it.
#[derive(Debug)]
pub struct Ahead {
    /// The socket it was made to.
    socket: PathBuf,
    /// The connection: to the daemon serving the socket, or to the one started for it.
    connection: UnixStream,
    /// The daemon started here, when nothing answered on the socket.
    started: Option<rein_launch::ConnectedStart>,
}

impl Ahead {
    /// For `args` (the command line without the program's name) that run a prompt on the
    /// default socket: connects there, starting the daemon on a connection of its own when
    /// nothing answers, as [`Client::connect_or_start`] does. `None` for any other command
    /// line, and when neither works: the command then tries again itself and reports why.
    /// Blocks only as long as a connect to a local socket or a spawn takes.
    pub fn connect(args: &[OsString]) -> Option<Self> {
        if !runs_a_prompt_on_the_default_socket(args) {
            return None;
        }
        let socket = paths::default_socket().ok()?;
        let (connection, started) = match UnixStream::connect(&socket) {
            Ok(connection) => (connection, None),
            Err(error) if nobody_listens(&error) => {
                match launcher::spawn_daemon_connected_early(&socket) {
                    Ok((daemon, connection)) => (connection, Some(daemon)),
                    Err(error) => {
                        tracing::debug!(%error, "no daemon started ahead; the command tries");
                        return None;
                    }
                }
            }
            Err(error) => {
                tracing::debug!(%error, "no connection ahead; the command connects itself");
                return None;
            }
        };
        Some(Self { socket, connection, started })
    }

    /// The client on this connection, when it was made to `socket` (the one the parsed
    /// command uses). Needs the async runtime entered.
    pub fn into_client_for(self, socket: &Path) -> Option<Client> {
        if self.socket != socket {
            return None;
        }
        Client::opened(self.connection, self.started, socket)
            .inspect_err(|error| tracing::debug!(%error, "the connection made ahead is unusable"))
            .ok()
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
