//! Resolving `provider/model` into what the model is and the provider that reaches it.

use crate::catalog::{BUILTIN_PROVIDERS, MODELS, builtin_provider, model_info};
use crate::config::{ConfigError, ModelOverride, ProvidersConfig};
use crate::http::{HttpProvider, ProviderSettings};
use crate::provider::Provider;
use rein_protocol::model::{Api, ModelInfo, ModelRef};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Models tried, in order, when the configuration names no default: the first whose
/// provider's API key variable is set is used, so setting one key is enough to start.
pub const FALLBACK_MODELS: &[&str] =
    &["anthropic/claude-sonnet-4-5", "openai/gpt-5", "openrouter/anthropic/claude-sonnet-4.5"];

/// How the registry reads environment variables (replaceable in tests).
pub type Environment = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// A model ready to use: what it is and who serves it.
#[derive(Clone)]
pub struct ResolvedModel {
    /// Limits, prices and wire API of the model.
    pub info: ModelInfo,
    /// The provider to send requests to.
    pub provider: Arc<dyn Provider>,
}

impl std::fmt::Debug for ResolvedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResolvedModel").field("info", &self.info).finish_non_exhaustive()
    }
}

/// A model reference could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// The text is not `provider/model`.
    #[error(
        "`{0}` is not a model reference: write it as provider/model, e.g. anthropic/claude-sonnet-4-5"
    )]
    BadReference(String),
    /// No model was named, the configuration has no default, and no provider key is set.
    #[error(
        "no model chosen and no provider configured: run `rein login anthropic` (or openai, openrouter) or set ANTHROPIC_API_KEY, OPENAI_API_KEY or OPENROUTER_API_KEY, or start a local model server (Ollama, llama.cpp, LM Studio, vLLM) and restart the daemon, or pass a model as provider/model, or set `model = \"provider/model\"` with a [providers.NAME] table in config.toml (see docs/config.md; `rein doctor` checks the setup)"
    )]
    NoDefault,
    /// The provider is neither built in nor configured.
    #[error(
        "unknown provider `{provider}` (known: {known}); add a [providers.{provider}] table with `api` and `base_url` to the config"
    )]
    UnknownProvider {
        /// The provider asked for.
        provider: String,
        /// The providers that exist, comma-separated.
        known: String,
    },
    /// The provider's key variable is not set.
    #[error("provider `{provider}` needs an API key: set the environment variable `{variable}`")]
    MissingKey {
        /// The provider.
        provider: String,
        /// The variable to set.
        variable: String,
    },
}

#[derive(Debug, Clone)]
struct ProviderEntry {
    api: Api,
    settings: ProviderSettings,
    models: BTreeMap<String, ModelOverride>,
}

/// Every provider rein can reach: the built-in ones merged with the configured ones.
pub struct Registry {
    default_model: Option<String>,
    entries: BTreeMap<String, ProviderEntry>,
    clients: Mutex<BTreeMap<String, HttpProvider>>,
    environment: Environment,
    /// The detected local server's model, used when nothing else is set up.
    local_default: Option<String>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("default_model", &self.default_model)
            .field("providers", &self.entries.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Registry {
    /// A registry reading API keys from the process environment.
    pub fn new(config: ProvidersConfig) -> Result<Self, ConfigError> {
        Self::with_environment(config, Arc::new(|name| std::env::var(name).ok()))
    }

    /// A registry reading API keys through `environment`.
    pub fn with_environment(
        config: ProvidersConfig,
        environment: Environment,
    ) -> Result<Self, ConfigError> {
        if let Some(model) = &config.model
            && ModelRef::parse(model).is_none()
        {
            return Err(ConfigError::BadDefaultModel(model.clone()));
        }
        let mut entries = BTreeMap::new();
        for builtin in BUILTIN_PROVIDERS {
            let settings = ProviderSettings {
                name: builtin.name.to_string(),
                base_url: builtin.base_url.to_string(),
                api_key_env: builtin.api_key_env.map(str::to_string),
                headers: Vec::new(),
                retry: config.retry.clone(),
                idle_timeout: Duration::from_secs(300),
                compat: BTreeMap::new(),
            };
            let entry = ProviderEntry { api: builtin.api, settings, models: BTreeMap::new() };
            entries.insert(builtin.name.to_string(), entry);
        }
        for (name, table) in &config.providers {
            let builtin = builtin_provider(name);
            let incomplete =
                |setting, hint| ConfigError::Incomplete { provider: name.clone(), setting, hint };
            let api = table
                .api
                .or(builtin.map(|b| b.api))
                .ok_or_else(|| incomplete("api", "openai-chat, openai-responses or anthropic"))?;
            let base_url = table
                .base_url
                .clone()
                .or(builtin.map(|b| b.base_url.to_string()))
                .ok_or_else(|| incomplete("base_url", "e.g. http://127.0.0.1:8080/v1"))?;
            let api_key_env = match &table.api_key_env {
                Some(variable) if variable.is_empty() => None,
                Some(variable) => Some(variable.clone()),
                None => builtin.and_then(|b| b.api_key_env).map(str::to_string),
            };
            let settings = ProviderSettings {
                name: name.clone(),
                base_url,
                api_key_env,
                headers: table.headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                retry: config.retry.clone(),
                idle_timeout: Duration::from_secs(table.idle_timeout_secs.unwrap_or(300)),
                compat: table
                    .models
                    .iter()
                    .filter_map(|(id, model)| Some((id.clone(), model.compat?)))
                    .collect(),
            };
            entries.insert(
                name.clone(),
                ProviderEntry { api, settings, models: table.models.clone() },
            );
        }
        Ok(Self {
            default_model: config.model,
            entries,
            clients: Mutex::new(BTreeMap::new()),
            environment,
            local_default: None,
        })
    }

    /// Uses `model` (a detected local server's, see [`crate::local`]) when no default is
    /// configured and no fallback provider has its key.
    pub fn with_local_default(mut self, model: String) -> Self {
        self.local_default = Some(model);
        self
    }

    /// A provider's wire API and settings (its key variable, base URL, headers).
    pub fn provider_settings(&self, provider: &str) -> Option<(Api, &ProviderSettings)> {
        self.entries.get(provider).map(|entry| (entry.api, &entry.settings))
    }

    /// Reads a variable through the registry's environment (where keys come from).
    pub fn read_variable(&self, name: &str) -> Option<String> {
        (self.environment)(name).filter(|value| !value.trim().is_empty())
    }

    /// The configured default model, as `provider/model`.
    pub fn default_model(&self) -> Option<&str> {
        self.default_model.as_deref()
    }

    /// The model used when none is named: the configured default, else the first of
    /// [`FALLBACK_MODELS`] whose provider's API key variable is set, else the detected local
    /// server's model.
    pub fn effective_default_model(&self) -> Option<String> {
        if let Some(model) = &self.default_model {
            return Some(model.clone());
        }
        FALLBACK_MODELS
            .iter()
            .find_map(|reference| {
                let parsed = ModelRef::parse(reference)?;
                let entry = self.entries.get(&parsed.provider)?;
                let variable = entry.settings.api_key_env.as_ref()?;
                let present = (self.environment)(variable).is_some_and(|v| !v.trim().is_empty());
                present.then(|| reference.to_string())
            })
            .or_else(|| self.local_default.clone())
    }

    /// Makes the HTTP client of the default model's provider now (it is kept, like the
    /// provider [`Registry::resolve`] answers), so the first prompt does not wait for it: the
    /// client of an `https` provider reads and parses the system's bundle of root certificates
    /// (about 1 ms here, see `tls`). A daemon calls it on a spare thread at start. Nothing is
    /// made without a usable default (no model, or its key unset).
    pub fn prepare_default(&self) {
        match self.default_client().map(|provider| provider.prepare()) {
            Ok(Ok(())) => tracing::debug!("default provider's client made"),
            Ok(Err(error)) => tracing::warn!(%error, "no client for the default provider"),
            Err(error) => tracing::debug!(%error, "no default provider's client made ahead"),
        }
    }

    /// Opens a connection to the default model's provider and keeps it for the first request
    /// (see [`HttpProvider::open_connection`]); a daemon spawns this at start, once its
    /// runtime runs. Nothing is opened without a usable default (no model, or its key unset).
    pub async fn open_default_connection(&self) {
        match self.default_client() {
            Ok(provider) => provider.open_connection().await,
            Err(error) => tracing::debug!(%error, "no connection opened ahead"),
        }
    }

    /// The default model's provider, as [`Registry::resolve`] would answer it (the same
    /// client and connection pool).
    fn default_client(&self) -> Result<HttpProvider, ResolveError> {
        let resolved = self.resolve(None)?;
        let name = &resolved.info.provider;
        Ok(self.client(name, self.entry(name)?))
    }

    /// Every environment variable that holds a provider's API key, built in or configured.
    pub fn key_variables(&self) -> Vec<String> {
        let mut variables: Vec<String> =
            self.entries.values().filter_map(|entry| entry.settings.api_key_env.clone()).collect();
        variables.sort();
        variables.dedup();
        variables
    }

    /// Names of every provider, built in or configured.
    pub fn provider_names(&self) -> Vec<&str> {
        self.entries.keys().map(String::as_str).collect()
    }

    /// What rein knows of `provider/model`, without checking keys.
    pub fn model_info(&self, reference: &str) -> Result<ModelInfo, ResolveError> {
        let reference = ModelRef::parse(reference)
            .ok_or_else(|| ResolveError::BadReference(reference.into()))?;
        let entry = self.entry(&reference.provider)?;
        Ok(describe(&reference.provider, &reference.model, entry))
    }

    /// Resolves `provider/model` (or the default model when `None`): its facts and a provider
    /// ready to stream. Fails, naming what to set, when the provider is unknown or its API key
    /// variable is unset.
    pub fn resolve(&self, reference: Option<&str>) -> Result<ResolvedModel, ResolveError> {
        let fallback;
        let text = match reference {
            Some(text) => text,
            None => {
                fallback = self.effective_default_model().ok_or(ResolveError::NoDefault)?;
                fallback.as_str()
            }
        };
        let parsed =
            ModelRef::parse(text).ok_or_else(|| ResolveError::BadReference(text.to_string()))?;
        let entry = self.entry(&parsed.provider)?;
        if let Some(variable) = &entry.settings.api_key_env {
            let present = (self.environment)(variable).is_some_and(|v| !v.trim().is_empty());
            if !present {
                return Err(ResolveError::MissingKey {
                    provider: parsed.provider.clone(),
                    variable: variable.clone(),
                });
            }
        }
        let info = describe(&parsed.provider, &parsed.model, entry);
        let provider = self.client(&parsed.provider, entry);
        Ok(ResolvedModel { info, provider: Arc::new(provider) })
    }

    /// Every model the catalog or the configuration lists, for the providers known here.
    pub fn models(&self) -> Vec<ModelInfo> {
        let mut models = Vec::new();
        for (name, entry) in &self.entries {
            for row in MODELS.iter().filter(|row| row.provider == name) {
                if !entry.models.contains_key(row.id) {
                    models.push(describe(name, row.id, entry));
                }
            }
            for id in entry.models.keys() {
                models.push(describe(name, id, entry));
            }
        }
        models
    }

    fn entry(&self, provider: &str) -> Result<&ProviderEntry, ResolveError> {
        self.entries.get(provider).ok_or_else(|| ResolveError::UnknownProvider {
            provider: provider.to_string(),
            known: self.provider_names().join(", "),
        })
    }

    fn client(&self, name: &str, entry: &ProviderEntry) -> HttpProvider {
        let mut clients = self.clients.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        clients
            .entry(name.to_string())
            .or_insert_with(|| {
                HttpProvider::with_environment(
                    entry.settings.clone(),
                    Arc::clone(&self.environment),
                )
            })
            .clone()
    }
}

/// The catalog's facts (or the defaults) for a model, with the configuration's overrides.
fn describe(provider: &str, id: &str, entry: &ProviderEntry) -> ModelInfo {
    let mut info = model_info(provider, id, entry.api);
    if let Some(o) = entry.models.get(id) {
        info.known = true;
        if let Some(name) = &o.name {
            info.name = name.clone();
        }
        if let Some(v) = o.context_window {
            info.context_window = v;
        }
        if let Some(v) = o.max_output_tokens {
            info.max_output_tokens = v;
        }
        if let Some(v) = o.images {
            info.images = v;
        }
        if let Some(v) = o.reasoning {
            info.reasoning = v;
        }
        if let Some(cost) = &o.cost {
            info.cost = cost.clone();
        }
    }
    info
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> Environment {
        Arc::new(move |name| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string()))
    }

    #[test]
    fn builtin_providers_need_no_configuration_but_their_keys() {
        let registry = Registry::with_environment(ProvidersConfig::default(), env(&[])).unwrap();
        let err = registry.resolve(Some("anthropic/claude-sonnet-4-5")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "provider `anthropic` needs an API key: set the environment variable `ANTHROPIC_API_KEY`"
        );
        let ollama = registry.resolve(Some("ollama/qwen3:8b")).unwrap();
        assert_eq!(ollama.info.api, Api::OpenAiChat);
        assert!(!ollama.info.known);
        let registry = Registry::with_environment(
            ProvidersConfig::default(),
            env(&[("OPENAI_API_KEY", "sk-secret")]),
        )
        .unwrap();
        let openai = registry.resolve(Some("openai/gpt-5")).unwrap();
        assert_eq!(openai.info.api, Api::OpenAiResponses);
        assert!(openai.info.known && openai.info.reasoning);
        assert!(!format!("{openai:?} {registry:?}").contains("sk-secret"));
    }

    #[test]
    fn unknown_providers_and_bad_references_say_what_to_do() {
        let registry = Registry::with_environment(ProvidersConfig::default(), env(&[])).unwrap();
        let err = registry.resolve(Some("mine/m")).unwrap_err().to_string();
        assert!(err.contains("[providers.mine]") && err.contains("base_url"), "{err}");
        assert!(matches!(registry.resolve(Some("nomodel")), Err(ResolveError::BadReference(_))));
        assert!(matches!(registry.resolve(None), Err(ResolveError::NoDefault)));
    }

    #[test]
    fn one_provider_key_is_enough_to_pick_a_default_model() {
        let registry =
            Registry::with_environment(ProvidersConfig::default(), env(&[("OPENAI_API_KEY", "k")]))
                .unwrap();
        assert_eq!(registry.effective_default_model().as_deref(), Some("openai/gpt-5"));
        assert_eq!(registry.resolve(None).unwrap().info.id, "gpt-5");
        let both = Registry::with_environment(
            ProvidersConfig::default(),
            env(&[("OPENAI_API_KEY", "k"), ("ANTHROPIC_API_KEY", "k")]),
        )
        .unwrap();
        assert_eq!(both.effective_default_model().as_deref(), Some("anthropic/claude-sonnet-4-5"));
        let configured =
            ProvidersConfig { model: Some("ollama/qwen3".into()), ..Default::default() };
        let registry =
            Registry::with_environment(configured, env(&[("ANTHROPIC_API_KEY", "k")])).unwrap();
        assert_eq!(registry.effective_default_model().as_deref(), Some("ollama/qwen3"));
    }

    #[test]
    fn the_default_providers_client_is_made_ahead_and_kept() {
        let made = |registry: &Registry| -> Vec<String> {
            registry.clients.lock().unwrap().keys().cloned().collect()
        };
        // No default: nothing to make.
        let registry = Registry::with_environment(ProvidersConfig::default(), env(&[])).unwrap();
        registry.prepare_default();
        assert!(made(&registry).is_empty());
        // The default's key is unset: nothing either, and no error.
        let config = ProvidersConfig { model: Some("openai/gpt-5".into()), ..Default::default() };
        let registry = Registry::with_environment(config, env(&[])).unwrap();
        registry.prepare_default();
        assert!(made(&registry).is_empty());
        // An https provider with its key: its client is made and the first resolve uses it.
        let registry =
            Registry::with_environment(ProvidersConfig::default(), env(&[("OPENAI_API_KEY", "k")]))
                .unwrap();
        registry.prepare_default();
        assert_eq!(made(&registry), ["openai"]);
        let kept = registry.clients.lock().unwrap()["openai"].clone();
        assert!(kept.client_is_made(), "the HTTP client is left to the first request");
        let resolved = registry.client("openai", registry.entry("openai").unwrap());
        assert!(kept.is_clone_of(&resolved), "the first resolve made another client");
        // Resolving alone (as a new session does) leaves the HTTP client to the first request.
        let registry =
            Registry::with_environment(ProvidersConfig::default(), env(&[("OPENAI_API_KEY", "k")]))
                .unwrap();
        registry.resolve(Some("openai/gpt-5")).unwrap();
        assert!(!registry.clients.lock().unwrap()["openai"].client_is_made());
    }

    #[test]
    fn configured_providers_and_overrides_apply() {
        let config = ProvidersConfig::from_toml(
            r#"
            model = "local/test-model"
            [providers.local]
            api = "anthropic"
            base_url = "http://127.0.0.1:9/v1"
            [providers.local.models."test-model"]
            context_window = 1000
            images = true
            compat = { reasoning_effort = false }
            [providers.openai]
            base_url = "http://127.0.0.1:9/v1"
            api_key_env = ""
            "#,
        )
        .unwrap();
        let registry = Registry::with_environment(config, env(&[])).unwrap();
        let compat = &registry.entries["local"].settings.compat["test-model"];
        assert_eq!(compat.reasoning_effort, Some(false));
        let local = registry.resolve(None).unwrap();
        assert_eq!(local.info.context_window, 1000);
        assert!(local.info.images && local.info.known);
        assert_eq!(local.info.api, Api::Anthropic);
        // The built-in openai provider, redirected and without a key.
        let openai = registry.resolve(Some("openai/gpt-5")).unwrap();
        assert_eq!(openai.info.api, Api::OpenAiResponses);
        assert!(registry.models().iter().any(|m| m.provider == "local" && m.id == "test-model"));
        assert!(registry.models().iter().any(|m| m.provider == "anthropic"));
    }

    #[test]
    fn custom_providers_must_name_api_and_url() {
        let config = ProvidersConfig::from_toml("[providers.x]\napi = \"openai-chat\"").unwrap();
        let err = Registry::with_environment(config, env(&[])).unwrap_err().to_string();
        assert!(err.contains("base_url"), "{err}");
        let config = ProvidersConfig::from_toml("model = \"nope\"").unwrap();
        assert!(Registry::new(config).is_err());
    }
}
