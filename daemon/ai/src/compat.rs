//! Per-model compatibility settings: what one model's server needs beyond the common rules of
//! its wire API.
//!
//! Servers that speak the same API still disagree on details: DeepSeek's thinking mode wants
//! the reasoning of every tool-calling assistant turn sent back as `reasoning_content`,
//! OpenAI's reasoning models take `max_completion_tokens` instead of `max_tokens`, and some
//! OpenAI-compatible servers reject `stream_options` or `reasoning_effort`. The catalog says
//! what each well-known model needs ([`for_model`]); a configuration's
//! `[providers.NAME.models."ID".compat]` table overrides any of it ([`CompatOverride`]).

use crate::catalog;
use rein_protocol::model::ModelInfo;
use serde::{Deserialize, Serialize};

/// Which request field carries the output token cap on the Chat Completions API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MaxTokensField {
    /// `max_tokens`: understood by every OpenAI-compatible server.
    MaxTokens,
    /// `max_completion_tokens`: required by OpenAI's reasoning models.
    MaxCompletionTokens,
}

impl MaxTokensField {
    /// The JSON field name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::MaxTokens => "max_tokens",
            Self::MaxCompletionTokens => "max_completion_tokens",
        }
    }
}

/// The settled compatibility settings of one model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compat {
    /// Chat Completions: send `stream_options: {"include_usage": true}` so the stream ends
    /// with token counts.
    pub stream_usage: bool,
    /// Send the thinking level (`reasoning_effort`, `reasoning.effort`) to reasoning models.
    pub reasoning_effort: bool,
    /// Chat Completions: send the model's own reasoning back as `reasoning_content` on every
    /// assistant message that carries tool calls (DeepSeek thinking mode answers 400 without).
    pub reasoning_content: bool,
    /// Chat Completions: the field that carries the output token cap.
    pub max_tokens_field: MaxTokensField,
}

impl Default for Compat {
    fn default() -> Self {
        Self {
            stream_usage: true,
            reasoning_effort: true,
            reasoning_content: false,
            max_tokens_field: MaxTokensField::MaxTokens,
        }
    }
}

/// `[providers.NAME.models."ID".compat]`: settings that replace the catalog's for one model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompatOverride {
    /// See [`Compat::stream_usage`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_usage: Option<bool>,
    /// See [`Compat::reasoning_effort`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<bool>,
    /// See [`Compat::reasoning_content`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<bool>,
    /// See [`Compat::max_tokens_field`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens_field: Option<MaxTokensField>,
}

impl Compat {
    /// These settings with `overrides` applied.
    pub fn with(mut self, overrides: &CompatOverride) -> Self {
        if let Some(v) = overrides.stream_usage {
            self.stream_usage = v;
        }
        if let Some(v) = overrides.reasoning_effort {
            self.reasoning_effort = v;
        }
        if let Some(v) = overrides.reasoning_content {
            self.reasoning_content = v;
        }
        if let Some(v) = overrides.max_tokens_field {
            self.max_tokens_field = v;
        }
        self
    }
}

/// DeepSeek in thinking mode: tool-calling turns must carry their `reasoning_content`.
pub const DEEPSEEK: Compat = Compat {
    stream_usage: true,
    reasoning_effort: true,
    reasoning_content: true,
    max_tokens_field: MaxTokensField::MaxTokens,
};

/// OpenAI reasoning models on Chat Completions: `max_completion_tokens` only.
pub const OPENAI_REASONING: Compat = Compat {
    stream_usage: true,
    reasoning_effort: true,
    reasoning_content: false,
    max_tokens_field: MaxTokensField::MaxCompletionTokens,
};

/// What the catalog says `model` needs: its row's settings, else the settings of its
/// built-in provider (DeepSeek's rules hold for any model it serves), else the defaults.
pub fn for_model(model: &ModelInfo) -> Compat {
    if let Some(row) = catalog::lookup(&model.provider, &model.id) {
        return row.compat;
    }
    match model.provider.as_str() {
        "deepseek" => DEEPSEEK,
        _ => Compat::default(),
    }
}

/// The setting (`compat.NAME = false`) that stops rein sending `parameter`, for errors that
/// say a server rejected it.
pub fn setting_for_parameter(parameter: &str) -> Option<&'static str> {
    match parameter {
        "stream_options" | "include_usage" => Some("stream_usage"),
        "reasoning_effort" | "reasoning" => Some("reasoning_effort"),
        "reasoning_content" => Some("reasoning_content"),
        _ => None,
    }
}

/// When an HTTP 400/422 error text says the server rejected a parameter that a compat
/// setting controls, the sentence telling the user how to stop sending it.
pub fn rejected_parameter_hint(provider: &str, model: &str, error_text: &str) -> Option<String> {
    const PARAMETERS: [&str; 6] = [
        "stream_options",
        "include_usage",
        "reasoning_effort",
        "reasoning_content",
        "max_completion_tokens",
        "max_tokens",
    ];
    let lower = error_text.to_lowercase();
    let rejection = [
        "unrecognized",
        "unknown",
        "unsupported",
        "not supported",
        "not allowed",
        "extra inputs",
        "extra_forbidden",
        "invalid",
        "unexpected",
        "not permitted",
        "does not support",
    ]
    .iter()
    .any(|word| lower.contains(word));
    if !rejection {
        return None;
    }
    // The parameter named first is the rejected one ("'max_tokens' is not supported: use
    // 'max_completion_tokens'").
    let (_, parameter) =
        PARAMETERS.iter().filter_map(|p| lower.find(p).map(|at| (at, *p))).min()?;
    let table = format!("[providers.{provider}.models.\"{model}\".compat]");
    Some(match parameter {
        "max_completion_tokens" => format!(
            "the server does not take `max_completion_tokens`: set `max_tokens_field = \"max_tokens\"` in {table}"
        ),
        "max_tokens" => format!(
            "the server does not take `max_tokens`: set `max_tokens_field = \"max_completion_tokens\"` in {table}"
        ),
        other => {
            let setting = setting_for_parameter(other)?;
            format!(
                "the server does not take `{other}`: set `{setting} = false` in {table} to stop sending it"
            )
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_protocol::model::Api;

    #[test]
    fn catalog_rows_and_providers_decide_and_overrides_win() {
        let deepseek = catalog::model_info("deepseek", "deepseek-reasoner", Api::OpenAiChat);
        assert!(for_model(&deepseek).reasoning_content);
        let unknown = catalog::model_info("deepseek", "deepseek-v9", Api::OpenAiChat);
        assert!(for_model(&unknown).reasoning_content);
        let local = catalog::model_info("local", "qwen3", Api::OpenAiChat);
        assert_eq!(for_model(&local), Compat::default());
        let o3 = catalog::model_info("openai", "o3", Api::OpenAiChat);
        assert_eq!(for_model(&o3).max_tokens_field, MaxTokensField::MaxCompletionTokens);
        let off = CompatOverride { stream_usage: Some(false), ..CompatOverride::default() };
        let settled = for_model(&local).with(&off);
        assert!(!settled.stream_usage && settled.reasoning_effort);
    }

    #[test]
    fn rejected_parameters_name_the_setting() {
        let hint = rejected_parameter_hint(
            "local",
            "m",
            "Unrecognized request argument supplied: stream_options",
        )
        .unwrap();
        assert!(hint.contains("stream_usage = false"), "{hint}");
        assert!(hint.contains("[providers.local.models.\"m\".compat]"), "{hint}");
        let hint = rejected_parameter_hint(
            "x",
            "m",
            "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
        )
        .unwrap();
        assert!(hint.contains("max_tokens_field"), "{hint}");
        let hint =
            rejected_parameter_hint("x", "m", "reasoning_effort is not supported by this model")
                .unwrap();
        assert!(hint.contains("reasoning_effort = false"), "{hint}");
        assert_eq!(rejected_parameter_hint("x", "m", "prompt is too long"), None);
        assert_eq!(rejected_parameter_hint("x", "m", "max_tokens must be at least 1"), None);
    }
}
