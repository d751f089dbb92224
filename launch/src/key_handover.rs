//! Provider keys handed to a daemon on a pipe instead of in its environment.
//!
//! Whatever a process was started with stays readable in its `/proc/PID/environ` for its whole
//! life, and the model's tools run as the same user as the daemon. So no daemon should be
//! started with a provider key in its environment: the key variables are left out, and their
//! names and values travel in a pipe whose descriptor number is in [`SECRETS_FD_VAR`]. The
//! daemon reads the pipe once at start, keeps the keys in memory and lets go of the
//! descriptor.
//!
//! Two starters use it: the launcher ([`crate::start_detached`]), which gives the pipe to the
//! daemon as its stdin, and a daemon started some other way (by hand, by a service manager)
//! that still finds keys in its environment and re-executes itself without them. The launcher
//! moves the variables named `*_API_KEY` and those the configuration names
//! ([`configured_key_variables`]); anything it missed (a configuration it could not read) is
//! moved by the daemon's re-execution.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::Path;

/// The environment variable naming the descriptor that carries the keys to a starting daemon.
pub const SECRETS_FD_VAR: &str = "REIN_SECRETS_FD";

/// The most bytes of keys carried: a pipe's buffer (64 KiB on Linux) must hold them all, since
/// they are written before the daemon runs.
pub const MAX_PAYLOAD: usize = 60 * 1024;

/// The carried keys were not in the form [`encode`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the keys handed over in {SECRETS_FD_VAR} are malformed")]
pub struct MalformedKeys;

/// Whether a variable holds a provider key: one of `known` (the providers' `api_key_env`), or
/// any variable named `*_API_KEY`.
pub fn is_key_variable(name: &str, known: &[String]) -> bool {
    known.iter().any(|k| k == name) || name.ends_with("_API_KEY")
}

/// The key variables the daemon's configuration names: each provider table's `api_key_env` in
/// the first configuration file of `home` that can be read (the one the daemon reads, see
/// `rein_protocol::paths::config_candidates`). Empty when there is none or it does not parse:
/// the daemon reports a broken file itself, and moves the keys it still finds.
pub fn configured_key_variables(home: &Path) -> Vec<String> {
    let text = rein_protocol::paths::config_candidates(home)
        .iter()
        .find_map(|path| std::fs::read_to_string(path).ok());
    let Some(table) = text.and_then(|text| text.parse::<toml::Table>().ok()) else {
        return Vec::new();
    };
    let Some(providers) = table.get("providers").and_then(toml::Value::as_table) else {
        return Vec::new();
    };
    providers
        .values()
        .filter_map(|provider| provider.get("api_key_env")?.as_str())
        .filter(|name| !name.is_empty())
        .map(str::to_string)
        .collect()
}

/// The provider-key variables of this process's environment (see [`is_key_variable`]).
#[derive(Debug, Default)]
pub struct EnvironmentKeys {
    /// The keys to carry, name and value.
    pub carried: Vec<(String, String)>,
    /// Every key variable's name, to leave out of the started process's environment: the
    /// carried ones and those whose value is not text, which no provider could be sent (an
    /// HTTP header is text) and which are dropped.
    pub names: Vec<OsString>,
}

impl EnvironmentKeys {
    /// The key variables of the current environment. Never panics on a variable that is not
    /// UTF-8 (`std::env::vars` would).
    pub fn of_this_process(known: &[String]) -> Self {
        let mut keys = Self::default();
        for (name, value) in std::env::vars_os() {
            let Some(text_name) = name.to_str() else { continue };
            if !is_key_variable(text_name, known) {
                continue;
            }
            if let Ok(value) = value.into_string() {
                keys.carried.push((text_name.to_string(), value));
            }
            keys.names.push(name);
        }
        keys
    }

    /// Whether the environment holds no key variable.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// The pipe's content: `name NUL value NUL` for each key.
pub fn encode<'a>(keys: impl IntoIterator<Item = (&'a str, &'a str)>) -> Vec<u8> {
    let mut payload = Vec::new();
    for (name, value) in keys {
        payload.extend_from_slice(name.as_bytes());
        payload.push(0);
        payload.extend_from_slice(value.as_bytes());
        payload.push(0);
    }
    payload
}

/// The keys in a pipe's content written by [`encode`].
pub fn decode(payload: &[u8]) -> Result<HashMap<String, String>, MalformedKeys> {
    let text = std::str::from_utf8(payload).map_err(|_| MalformedKeys)?;
    if text.is_empty() {
        return Ok(HashMap::new());
    }
    let body = text.strip_suffix('\0').ok_or(MalformedKeys)?;
    let parts: Vec<&str> = body.split('\0').collect();
    if !parts.len().is_multiple_of(2) || parts.chunks(2).any(|pair| pair[0].is_empty()) {
        return Err(MalformedKeys);
    }
    Ok(parts.chunks(2).map(|pair| (pair[0].to_string(), pair[1].to_string())).collect())
}

/// A pipe already holding the keys, its read end to be given to the started process. `None`
/// when there is nothing to carry or it would not fit ([`MAX_PAYLOAD`]; the daemon then
/// finds the keys in its environment and reports the size itself).
pub fn filled_pipe(keys: &EnvironmentKeys) -> std::io::Result<Option<std::io::PipeReader>> {
    use std::io::Write;
    let payload = encode(keys.carried.iter().map(|(name, value)| (name.as_str(), value.as_str())));
    if keys.is_empty() || payload.len() > MAX_PAYLOAD {
        return Ok(None);
    }
    let (reader, writer) = std::io::pipe()?;
    // Written before the daemon runs: the pipe's buffer holds it until the daemon reads it,
    // and the end of the pipe follows once this write end is dropped here.
    (&writer).write_all(&payload)?;
    drop(writer);
    Ok(Some(reader))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn keys_survive_the_trip_through_the_payload() {
        let keys =
            [("OPENAI_API_KEY", "sk-one"), ("MY_KEY", "with=equals and spaces"), ("EMPTY_KEY", "")];
        let decoded = decode(&encode(keys)).unwrap();
        assert_eq!(decoded.len(), 3);
        assert_eq!(decoded["MY_KEY"], "with=equals and spaces");
        assert_eq!(decoded["EMPTY_KEY"], "");
        assert!(decode(b"").unwrap().is_empty());
        assert_eq!(decode(b"NAME_ONLY\0"), Err(MalformedKeys));
        assert_eq!(decode(b"\0value\0"), Err(MalformedKeys));
        assert_eq!(decode(b"NO_END\0value"), Err(MalformedKeys));
        assert_eq!(decode(&[0xff, 0]), Err(MalformedKeys));
    }

    #[test]
    fn key_variables_are_the_known_ones_and_any_api_key() {
        let known = vec!["REIN_CANARY_KEY".to_string()];
        assert!(is_key_variable("REIN_CANARY_KEY", &known));
        assert!(is_key_variable("GROQ_API_KEY", &known));
        assert!(!is_key_variable("HOME", &known));
        assert!(!is_key_variable("API_KEY_HELPER", &known));
    }

    #[test]
    fn the_configured_key_variables_are_each_providers_api_key_env() {
        let home = tempfile::tempdir().unwrap();
        let config = "model = \"a/m\"\n[providers.a]\napi = \"openai-chat\"\n\
                      api_key_env = \"A_TOKEN\"\n[providers.b]\napi_key_env = \"\"\n\
                      [providers.c]\nbase_url = \"http://127.0.0.1:9\"\n\
                      [providers.d]\napi_key_env = \"D_SECRET\"\n";
        std::fs::write(home.path().join("config.toml"), config).unwrap();
        assert_eq!(configured_key_variables(home.path()), ["A_TOKEN", "D_SECRET"]);
        std::fs::write(home.path().join("config.toml"), "[providers.a\n").unwrap();
        assert!(configured_key_variables(home.path()).is_empty());
        std::fs::write(home.path().join("config.toml"), "providers = 3\n").unwrap();
        assert!(configured_key_variables(home.path()).is_empty());
    }

    #[test]
    fn a_filled_pipe_holds_the_keys_and_then_ends() {
        use std::io::Read;
        let keys = EnvironmentKeys {
            carried: vec![("A_API_KEY".into(), "sk-a".into())],
            names: vec!["A_API_KEY".into(), "B_API_KEY".into()],
        };
        let mut reader = filled_pipe(&keys).unwrap().unwrap();
        let mut payload = Vec::new();
        reader.read_to_end(&mut payload).unwrap();
        assert_eq!(decode(&payload).unwrap(), HashMap::from([("A_API_KEY".into(), "sk-a".into())]));

        assert!(filled_pipe(&EnvironmentKeys::default()).unwrap().is_none());
        let huge = EnvironmentKeys {
            carried: vec![("BIG_API_KEY".into(), "x".repeat(MAX_PAYLOAD))],
            names: vec!["BIG_API_KEY".into()],
        };
        assert!(filled_pipe(&huge).unwrap().is_none());
    }
}
