//! `REIN_HOME/auth.toml`: API keys stored once by `rein login`, one table per provider.
//!
//! ```toml
//! [anthropic]
//! api_key = "sk-ant-..."
//! ```
//!
//! The file is written with mode 0600 and replaced atomically (a new file renamed over the
//! old one), so a reader never sees half a file. The daemon reads it at each lookup, so a key
//! stored while it runs is used at once; a key in the provider's environment variable wins.
//! It lives here because both sides use it: `rein login` writes it, `reind` reads it.
//!
//! Nothing here prints a key: the [`Debug`](std::fmt::Debug) output names only providers, and
//! a file that does not parse is reported by line, never by its text.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The file's name under `REIN_HOME`.
pub const AUTH_FILE: &str = "auth.toml";

/// The auth file of the state directory `home`.
pub fn auth_path(home: &Path) -> PathBuf {
    home.join(AUTH_FILE)
}

/// The keys stored in the auth file, by provider name.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct AuthFile {
    providers: BTreeMap<String, StoredKey>,
}

/// One provider's table.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
struct StoredKey {
    api_key: String,
}

impl std::fmt::Debug for AuthFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthFile").field("providers", &self.providers()).finish_non_exhaustive()
    }
}

/// The auth file could not be read or written. Never carries the file's text.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// Reading failed.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not `[provider]` tables with an `api_key` string.
    #[error(
        "{path} is not valid (line {line}): it must hold [PROVIDER] tables with api_key = \"...\"; run `rein logout` to start over"
    )]
    Parse {
        /// The file.
        path: PathBuf,
        /// The line of the mistake (1-based; 0 when unknown).
        line: usize,
    },
    /// Writing failed.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

impl AuthFile {
    /// Reads the file at `path`; no file means no keys.
    pub fn load(path: &Path) -> Result<Self, AuthError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Self::default());
            }
            Err(source) => return Err(AuthError::Read { path: path.to_path_buf(), source }),
        };
        Self::parse(&text).map_err(|line| AuthError::Parse { path: path.to_path_buf(), line })
    }

    /// Parses the file's text; the error is the line of the mistake (0 when unknown).
    fn parse(text: &str) -> Result<Self, usize> {
        toml::from_str(text).map_err(|error: toml::de::Error| match error.span() {
            Some(span) => {
                text.get(..span.start).map(|before| before.matches('\n').count() + 1).unwrap_or(0)
            }
            None => 0,
        })
    }

    /// The key stored for `provider`.
    pub fn key(&self, provider: &str) -> Option<&str> {
        self.providers
            .get(provider)
            .map(|stored| stored.api_key.as_str())
            .filter(|key| !key.trim().is_empty())
    }

    /// The providers that have a key stored.
    pub fn providers(&self) -> Vec<&str> {
        self.providers.keys().map(String::as_str).collect()
    }

    /// Stores `key` for `provider`, replacing any earlier one.
    pub fn set(&mut self, provider: &str, key: &str) {
        self.providers.insert(provider.to_string(), StoredKey { api_key: key.to_string() });
    }

    /// Forgets `provider`'s key; false when none was stored.
    pub fn remove(&mut self, provider: &str) -> bool {
        self.providers.remove(provider).is_some()
    }

    /// Writes the file at `path` with mode 0600, creating its directory (0700) when needed.
    /// The old file is replaced in one rename.
    pub fn save(&self, path: &Path) -> Result<(), AuthError> {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        let failed = |source| AuthError::Write { path: path.to_path_buf(), source };
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(failed)?;
        let text = toml::to_string(self).map_err(|error| failed(std::io::Error::other(error)))?;
        let temp = dir.join(format!(".{AUTH_FILE}.{}.tmp", std::process::id()));
        let _ = std::fs::remove_file(&temp);
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)
            .and_then(|mut file| {
                file.write_all(text.as_bytes())?;
                file.sync_all()
            })
            .and_then(|()| std::fs::rename(&temp, path));
        if let Err(error) = written {
            let _ = std::fs::remove_file(&temp);
            return Err(failed(error));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn keys_round_trip_through_a_private_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = auth_path(&dir.path().join("home"));
        assert_eq!(AuthFile::load(&path).unwrap(), AuthFile::default());
        let mut auth = AuthFile::default();
        auth.set("anthropic", "sk-ant-secret");
        auth.set("local", "k2");
        auth.save(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dir_mode =
            std::fs::metadata(path.parent().unwrap()).unwrap().permissions().mode() & 0o777;
        assert_eq!(dir_mode, 0o700);
        let mut loaded = AuthFile::load(&path).unwrap();
        assert_eq!(loaded.key("anthropic"), Some("sk-ant-secret"));
        assert_eq!(loaded.providers(), vec!["anthropic", "local"]);
        assert!(!format!("{loaded:?}").contains("secret"));
        assert!(loaded.remove("anthropic"));
        assert!(!loaded.remove("anthropic"));
        loaded.save(&path).unwrap();
        assert_eq!(AuthFile::load(&path).unwrap().key("anthropic"), None);
        let leftovers = std::fs::read_dir(path.parent().unwrap()).unwrap().count();
        assert_eq!(leftovers, 1, "no temporary file is left behind");
    }

    #[test]
    fn a_broken_file_is_reported_by_line_without_its_text() {
        let dir = tempfile::tempdir().unwrap();
        let path = auth_path(dir.path());
        std::fs::write(
            &path,
            "[anthropic]\napi_key = \"sk-secret\"\n[openai]\napi_key = sk-oops\n",
        )
        .unwrap();
        let error = AuthFile::load(&path).unwrap_err().to_string();
        assert!(error.contains("line 4"), "{error}");
        assert!(!error.contains("sk-"), "{error}");
    }
}
