//! Keeping `REIN_HOME` private to its user.
//!
//! Session files hold whole conversations, tool output and file contents, so everything the
//! daemon writes under `REIN_HOME` is for its user only: directories 0700, files 0600. At
//! start the daemon creates `REIN_HOME` 0700 when it is missing, then walks it and takes group
//! and other permissions away from whatever it finds there (files older rein versions or
//! other tools left looser), logging each fix. Files it creates afterwards are created
//! private.
//!
//! The directory that holds the socket is checked before anything is bound in it: a symlink,
//! a directory of another user, or one that group or others may write to is refused with a
//! clear error, since whoever can write there can replace the socket and impersonate the
//! daemon.

use crate::path_io::PathIoError;
use std::fs;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Mode of every directory the daemon keeps under `REIN_HOME`.
pub const PRIVATE_DIR_MODE: u32 = 0o700;
/// Mode of every file the daemon keeps under `REIN_HOME`.
pub const PRIVATE_FILE_MODE: u32 = 0o600;

/// Why the daemon's state directories cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum HomeError {
    /// The socket's directory is unsafe to serve from.
    #[error(
        "refusing to use {path} as the socket directory: {why}; remove it (the daemon creates \
         it again, 0700) or point REIN_HOME or --socket elsewhere"
    )]
    UnsafeRunDir {
        /// The directory.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// A file system step failed.
    #[error(transparent)]
    Io(#[from] PathIoError),
}

fn io_error<'a>(
    action: &'static str,
    path: &'a Path,
) -> impl FnOnce(std::io::Error) -> HomeError + 'a {
    PathIoError::on(action, path)
}

/// Creates `dir` (and missing parents) with mode 0700.
pub fn create_private_dir(dir: &Path) -> Result<(), HomeError> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(PRIVATE_DIR_MODE)
        .create(dir)
        .map_err(io_error("create directory", dir))
}

/// Checks the directory that will hold the socket. A missing one is fine (it is created 0700
/// when the socket is bound); an existing one must be a real directory (not a symlink) of this
/// user that neither group nor others can write to.
pub fn check_run_dir(dir: &Path) -> Result<(), HomeError> {
    let metadata = match fs::symlink_metadata(dir) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(source) => return Err(PathIoError::new("inspect", dir, source).into()),
    };
    let refuse = |why: String| Err(HomeError::UnsafeRunDir { path: dir.to_path_buf(), why });
    if metadata.file_type().is_symlink() {
        return refuse("it is a symbolic link".into());
    }
    if !metadata.is_dir() {
        return refuse("it is not a directory".into());
    }
    let ours = nix::unistd::geteuid().as_raw();
    if metadata.uid() != ours {
        return refuse(format!("it belongs to user {} , not to user {ours}", metadata.uid()));
    }
    let mode = metadata.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return refuse(format!("group or others may write to it (mode {mode:04o})"));
    }
    Ok(())
}

/// Creates `home` 0700 when missing, then takes group and other permissions away from every
/// directory and regular file below it (symlinks are not followed; sockets are left as they
/// are). Returns the paths it changed.
pub fn make_private(home: &Path) -> Result<Vec<PathBuf>, HomeError> {
    create_private_dir(home)?;
    // A home that is itself a symlink (say into another disk) is the user's choice: follow
    // that one link, and no other below it.
    let home = home.canonicalize().map_err(io_error("resolve", home))?;
    let mut changed = Vec::new();
    tighten(&home, &mut changed)?;
    Ok(changed)
}

/// Takes group and other permissions away from `home` itself, not from what it holds: done
/// before the daemon writes there, so that nobody else can look inside while
/// [`make_private`] walks the rest beside the first requests. True when it changed.
pub fn close_home(home: &Path) -> Result<bool, HomeError> {
    let home = home.canonicalize().map_err(io_error("resolve", home))?;
    let mut changed = Vec::new();
    restrict(&home, &mut changed)?;
    Ok(!changed.is_empty())
}

fn tighten(path: &Path, changed: &mut Vec<PathBuf>) -> Result<(), HomeError> {
    let Some(metadata) = restrict(path, changed)? else { return Ok(()) };
    if metadata.is_dir() {
        for entry in fs::read_dir(path).map_err(io_error("list", path))? {
            let entry = entry.map_err(io_error("list", path))?;
            tighten(&entry.path(), changed)?;
        }
    }
    Ok(())
}

/// Takes group and other permissions away from one directory or regular file (recording it
/// in `changed` when that changed anything). Returns its metadata; `None` for anything else
/// (a symlink, a socket), which is left alone.
fn restrict(path: &Path, changed: &mut Vec<PathBuf>) -> Result<Option<fs::Metadata>, HomeError> {
    let metadata = fs::symlink_metadata(path).map_err(io_error("inspect", path))?;
    if !metadata.is_dir() && !metadata.is_file() {
        return Ok(None);
    }
    let mode = metadata.mode() & 0o7777;
    // Only ever take the group's and others' permissions away: a file the user made 0400
    // stays 0400, and a script the user keeps here (a hook, a skill's helper) stays
    // executable by its owner.
    let tightened = mode & !0o077;
    if tightened != mode {
        fs::set_permissions(path, fs::Permissions::from_mode(tightened))
            .map_err(io_error("restrict permissions of", path))?;
        changed.push(path.to_path_buf());
    }
    Ok(Some(metadata))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        fs::symlink_metadata(path).unwrap().mode() & 0o7777
    }

    /// Closing the home changes the home only: what it holds is left to the walk.
    #[test]
    fn closing_the_home_restricts_it_and_nothing_inside() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        fs::create_dir(&home).unwrap();
        fs::write(home.join("config.toml"), "").unwrap();
        fs::set_permissions(&home, fs::Permissions::from_mode(0o755)).unwrap();
        fs::set_permissions(home.join("config.toml"), fs::Permissions::from_mode(0o644)).unwrap();
        assert!(close_home(&home).unwrap());
        assert_eq!(mode(&home), 0o700);
        assert_eq!(mode(&home.join("config.toml")), 0o644);
        assert!(!close_home(&home).unwrap(), "a second call changed something");
    }

    #[test]
    fn everything_under_home_becomes_private() {
        let temp = tempfile::tempdir().unwrap();
        let home = temp.path().join("home");
        let sessions = home.join("sessions").join("project");
        fs::create_dir_all(&sessions).unwrap();
        fs::set_permissions(home.join("sessions"), fs::Permissions::from_mode(0o755)).unwrap();
        fs::write(sessions.join("s.jsonl"), "{}\n").unwrap();
        fs::set_permissions(sessions.join("s.jsonl"), fs::Permissions::from_mode(0o644)).unwrap();
        fs::write(home.join("read-only"), "").unwrap();
        fs::set_permissions(home.join("read-only"), fs::Permissions::from_mode(0o400)).unwrap();
        let outside = temp.path().join("outside");
        fs::write(&outside, "").unwrap();
        fs::set_permissions(&outside, fs::Permissions::from_mode(0o644)).unwrap();
        std::os::unix::fs::symlink(&outside, home.join("link")).unwrap();

        // Through a symlink to the home, as a user may keep it elsewhere.
        let link = temp.path().join("home-link");
        std::os::unix::fs::symlink(&home, &link).unwrap();
        let changed = make_private(&link).unwrap();
        let canonical = sessions.canonicalize().unwrap().join("s.jsonl");
        assert!(changed.contains(&canonical), "{changed:?}");
        assert_eq!(mode(&home.join("sessions")), 0o700);
        assert_eq!(mode(&sessions), 0o700);
        assert_eq!(mode(&sessions.join("s.jsonl")), 0o600);
        assert_eq!(mode(&home.join("read-only")), 0o400);
        assert_eq!(mode(&outside), 0o644, "a symlink was followed out of the home");
        assert!(make_private(&home).unwrap().is_empty(), "a second pass changed something");
    }

    #[test]
    fn unsafe_run_directories_are_refused() {
        let temp = tempfile::tempdir().unwrap();
        assert!(check_run_dir(&temp.path().join("missing")).is_ok());
        let good = temp.path().join("good");
        create_private_dir(&good).unwrap();
        assert!(check_run_dir(&good).is_ok());

        let open = temp.path().join("open");
        fs::create_dir(&open).unwrap();
        fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
        let error = check_run_dir(&open).unwrap_err().to_string();
        assert!(error.contains("may write to it (mode 0777)"), "{error}");
        fs::set_permissions(&open, fs::Permissions::from_mode(0o750)).unwrap();
        assert!(check_run_dir(&open).is_ok(), "group read is not a risk");

        let link = temp.path().join("link");
        std::os::unix::fs::symlink(&good, &link).unwrap();
        let error = check_run_dir(&link).unwrap_err().to_string();
        assert!(error.contains("symbolic link"), "{error}");
    }
}
