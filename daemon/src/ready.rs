//! Start notification: the daemon tells whoever started it that its socket listens, the
//! moment it does, so nobody polls the socket.
//!
//! The background launcher (`reind` without `--foreground`) makes a pipe, hands its write end
//! to the daemon it spawns (`--ready-fd N`, kept open across exec), and blocks reading the read
//! end. The daemon writes one byte there right after binding and closes the descriptor, so no
//! tool or server it starts later inherits it. If the daemon dies first, the read sees the end
//! of the pipe instead, and the launcher reports the daemon's exit.

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::time::Duration;

/// What the launcher learned from the pipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    /// The daemon's socket listens.
    Listening,
    /// The daemon closed the pipe without saying so: it exited (or is exiting).
    Gone,
    /// Nothing came within the wait.
    TimedOut,
}

/// The launcher's end: a pipe whose write end goes to the daemon.
#[derive(Debug)]
pub struct ReadyPipe {
    reader: std::io::PipeReader,
    writer: std::io::PipeWriter,
}

impl ReadyPipe {
    /// A pipe whose write end survives the daemon's exec (std opens pipes close-on-exec).
    pub fn new() -> std::io::Result<Self> {
        let (reader, writer) = std::io::pipe()?;
        nix::fcntl::fcntl(&writer, nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::empty()))?;
        Ok(Self { reader, writer })
    }

    /// The descriptor number the spawned daemon gets as `--ready-fd`.
    pub fn daemon_fd(&self) -> RawFd {
        self.writer.as_raw_fd()
    }

    /// Waits, after the daemon was spawned, until it listens or is gone, for at most
    /// `timeout`. Closes this process's copy of the write end first, so the pipe ends when
    /// the daemon's copy does.
    pub fn wait(self, timeout: Duration) -> Readiness {
        let Self { reader, writer } = self;
        drop(writer);
        let (sender, receiver) = std::sync::mpsc::channel();
        // A blocking read has no timeout of its own; the thread ends with the pipe or with
        // this process.
        std::thread::spawn(move || {
            let mut byte = [0_u8; 1];
            let outcome = loop {
                match (&reader).read(&mut byte) {
                    Ok(1) => break Readiness::Listening,
                    Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                    _ => break Readiness::Gone,
                }
            };
            let _ = sender.send(outcome);
        });
        receiver.recv_timeout(timeout).unwrap_or(Readiness::TimedOut)
    }
}

/// The daemon's end: tells the launcher behind `fd` that the socket listens, then closes the
/// descriptor. Failing to tell is only logged (the launcher then sees the daemon as gone only
/// when it exits, or times out).
pub fn notify_listening(fd: RawFd) {
    // Opening the descriptor's /proc entry gives a second handle on the pipe without unsafe
    // code; the number itself is closed after.
    let written = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(format!("/proc/self/fd/{fd}"))
        .and_then(|mut pipe| pipe.write_all(b"\n"));
    if let Err(error) = written {
        tracing::warn!(%error, fd, "cannot tell the launcher that the socket listens");
    }
    if let Err(error) = nix::unistd::close(fd) {
        tracing::warn!(%error, fd, "cannot close the launcher's pipe");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_byte_means_listening_and_a_closed_pipe_means_gone() {
        let pipe = ReadyPipe::new().unwrap();
        let mut daemon_end = pipe.writer.try_clone().unwrap();
        daemon_end.write_all(b"\n").unwrap();
        assert_eq!(pipe.wait(Duration::from_secs(10)), Readiness::Listening);

        let pipe = ReadyPipe::new().unwrap();
        let daemon_end = pipe.writer.try_clone().unwrap();
        drop(daemon_end);
        assert_eq!(pipe.wait(Duration::from_secs(10)), Readiness::Gone);

        let pipe = ReadyPipe::new().unwrap();
        let _daemon_end = pipe.writer.try_clone().unwrap();
        assert_eq!(pipe.wait(Duration::from_millis(50)), Readiness::TimedOut);
    }
}
