//! Where provider API keys come from: the daemon's environment first, then the keys stored by
//! `rein login` in `REIN_HOME/auth.toml`.
//!
//! The registry reads keys by *variable name* at each request; [`KeyStore::environment`] answers
//! such a read from the process environment, and otherwise from the auth file entry of the
//! provider that uses the variable. The file is read at each lookup (it is a few lines), so a
//! key stored or removed while the daemon runs counts from the next request on. Stored keys are
//! never put into the process environment, so tool processes (which inherit it, minus the key
//! variables) never see them.

use rein_ai::Registry;
use rein_ai::registry::Environment;
use rein_protocol::auth::{AuthFile, auth_path};
use rein_protocol::method::KeySource;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};

/// Keys from the environment and the auth file.
pub struct KeyStore {
    path: PathBuf,
    /// The variables the daemon started with (see `secrets`: keys leave the process
    /// environment at start-up and live only here).
    process: Environment,
    /// Key variable → the providers that use it.
    owners: RwLock<BTreeMap<String, Vec<String>>>,
}

impl std::fmt::Debug for KeyStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyStore").field("path", &self.path).finish_non_exhaustive()
    }
}

impl KeyStore {
    /// A store reading the process environment, then `home`'s auth file.
    pub fn new(home: &Path) -> Arc<Self> {
        Self::with_environment(home, Arc::new(|name| std::env::var(name).ok()))
    }

    /// A store reading variables through `process`, then `home`'s auth file.
    pub fn with_environment(home: &Path, process: Environment) -> Arc<Self> {
        Arc::new(Self { path: auth_path(home), process, owners: RwLock::new(BTreeMap::new()) })
    }

    /// The auth file read.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The registry's view of variables: the environment, else the auth file.
    pub fn environment(self: &Arc<Self>) -> Environment {
        let store = Arc::clone(self);
        Arc::new(move |variable| store.read(variable))
    }

    /// Learns which provider uses which key variable (call after building the registry).
    pub fn learn(&self, registry: &Registry) {
        let mut owners: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for name in registry.provider_names() {
            if let Some((_, settings)) = registry.provider_settings(name)
                && let Some(variable) = &settings.api_key_env
            {
                owners.entry(variable.clone()).or_default().push(name.to_string());
            }
        }
        *self.owners.write().unwrap_or_else(PoisonError::into_inner) = owners;
    }

    /// Where `provider`'s key comes from (`variable`: its key variable, if it takes a key).
    pub fn source(&self, provider: &str, variable: Option<&str>) -> KeySource {
        let Some(variable) = variable else { return KeySource::NotNeeded };
        let variable = variable.to_string();
        if self.process_variable(&variable).is_some() {
            KeySource::Environment { variable }
        } else if self.load().is_some_and(|file| file.key(provider).is_some()) {
            KeySource::AuthFile { variable }
        } else {
            KeySource::Missing { variable }
        }
    }

    fn read(&self, variable: &str) -> Option<String> {
        self.process_variable(variable).or_else(|| {
            let owners = self.owners.read().unwrap_or_else(PoisonError::into_inner);
            let providers = owners.get(variable)?;
            let file = self.load()?;
            providers.iter().find_map(|provider| file.key(provider).map(str::to_string))
        })
    }

    fn process_variable(&self, variable: &str) -> Option<String> {
        (self.process)(variable).filter(|value| !value.trim().is_empty())
    }

    fn load(&self) -> Option<AuthFile> {
        match AuthFile::load(&self.path) {
            Ok(file) => Some(file),
            Err(error) => {
                tracing::warn!(%error, "stored API keys cannot be used");
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_ai::ProvidersConfig;

    #[test]
    fn stored_keys_answer_for_their_provider_variable_and_follow_the_file() {
        let home = tempfile::tempdir().unwrap();
        let store = KeyStore::new(home.path());
        let config = ProvidersConfig::from_toml(
            "[providers.mine]\napi = \"openai-chat\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"REIN_TEST_KEYSTORE_MINE\"\n",
        )
        .unwrap();
        let registry = Registry::with_environment(config, store.environment()).unwrap();
        store.learn(&registry);
        let variable = Some("REIN_TEST_KEYSTORE_MINE");
        assert!(registry.resolve(Some("mine/m")).is_err());
        assert!(matches!(store.source("mine", variable), KeySource::Missing { .. }));
        let mut file = AuthFile::default();
        file.set("mine", "stored-key");
        file.save(store.path()).unwrap();
        // The registry sees the key at once, without being rebuilt.
        assert!(registry.resolve(Some("mine/m")).is_ok());
        assert_eq!(
            registry.read_variable("REIN_TEST_KEYSTORE_MINE").as_deref(),
            Some("stored-key")
        );
        assert!(matches!(store.source("mine", variable), KeySource::AuthFile { .. }));
        assert_eq!(store.source("ollama", None), KeySource::NotNeeded);
        // Another provider's variable does not get this provider's key.
        assert_eq!(registry.read_variable("REIN_TEST_KEYSTORE_OTHER"), None);
        file.remove("mine");
        file.save(store.path()).unwrap();
        assert!(registry.resolve(Some("mine/m")).is_err());
    }
}
