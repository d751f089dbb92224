//! A pids cgroup per sandboxed command, so a fork bomb hits a ceiling instead of the machine.
//!
//! `RLIMIT_NPROC` does not bind a process of the global root user, even inside a user
//! namespace, and counts every process of a user otherwise; a cgroup's `pids.max` counts just
//! the command's processes. The cgroup is made under the cgroup v1 `pids` hierarchy or, on a
//! pure cgroup v2 system, under the v2 root with the `pids` controller enabled. Making one
//! needs write access there (root, or a delegated tree); without it a command runs without the
//! ceiling and [`PidsCgroup::create`] says why in the log.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// The most processes (threads included) one sandboxed command may have at once.
pub const MAX_PIDS: u32 = 512;

const V1_ROOT: &str = "/sys/fs/cgroup/pids";
const V2_ROOT: &str = "/sys/fs/cgroup";

/// One command's cgroup; removed when dropped (once its processes are gone).
#[derive(Debug)]
pub struct PidsCgroup {
    dir: PathBuf,
}

impl PidsCgroup {
    /// A new cgroup allowing `max` processes, or why none could be made.
    pub fn create(max: u32) -> std::io::Result<Self> {
        let root = pids_root()?;
        let dir = root.join(format!("rein-{}-{}", std::process::id(), uuid::Uuid::now_v7()));
        std::fs::create_dir(&dir)?;
        let cgroup = Self { dir };
        std::fs::write(cgroup.dir.join("pids.max"), max.to_string())?;
        Ok(cgroup)
    }

    /// The file a process writes its pid to in order to join.
    pub fn procs_file(&self) -> PathBuf {
        self.dir.join("cgroup.procs")
    }

    /// Removes the cgroup, waiting briefly for its last processes to be reaped.
    pub async fn remove(self) {
        for _ in 0..50 {
            match std::fs::remove_dir(&self.dir) {
                Ok(()) => return,
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => return,
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
        tracing::warn!(cgroup = %self.dir.display(), "a sandbox cgroup is still busy; left behind");
    }
}

impl Drop for PidsCgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// The directory new pids cgroups go under.
fn pids_root() -> std::io::Result<PathBuf> {
    let v1 = Path::new(V1_ROOT);
    if v1.join("pids.max").exists() || v1.join("cgroup.procs").exists() {
        return Ok(v1.to_path_buf());
    }
    let v2 = Path::new(V2_ROOT);
    let controllers = std::fs::read_to_string(v2.join("cgroup.controllers"))?;
    if !controllers.split_whitespace().any(|c| c == "pids") {
        return Err(std::io::Error::other("the cgroup v2 root has no pids controller"));
    }
    let enabled = std::fs::read_to_string(v2.join("cgroup.subtree_control")).unwrap_or_default();
    if !enabled.split_whitespace().any(|c| c == "pids") {
        std::fs::write(v2.join("cgroup.subtree_control"), "+pids")?;
    }
    Ok(v2.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_cgroup_is_made_with_its_ceiling_and_removed() {
        let cgroup = match PidsCgroup::create(7) {
            Ok(cgroup) => cgroup,
            Err(err) => {
                eprintln!("skipped: no writable pids cgroup hierarchy here ({err})");
                return;
            }
        };
        let dir = cgroup.dir.clone();
        assert_eq!(std::fs::read_to_string(dir.join("pids.max")).unwrap().trim(), "7");
        assert!(cgroup.procs_file().exists());
        cgroup.remove().await;
        assert!(!dir.exists());
    }
}
