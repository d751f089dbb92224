//! Built-in providers and a table of well-known models with their limits and prices.
//!
//! Prices are US dollars per million tokens as published by each provider when this table was
//! written; a configuration's `[providers.NAME.models."ID"]` table overrides any of them.
//! A model missing from the table still works, with the defaults below and `known: false`.

use crate::compat::{self, Compat};
use rein_protocol::model::{Api, ModelCost, ModelInfo};

/// Context window assumed for a model the catalog does not know.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;
/// Output cap assumed for a model the catalog does not know.
pub const DEFAULT_MAX_OUTPUT_TOKENS: u64 = 16_384;

/// A provider that works with no configuration at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuiltinProvider {
    /// Its name, the first part of `provider/model`.
    pub name: &'static str,
    /// The wire API it speaks.
    pub api: Api,
    /// Where it is reached.
    pub base_url: &'static str,
    /// The environment variable holding its key; `None` when it takes none.
    pub api_key_env: Option<&'static str>,
}

/// Providers available without configuration.
pub const BUILTIN_PROVIDERS: &[BuiltinProvider] = &[
    BuiltinProvider {
        name: "openai",
        api: Api::OpenAiResponses,
        base_url: "https://api.openai.com/v1",
        api_key_env: Some("OPENAI_API_KEY"),
    },
    BuiltinProvider {
        name: "anthropic",
        api: Api::Anthropic,
        base_url: "https://api.anthropic.com/v1",
        api_key_env: Some("ANTHROPIC_API_KEY"),
    },
    BuiltinProvider {
        name: "openrouter",
        api: Api::OpenAiChat,
        base_url: "https://openrouter.ai/api/v1",
        api_key_env: Some("OPENROUTER_API_KEY"),
    },
    BuiltinProvider {
        name: "groq",
        api: Api::OpenAiChat,
        base_url: "https://api.groq.com/openai/v1",
        api_key_env: Some("GROQ_API_KEY"),
    },
    BuiltinProvider {
        name: "deepseek",
        api: Api::OpenAiChat,
        base_url: "https://api.deepseek.com/v1",
        api_key_env: Some("DEEPSEEK_API_KEY"),
    },
    BuiltinProvider {
        name: "ollama",
        api: Api::OpenAiChat,
        base_url: "http://127.0.0.1:11434/v1",
        api_key_env: None,
    },
];

/// The built-in provider called `name`.
pub fn builtin_provider(name: &str) -> Option<&'static BuiltinProvider> {
    BUILTIN_PROVIDERS.iter().find(|p| p.name == name)
}

/// One row of the model table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CatalogModel {
    /// The provider it is listed under.
    pub provider: &'static str,
    /// The model id sent to the provider.
    pub id: &'static str,
    /// A display name.
    pub name: &'static str,
    /// Context window in tokens.
    pub context_window: u64,
    /// Most output tokens per request.
    pub max_output_tokens: u64,
    /// Accepts images.
    pub images: bool,
    /// Reasons (thinking levels apply).
    pub reasoning: bool,
    /// Dollars per million tokens: input, output, cache read, cache write.
    pub price: [f64; 4],
    /// What its server needs beyond the wire API's common rules.
    pub compat: Compat,
}

/// The standard settings, usable in a `const` table.
const STANDARD: Compat = Compat {
    stream_usage: true,
    reasoning_effort: true,
    reasoning_content: false,
    max_tokens_field: compat::MaxTokensField::MaxTokens,
};

impl CatalogModel {
    /// This row with other compatibility settings.
    const fn with(self, compat: Compat) -> Self {
        Self { compat, ..self }
    }
}

// One argument per column keeps the table below readable as a table.
#[allow(clippy::too_many_arguments)]
const fn row(
    provider: &'static str,
    id: &'static str,
    name: &'static str,
    context_window: u64,
    max_output_tokens: u64,
    images: bool,
    reasoning: bool,
    price: [f64; 4],
) -> CatalogModel {
    CatalogModel {
        provider,
        id,
        name,
        context_window,
        max_output_tokens,
        images,
        reasoning,
        price,
        compat: STANDARD,
    }
}

/// The well-known models.
pub const MODELS: &[CatalogModel] = &[
    row("openai", "gpt-5", "GPT-5", 400_000, 128_000, true, true, [1.25, 10.0, 0.125, 0.0])
        .with(compat::OPENAI_REASONING),
    row(
        "openai",
        "gpt-5-mini",
        "GPT-5 mini",
        400_000,
        128_000,
        true,
        true,
        [0.25, 2.0, 0.025, 0.0],
    )
    .with(compat::OPENAI_REASONING),
    row(
        "openai",
        "gpt-5-nano",
        "GPT-5 nano",
        400_000,
        128_000,
        true,
        true,
        [0.05, 0.4, 0.005, 0.0],
    )
    .with(compat::OPENAI_REASONING),
    row("openai", "gpt-4.1", "GPT-4.1", 1_047_576, 32_768, true, false, [2.0, 8.0, 0.5, 0.0]),
    row(
        "openai",
        "gpt-4.1-mini",
        "GPT-4.1 mini",
        1_047_576,
        32_768,
        true,
        false,
        [0.4, 1.6, 0.1, 0.0],
    ),
    row("openai", "o3", "o3", 200_000, 100_000, true, true, [2.0, 8.0, 0.5, 0.0])
        .with(compat::OPENAI_REASONING),
    row("openai", "o4-mini", "o4-mini", 200_000, 100_000, true, true, [1.1, 4.4, 0.275, 0.0])
        .with(compat::OPENAI_REASONING),
    row(
        "anthropic",
        "claude-opus-4-1",
        "Claude Opus 4.1",
        200_000,
        32_000,
        true,
        true,
        [15.0, 75.0, 1.5, 18.75],
    ),
    row(
        "anthropic",
        "claude-sonnet-4-5",
        "Claude Sonnet 4.5",
        200_000,
        64_000,
        true,
        true,
        [3.0, 15.0, 0.3, 3.75],
    ),
    row(
        "anthropic",
        "claude-sonnet-4-0",
        "Claude Sonnet 4",
        200_000,
        64_000,
        true,
        true,
        [3.0, 15.0, 0.3, 3.75],
    ),
    row(
        "anthropic",
        "claude-haiku-4-5",
        "Claude Haiku 4.5",
        200_000,
        64_000,
        true,
        true,
        [1.0, 5.0, 0.1, 1.25],
    ),
    row(
        "deepseek",
        "deepseek-chat",
        "DeepSeek V3.2",
        128_000,
        8_192,
        false,
        false,
        [0.28, 0.42, 0.028, 0.0],
    )
    .with(compat::DEEPSEEK),
    row(
        "deepseek",
        "deepseek-reasoner",
        "DeepSeek V3.2 (thinking)",
        128_000,
        64_000,
        false,
        true,
        [0.28, 0.42, 0.028, 0.0],
    )
    .with(compat::DEEPSEEK),
    row(
        "groq",
        "llama-3.3-70b-versatile",
        "Llama 3.3 70B",
        131_072,
        32_768,
        false,
        false,
        [0.59, 0.79, 0.0, 0.0],
    ),
    row(
        "groq",
        "openai/gpt-oss-120b",
        "gpt-oss-120b",
        131_072,
        65_536,
        false,
        true,
        [0.15, 0.75, 0.0, 0.0],
    ),
    row(
        "openrouter",
        "anthropic/claude-sonnet-4.5",
        "Claude Sonnet 4.5",
        200_000,
        64_000,
        true,
        true,
        [3.0, 15.0, 0.3, 3.75],
    ),
    row(
        "openrouter",
        "openai/gpt-5",
        "GPT-5",
        400_000,
        128_000,
        true,
        true,
        [1.25, 10.0, 0.125, 0.0],
    ),
];

/// The catalog row for `id` under `provider`, else under any provider (so a proxy that
/// serves a well-known model by its usual id still gets its limits).
pub fn lookup(provider: &str, id: &str) -> Option<&'static CatalogModel> {
    MODELS
        .iter()
        .find(|m| m.provider == provider && m.id == id)
        .or_else(|| MODELS.iter().find(|m| m.id == id))
}

/// What rein knows of `provider/id` reached over `api`: the catalog row, or defaults with
/// `known: false` (context [`DEFAULT_CONTEXT_WINDOW`], output [`DEFAULT_MAX_OUTPUT_TOKENS`],
/// no images, no reasoning, zero prices).
pub fn model_info(provider: &str, id: &str, api: Api) -> ModelInfo {
    match lookup(provider, id) {
        Some(row) => ModelInfo {
            provider: provider.to_string(),
            id: id.to_string(),
            name: row.name.to_string(),
            api,
            context_window: row.context_window,
            max_output_tokens: row.max_output_tokens,
            images: row.images,
            reasoning: row.reasoning,
            cost: ModelCost {
                input: row.price[0],
                output: row.price[1],
                cache_read: row.price[2],
                cache_write: row.price[3],
            },
            known: true,
        },
        None => ModelInfo {
            provider: provider.to_string(),
            id: id.to_string(),
            name: id.to_string(),
            api,
            context_window: DEFAULT_CONTEXT_WINDOW,
            max_output_tokens: DEFAULT_MAX_OUTPUT_TOKENS,
            images: false,
            reasoning: false,
            cost: ModelCost::default(),
            known: false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_is_sane_and_unique() {
        for (i, row) in MODELS.iter().enumerate() {
            assert!(builtin_provider(row.provider).is_some(), "{}", row.id);
            assert!(row.max_output_tokens <= row.context_window, "{}", row.id);
            assert!(row.price[0] > 0.0 && row.price[1] >= row.price[0] * 0.5, "{}", row.id);
            assert!(!MODELS[..i].iter().any(|o| o.provider == row.provider && o.id == row.id));
        }
    }

    #[test]
    fn unknown_models_get_documented_defaults() {
        let info = model_info("local", "tiny", Api::OpenAiChat);
        assert!(!info.known);
        assert_eq!(info.context_window, DEFAULT_CONTEXT_WINDOW);
        assert_eq!(info.max_output_tokens, DEFAULT_MAX_OUTPUT_TOKENS);
        let info = model_info("proxy", "claude-sonnet-4-5", Api::Anthropic);
        assert!(info.known && info.images && info.cost.output == 15.0);
        assert_eq!(info.provider, "proxy");
    }
}
