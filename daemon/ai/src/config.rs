//! The providers part of the configuration file.
//!
//! ```toml
//! model = "local/test-model"
//!
//! [providers.local]
//! api = "openai-chat"            # openai-chat | openai-responses | anthropic
//! base_url = "http://127.0.0.1:8080/v1"
//! api_key_env = "LOCAL_API_KEY"  # optional; no key is sent when unset
//!
//! [providers.local.models."test-model"]
//! context_window = 32768
//! ```
//!
//! The daemon owns the file and embeds [`ProvidersConfig`] in its own configuration struct;
//! [`ProvidersConfig::from_toml`] parses a TOML string for callers that only need this part.

use crate::compat::CompatOverride;
use crate::retry::RetryPolicy;
use rein_protocol::model::{Api, ModelCost};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Models and providers: the default `model`, `[providers.NAME]` tables and `[retry]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProvidersConfig {
    /// The default model as `provider/model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Providers by name. A table named like a built-in provider changes only what it sets.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub providers: BTreeMap<String, ProviderConfig>,
    /// How failed requests are retried.
    #[serde(default)]
    pub retry: RetryPolicy,
}

/// One `[providers.NAME]` table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// The wire API; required unless the provider is built in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<Api>,
    /// The URL the API paths are appended to, ending with the version (`…/v1`); required
    /// unless the provider is built in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The environment variable holding the API key. Unset: the built-in provider's variable,
    /// or no key for other providers. An empty string sends no key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// Extra headers sent with every request (not for secrets: use `api_key_env`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Seconds of silence on an open stream before it counts as dropped (default 300).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout_secs: Option<u64>,
    /// Per-model overrides of the catalog, by model id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub models: BTreeMap<String, ModelOverride>,
}

/// Facts about one model that replace the catalog's (or the defaults, for unknown models).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelOverride {
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Context window in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// Most output tokens per request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u64>,
    /// Whether it accepts images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<bool>,
    /// Whether it reasons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<bool>,
    /// Dollars per million tokens.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "strict_cost")]
    pub cost: Option<ModelCost>,
    /// Compatibility settings replacing the catalog's (`[providers.NAME.models."ID".compat]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compat: Option<CompatOverride>,
}

/// Reads `cost = { ... }` with unknown keys denied, so a misspelled price is an error (the wire
/// type [`ModelCost`] accepts unknown keys, for compatibility between versions).
fn strict_cost<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<ModelCost>, D::Error> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct StrictCost {
        #[serde(default)]
        input: f64,
        #[serde(default)]
        output: f64,
        #[serde(default)]
        cache_read: f64,
        #[serde(default)]
        cache_write: f64,
    }
    let cost = StrictCost::deserialize(deserializer)?;
    Ok(Some(ModelCost {
        input: cost.input,
        output: cost.output,
        cache_read: cost.cache_read,
        cache_write: cost.cache_write,
    }))
}

/// The configuration could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The text was not valid TOML for these settings.
    #[error("invalid provider configuration: {0}")]
    Toml(#[from] toml::de::Error),
    /// A provider that is not built in lacks a required setting.
    #[error(
        "provider `{provider}` is not built in, so [providers.{provider}] must set `{setting}` ({hint})"
    )]
    Incomplete {
        /// The provider.
        provider: String,
        /// The missing setting.
        setting: &'static str,
        /// What to put there.
        hint: &'static str,
    },
    /// The default model is not written as `provider/model`.
    #[error("the default `model = \"{0}\"` must be written as provider/model")]
    BadDefaultModel(String),
}

impl ProvidersConfig {
    /// Parses the providers settings out of a TOML document (other keys are ignored).
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        Ok(toml::from_str(text)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_example_parses() {
        let config = ProvidersConfig::from_toml(
            r#"
            model = "local/test-model"
            log_level = "debug"  # someone else's setting
            [providers.local]
            api = "openai-chat"
            base_url = "http://127.0.0.1:8080/v1"
            api_key_env = "LOCAL_API_KEY"
            [providers.local.models."test-model"]
            context_window = 32768
            cost = { input = 1.0, output = 2.0 }
            [retry]
            max_retries = 2
            "#,
        )
        .unwrap();
        assert_eq!(config.model.as_deref(), Some("local/test-model"));
        let local = &config.providers["local"];
        assert_eq!(local.api, Some(Api::OpenAiChat));
        assert_eq!(local.api_key_env.as_deref(), Some("LOCAL_API_KEY"));
        let model = &local.models["test-model"];
        assert_eq!(model.context_window, Some(32768));
        assert_eq!(model.cost.as_ref().unwrap().output, 2.0);
        assert_eq!(config.retry.max_retries, 2);
        assert_eq!(config.retry.base_delay_ms, RetryPolicy::default().base_delay_ms);
    }

    #[test]
    fn model_compat_tables_parse_and_reject_typos() {
        let config = ProvidersConfig::from_toml(
            r#"
            [providers.local.models."qwen3"]
            compat = { stream_usage = false, max_tokens_field = "max_completion_tokens" }
            "#,
        )
        .unwrap();
        let compat = config.providers["local"].models["qwen3"].compat.unwrap();
        assert_eq!(compat.stream_usage, Some(false));
        assert_eq!(
            compat.max_tokens_field,
            Some(crate::compat::MaxTokensField::MaxCompletionTokens)
        );
        assert_eq!(compat.reasoning_content, None);
        let err = ProvidersConfig::from_toml(
            "[providers.local.models.\"m\"]\ncompat = { stream_usag = false }",
        )
        .unwrap_err();
        assert!(err.to_string().contains("stream_usag"), "{err}");
    }

    #[test]
    fn typos_and_unknown_apis_are_rejected() {
        let err = ProvidersConfig::from_toml("[providers.x]\nbase_ur = \"http://h\"").unwrap_err();
        assert!(err.to_string().contains("base_ur"), "{err}");
        let err = ProvidersConfig::from_toml("[providers.x]\napi = \"gemini\"").unwrap_err();
        assert!(err.to_string().contains("gemini"), "{err}");
    }
}
