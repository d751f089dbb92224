//! Models, their wire APIs, prices and thinking levels.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The wire API a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum Api {
    /// OpenAI Chat Completions and the many servers compatible with it.
    #[serde(rename = "openai-chat")]
    OpenAiChat,
    /// The OpenAI Responses API.
    #[serde(rename = "openai-responses")]
    OpenAiResponses,
    /// The Anthropic Messages API.
    #[serde(rename = "anthropic")]
    Anthropic,
}

impl Api {
    /// The name used in configuration files and on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OpenAiChat => "openai-chat",
            Self::OpenAiResponses => "openai-responses",
            Self::Anthropic => "anthropic",
        }
    }
}

impl std::fmt::Display for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Price per million tokens, in US dollars.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ModelCost {
    /// Uncached input.
    #[serde(default)]
    pub input: f64,
    /// Output.
    #[serde(default)]
    pub output: f64,
    /// Cache reads.
    #[serde(default)]
    pub cache_read: f64,
    /// Cache writes.
    #[serde(default)]
    pub cache_write: f64,
}

/// What rein knows about one model of one provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ModelInfo {
    /// The provider name from the configuration.
    pub provider: String,
    /// The model id sent to the provider.
    pub id: String,
    /// A display name.
    #[serde(default)]
    pub name: String,
    /// The wire API used to reach it.
    pub api: Api,
    /// The context window in tokens.
    pub context_window: u64,
    /// The most output tokens one request may ask for.
    pub max_output_tokens: u64,
    /// Whether the model accepts images.
    #[serde(default)]
    pub images: bool,
    /// Whether the model reasons (thinking levels apply).
    #[serde(default)]
    pub reasoning: bool,
    /// Prices; all zero when unknown.
    #[serde(default)]
    pub cost: ModelCost,
    /// False when the model is not in the catalog and defaults were used.
    #[serde(default)]
    pub known: bool,
}

impl ModelInfo {
    /// The `provider/model` reference of this model.
    pub fn reference(&self) -> ModelRef {
        ModelRef { provider: self.provider.clone(), model: self.id.clone() }
    }
}

/// A `provider/model` pair naming a model.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct ModelRef {
    /// The provider name.
    pub provider: String,
    /// The model id.
    pub model: String,
}

impl ModelRef {
    /// Parses `provider/model`; the model part may itself contain slashes
    /// (`openrouter/anthropic/claude-sonnet-4`).
    pub fn parse(text: &str) -> Option<Self> {
        let (provider, model) = text.split_once('/')?;
        if provider.is_empty() || model.is_empty() {
            return None;
        }
        Some(Self { provider: provider.to_string(), model: model.to_string() })
    }
}

impl std::fmt::Display for ModelRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.provider, self.model)
    }
}

/// How hard a reasoning model should think.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ThinkingLevel {
    /// No reasoning requested.
    #[default]
    Off,
    /// The least reasoning the provider offers.
    Minimal,
    /// Low effort.
    Low,
    /// Medium effort.
    Medium,
    /// High effort.
    High,
    /// The most the provider offers.
    Xhigh,
}

impl ThinkingLevel {
    /// Every level, weakest first.
    pub const ALL: [ThinkingLevel; 6] =
        [Self::Off, Self::Minimal, Self::Low, Self::Medium, Self::High, Self::Xhigh];

    /// The name used on the wire and in configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Minimal => "minimal",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::Xhigh => "xhigh",
        }
    }

    /// Parses a level name.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|level| level.as_str() == text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_ref_parses_nested_ids() {
        let r = ModelRef::parse("openrouter/anthropic/claude").unwrap();
        assert_eq!(r.provider, "openrouter");
        assert_eq!(r.model, "anthropic/claude");
        assert_eq!(r.to_string(), "openrouter/anthropic/claude");
        assert!(ModelRef::parse("nomodel").is_none());
        assert!(ModelRef::parse("/x").is_none());
    }

    #[test]
    fn model_info_round_trips() {
        let info = ModelInfo {
            provider: "local".into(),
            id: "m".into(),
            name: "M".into(),
            api: Api::OpenAiResponses,
            context_window: 1000,
            max_output_tokens: 100,
            images: true,
            reasoning: false,
            cost: ModelCost { input: 1.0, output: 2.0, cache_read: 0.1, cache_write: 0.2 },
            known: true,
        };
        let text = serde_json::to_string(&info).unwrap();
        assert!(text.contains("\"api\":\"openai-responses\""));
        assert_eq!(serde_json::from_str::<ModelInfo>(&text).unwrap(), info);
    }

    #[test]
    fn thinking_levels_parse() {
        for level in ThinkingLevel::ALL {
            assert_eq!(ThinkingLevel::parse(level.as_str()), Some(level));
            let json = serde_json::to_string(&level).unwrap();
            assert_eq!(json, format!("\"{}\"", level.as_str()));
        }
        assert_eq!(ThinkingLevel::parse("max"), None);
    }
}
