//! Tool process groups that must not outlive the daemon.
//!
//! Every command a tool (or a user shell command) runs is the leader of a process group of its
//! own. Two things make sure those groups die with the daemon:
//!
//! - On Linux the leader gets a parent-death signal (`PR_SET_PDEATHSIG` = `SIGKILL`), so it is
//!   killed the moment the daemon dies, however it dies. The daemon starts each command through
//!   its own binary ([`command`], [`EXEC_FLAG`]), which asks for the signal and then becomes
//!   the command.
//! - Each running group is recorded in `REIN_HOME/run/tool-groups/` (leader pid, the leader's
//!   start time and the daemon's own pid and start time). A daemon that starts finds the
//!   records a crashed daemon left and kills what is left of those groups (children that
//!   outlived their leader). A process is killed only when it belongs to the recorded group,
//!   belongs to this user and started no earlier than the recorded leader, so a reused pid or
//!   another user's process is never touched; records of a daemon that is still alive are
//!   left alone.
//!
//! Records are written only once [`init`] named the directory (the daemon does it at start);
//! without it (tests, other hosts of the tools) nothing is recorded.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

/// The records' directory, under `REIN_HOME/run`.
pub const RECORDS_DIR: &str = "tool-groups";

static RECORDS: OnceLock<PathBuf> = OnceLock::new();

/// What is recorded about one running group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct GroupRecord {
    /// The leader's pid, which is also the group id.
    pgid: i32,
    /// The leader's start time (clock ticks after boot, `/proc/PID/stat` field 22).
    start_time: u64,
    /// The daemon that started it.
    daemon_pid: u32,
    /// The daemon's start time, to tell it from a later process with its pid.
    daemon_start_time: u64,
}

/// Names the directory records go to (`REIN_HOME/run`); only the first call counts.
pub fn init(run_dir: &Path) -> std::io::Result<()> {
    let dir = run_dir.join(RECORDS_DIR);
    {
        use std::os::unix::fs::DirBuilderExt;
        // Under REIN_HOME: owner only, like everything the daemon keeps there.
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&dir)?;
    }
    let _ = RECORDS.set(dir);
    Ok(())
}

/// The argument that makes the daemon's binary a launcher for one tool command: `reind
/// EXEC_FLAG DAEMON_PID PROGRAM ARGS...` sets the parent-death signal and then becomes
/// `PROGRAM ARGS...` (see [`exec_with_parent_death`]).
pub const EXEC_FLAG: &str = "--exec-tool-command";

static LAUNCHER: OnceLock<PathBuf> = OnceLock::new();

/// Names the binary that launches tool commands with a parent-death signal (the daemon's own
/// executable, which handles [`EXEC_FLAG`]); only the first call counts. Without it commands
/// start directly (tests, other hosts of the tools).
pub fn set_launcher(binary: PathBuf) {
    let _ = LAUNCHER.set(binary);
}

/// A command that runs `program`: through the launcher when one is set, so the kernel kills it
/// when the daemon dies. Going through a launcher binary (instead of a `pre_exec` hook) keeps
/// the spawn a plain `posix_spawn` and needs no unsafe code.
pub fn command(program: &Path) -> tokio::process::Command {
    match LAUNCHER.get() {
        Some(launcher) => {
            let mut command = tokio::process::Command::new(launcher);
            command.arg(EXEC_FLAG).arg(std::process::id().to_string()).arg(program);
            command
        }
        None => tokio::process::Command::new(program),
    }
}

/// The launcher's side (`args` are what follows [`EXEC_FLAG`]): asks for `SIGKILL` when the
/// parent dies (Linux), checks the parent is still the daemon that asked, and replaces this
/// process with the program. Returns only on failure.
pub fn exec_with_parent_death(args: &[std::ffi::OsString]) -> std::io::Error {
    use std::os::unix::process::CommandExt;
    let [daemon_pid, program, rest @ ..] = args else {
        return std::io::Error::other("usage: EXEC_FLAG DAEMON_PID PROGRAM [ARGS...]");
    };
    #[cfg(target_os = "linux")]
    if let Err(error) = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL) {
        return std::io::Error::from(error);
    }
    // The daemon died before the signal was asked for: it will never come.
    let parent = nix::unistd::getppid().as_raw().to_string();
    if daemon_pid.to_str() != Some(parent.as_str()) {
        return std::io::Error::other("the daemon that started this command is gone");
    }
    std::process::Command::new(program).args(rest).exec()
}

/// A recorded group; the record goes away when this is dropped (the command ended).
#[derive(Debug)]
pub struct GroupGuard {
    path: Option<PathBuf>,
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(path) = self.path.take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Records the group led by `leader` while the returned guard lives.
pub fn record(leader: Option<u32>) -> GroupGuard {
    let (Some(dir), Some(leader)) = (RECORDS.get(), leader) else {
        return GroupGuard { path: None };
    };
    let Ok(pgid) = i32::try_from(leader) else { return GroupGuard { path: None } };
    let daemon_pid = std::process::id();
    let (Some(start_time), Some(daemon_start_time)) =
        (proc_stat(pgid).map(|s| s.start_time), own_start_time())
    else {
        return GroupGuard { path: None };
    };
    let record = GroupRecord { pgid, start_time, daemon_pid, daemon_start_time };
    let path = dir.join(format!("{pgid}.json"));
    let written = serde_json::to_vec(&record)
        .map_err(std::io::Error::other)
        .and_then(|bytes| crate::atomic::write_atomic(&path, &bytes));
    match written {
        Ok(()) => GroupGuard { path: Some(path) },
        Err(error) => {
            tracing::warn!(%error, pgid, "could not record a tool process group");
            GroupGuard { path: None }
        }
    }
}

/// Kills what is left of the groups a dead daemon recorded under `run_dir`, and removes their
/// records. Returns how many processes were killed.
pub fn reap_leftovers(run_dir: &Path) -> usize {
    let dir = run_dir.join(RECORDS_DIR);
    let Ok(entries) = std::fs::read_dir(&dir) else { return 0 };
    let uid = nix::unistd::geteuid().as_raw();
    let mut killed = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        let record = std::fs::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<GroupRecord>(&bytes).ok());
        let Some(record) = record else {
            let _ = std::fs::remove_file(&path);
            continue;
        };
        if daemon_alive(&record) {
            continue;
        }
        let members = group_members(&record, uid);
        if !members.is_empty() {
            match killpg(Pid::from_raw(record.pgid), Signal::SIGKILL) {
                Ok(()) => {
                    killed += members.len();
                    tracing::info!(
                        pgid = record.pgid,
                        processes = members.len(),
                        "killed a tool process group left by a crashed daemon"
                    );
                }
                Err(error) => tracing::warn!(pgid = record.pgid, %error, "cannot kill a group"),
            }
        }
        let _ = std::fs::remove_file(&path);
    }
    killed
}

/// Whether the daemon that wrote the record still runs (same pid, same start time).
fn daemon_alive(record: &GroupRecord) -> bool {
    let Ok(pid) = i32::try_from(record.daemon_pid) else { return false };
    if record.daemon_pid == std::process::id() {
        return true;
    }
    proc_stat(pid).is_some_and(|stat| stat.start_time == record.daemon_start_time)
}

/// The pids still in the recorded group that are safe to kill: this user's, started no
/// earlier than the recorded leader. Any process in the group failing those checks means the
/// group id was reused, and then nothing is killed.
fn group_members(record: &GroupRecord, uid: u32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut members = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|name| name.parse::<i32>().ok()) else {
            continue;
        };
        let Some(stat) = proc_stat(pid) else { continue };
        if stat.pgrp != record.pgid {
            continue;
        }
        let owner = std::fs::metadata(entry.path()).ok().map(|meta| {
            use std::os::unix::fs::MetadataExt;
            meta.uid()
        });
        let leader_is_ours = pid != record.pgid || stat.start_time == record.start_time;
        if owner != Some(uid) || stat.start_time < record.start_time || !leader_is_ours {
            return Vec::new();
        }
        members.push(pid);
    }
    members
}

/// The fields of `/proc/PID/stat` used here.
struct ProcStat {
    pgrp: i32,
    start_time: u64,
}

fn proc_stat(pid: i32) -> Option<ProcStat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may contain spaces or parentheses;
    // the fields after the last ')' are plain numbers.
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state): pgrp is field 5, starttime field 22.
    Some(ProcStat { pgrp: fields.get(2)?.parse().ok()?, start_time: fields.get(19)?.parse().ok()? })
}

fn own_start_time() -> Option<u64> {
    i32::try_from(std::process::id()).ok().and_then(proc_stat).map(|stat| stat.start_time)
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn reads_its_own_stat() {
        let me = i32::try_from(std::process::id()).unwrap();
        let stat = proc_stat(me).unwrap();
        assert!(stat.start_time > 0);
        assert_eq!(stat.pgrp, nix::unistd::getpgrp().as_raw());
    }

    #[test]
    fn a_record_with_a_reused_or_foreign_group_kills_nothing() {
        let run = tempfile::tempdir().unwrap();
        let dir = run.path().join(RECORDS_DIR);
        std::fs::create_dir_all(&dir).unwrap();
        // Our own group, but with a start time later than ours: as if the id were reused by
        // an older process. Nothing may be killed (this test would die otherwise).
        let me = i32::try_from(std::process::id()).unwrap();
        let own = proc_stat(me).unwrap();
        let record = GroupRecord {
            pgid: own.pgrp,
            start_time: own.start_time + 1_000_000,
            daemon_pid: u32::MAX - 1,
            daemon_start_time: 0,
        };
        std::fs::write(dir.join("x.json"), serde_json::to_vec(&record).unwrap()).unwrap();
        std::fs::write(dir.join("garbage.json"), b"not json").unwrap();
        assert_eq!(reap_leftovers(run.path()), 0);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "records are removed");
    }

    #[test]
    fn a_live_daemons_records_are_left_alone() {
        let run = tempfile::tempdir().unwrap();
        let dir = run.path().join(RECORDS_DIR);
        std::fs::create_dir_all(&dir).unwrap();
        let record = GroupRecord {
            pgid: 1,
            start_time: 0,
            daemon_pid: std::process::id(),
            daemon_start_time: own_start_time().unwrap(),
        };
        std::fs::write(dir.join("1.json"), serde_json::to_vec(&record).unwrap()).unwrap();
        assert_eq!(reap_leftovers(run.path()), 0);
        assert!(dir.join("1.json").exists());
    }
}
