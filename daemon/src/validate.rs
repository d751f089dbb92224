//! Checks on what clients send, in one place, so every method that takes a model id, a project
//! directory or a trust target applies the same rules and names the field at fault.
//!
//! - **Model ids** are `provider/model`. The provider is letters, digits, `.`, `_` and `-`; the
//!   model is one or more `/`-separated parts of letters, digits and `. _ - : @ +`. No part may
//!   be empty, `.` or `..`, so an id can never read as a path (`../../etc/passwd` is refused).
//! - **Project directories** (`cwd`) must be absolute and exist as directories; they are used
//!   in their canonical form (no `.`, `..`, repeated or trailing slashes, symlinks resolved),
//!   so one directory is always one project.
//! - **Trust targets** must be absolute; trusting `/` or the home directory (which would trust
//!   every project below it) is refused unless the client says `force`.
//!
//! Request ids (JSON-RPC 2.0: a string, an integer or null) are checked by the dispatcher.

use crate::rpc_error::RpcError;
use std::path::{Component, Path, PathBuf};

/// The longest model id accepted.
pub const MAX_MODEL_ID_LEN: usize = 256;

/// Checks a `provider/model` id; `field` names the parameter in the error.
pub fn model_id(field: &str, id: &str) -> Result<(), RpcError> {
    let refuse =
        |why: &str| Err(RpcError::invalid_param(field, format!("invalid model id {id:?}: {why}")));
    if id.len() > MAX_MODEL_ID_LEN {
        return refuse("too long");
    }
    let Some((provider, model)) = id.split_once('/') else {
        return refuse("expected PROVIDER/MODEL");
    };
    let plain = |part: &str, extra: &str| {
        !part.is_empty()
            && part != "."
            && part != ".."
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c) || extra.contains(c))
    };
    if !plain(provider, "") {
        return refuse("the provider must be letters, digits, '.', '_' or '-'");
    }
    if !model.split('/').all(|part| plain(part, ":@+")) {
        return refuse(
            "each part of the model must be letters, digits or '. _ - : @ +', and not '.' or '..'",
        );
    }
    Ok(())
}

/// Checks a project directory and returns its canonical form.
pub fn project_dir(field: &str, cwd: &str) -> Result<String, RpcError> {
    let path = Path::new(cwd);
    if !path.is_absolute() {
        return Err(RpcError::invalid_param(field, format!("{cwd} is not an absolute path")));
    }
    let canonical = path
        .canonicalize()
        .map_err(|error| RpcError::invalid_param(field, format!("cannot use {cwd}: {error}")))?;
    if !canonical.is_dir() {
        return Err(RpcError::invalid_param(field, format!("{cwd} is not a directory")));
    }
    canonical
        .to_str()
        .map(str::to_string)
        .ok_or_else(|| RpcError::invalid_param(field, format!("{cwd} is not valid UTF-8")))
}

/// Checks a directory to trust or revoke and returns the form to record: canonical when it
/// exists, else with `.` and `..` resolved by name. Trusting `/` or `home` is refused unless
/// `force`.
pub fn trust_target(
    field: &str,
    raw: &str,
    trusting: bool,
    force: bool,
    home: Option<&Path>,
) -> Result<PathBuf, RpcError> {
    let path = Path::new(raw);
    if !path.is_absolute() {
        return Err(RpcError::invalid_param(field, "path must be absolute"));
    }
    let target = path.canonicalize().unwrap_or_else(|_| lexically_normal(path));
    if trusting && !force {
        let home = home.map(|home| home.canonicalize().unwrap_or_else(|_| home.to_path_buf()));
        let too_wide = if target.parent().is_none() {
            Some("/")
        } else if home.as_deref() == Some(target.as_path()) {
            Some("the home directory")
        } else {
            None
        };
        if let Some(what) = too_wide {
            return Err(RpcError::invalid_param(
                field,
                format!(
                    "trusting {what} would trust every project below it; pass force to do it \
                     anyway (rein trust --force)"
                ),
            ));
        }
    }
    Ok(target)
}

/// `path` with `.` dropped and `..` taking off the previous part, without touching the disk.
fn lexically_normal(path: &Path) -> PathBuf {
    let mut normal = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                normal.pop();
            }
            other => normal.push(other),
        }
    }
    normal
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_ids_are_provider_slash_model_and_never_paths() {
        for good in [
            "anthropic/claude-sonnet-4-5",
            "openrouter/anthropic/claude-3.5-sonnet",
            "ollama/qwen3:8b",
            "local/test-model",
            "vertex/claude@20250101",
        ] {
            assert!(model_id("model", good).is_ok(), "{good}");
        }
        for bad in [
            "../../etc/passwd",
            "local/../../etc/passwd",
            "local/./x",
            "/etc/passwd",
            "local/",
            "local//x",
            "nomodel",
            "lo cal/x",
            "local/x y",
            "local/x\n",
            "..//x",
        ] {
            let error = model_id("model", bad).unwrap_err();
            assert_eq!(error.field.as_deref(), Some("model"), "{bad}");
        }
        assert!(model_id("model", &format!("a/{}", "b".repeat(300))).is_err());
    }

    #[test]
    fn project_dirs_are_absolute_existing_and_canonical() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("a")).unwrap();
        let canonical = dir.path().canonicalize().unwrap().join("a").display().to_string();
        let messy = format!("{}/./a/../a/", dir.path().display());
        assert_eq!(project_dir("cwd", &messy).unwrap(), canonical);
        assert!(project_dir("cwd", "relative/dir").is_err());
        assert!(project_dir("cwd", &format!("{}/missing", dir.path().display())).is_err());
        std::fs::write(dir.path().join("file"), "").unwrap();
        assert!(project_dir("cwd", &format!("{}/file", dir.path().display())).is_err());
    }

    #[test]
    fn trusting_the_root_or_home_needs_force() {
        let home = tempfile::tempdir().unwrap();
        let project = home.path().join("project");
        std::fs::create_dir(&project).unwrap();
        let home_text = home.path().display().to_string();
        for wide in ["/", "/tmp/..", home_text.as_str()] {
            assert!(trust_target("path", wide, true, false, Some(home.path())).is_err(), "{wide}");
            assert!(trust_target("path", wide, true, true, Some(home.path())).is_ok(), "{wide}");
            assert!(trust_target("path", wide, false, false, Some(home.path())).is_ok(), "{wide}");
        }
        let inside = format!("{home_text}/project/../project");
        let target = trust_target("path", &inside, true, false, Some(home.path())).unwrap();
        assert_eq!(target, project.canonicalize().unwrap());
        assert!(trust_target("path", "relative", true, true, None).is_err());
        assert_eq!(lexically_normal(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
    }
}
