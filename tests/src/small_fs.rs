//! A small file system for full-disk tests: a tmpfs of a few megabytes mounted over a
//! directory (usually a fixture's `REIN_HOME`), filled on demand, unmounted when dropped.
//!
//! Mounting needs root (CAP_SYS_ADMIN). Where it is not permitted, [`SmallFs::mount`] says why
//! and the test prints that it is skipped.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A tmpfs mounted over a directory; unmounted (lazily, so open files do not stop it) when
/// dropped, also when the test fails.
#[derive(Debug)]
pub struct SmallFs {
    dir: PathBuf,
}

impl SmallFs {
    /// Mounts a tmpfs of `size` (as `mount` takes it: `2m`) over `dir`. `Err` says why it
    /// cannot be done here (not root, no CAP_SYS_ADMIN, no `mount`).
    pub fn mount(dir: &Path, size: &str) -> Result<Self, String> {
        if !nix::unistd::geteuid().is_root() {
            return Err("mounting a tmpfs needs root".into());
        }
        let output = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0700"), "tmpfs"])
            .arg(dir)
            .output()
            .map_err(|error| format!("cannot run mount: {error}"))?;
        if !output.status.success() {
            return Err(format!(
                "mount -t tmpfs failed: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        Ok(Self { dir: dir.to_path_buf() })
    }

    /// Mounts like [`SmallFs::mount`], or prints why the calling test is skipped and returns
    /// `None`.
    pub fn mount_or_skip(dir: &Path, size: &str, test: &str) -> Option<Self> {
        match Self::mount(dir, size) {
            Ok(fs) => Some(fs),
            Err(reason) => {
                eprintln!("skipping {test}: cannot mount a small file system here ({reason})");
                None
            }
        }
    }

    /// The filler file [`SmallFs::fill`] writes.
    pub fn filler(&self) -> PathBuf {
        self.dir.join("filler")
    }

    /// Writes the filler file until the file system is full. Returns the bytes written.
    pub fn fill(&self) -> u64 {
        let mut file = match std::fs::File::create(self.filler()) {
            Ok(file) => file,
            Err(_) => return 0,
        };
        let chunk = vec![0_u8; 4096];
        let mut written = 0;
        while file.write_all(&chunk).is_ok() {
            written += chunk.len() as u64;
        }
        // Whatever is left of the last page.
        while file.write_all(&chunk[..64]).is_ok() {
            written += 64;
        }
        written
    }

    /// Fills the file system, then gives back `free` bytes, so writes up to about that size
    /// still succeed and larger ones fail.
    pub fn fill_leaving(&self, free: u64) {
        let written = self.fill();
        if let Ok(file) = std::fs::OpenOptions::new().write(true).open(self.filler()) {
            let _ = file.set_len(written.saturating_sub(free));
        }
    }

    /// Removes the filler file: the space is back.
    pub fn free(&self) {
        let _ = std::fs::remove_file(self.filler());
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
    }
}
