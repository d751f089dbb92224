//! Model providers.
//!
//! Each wire API (OpenAI Chat Completions, OpenAI Responses, Anthropic Messages) is turned into
//! one stream of [`AssistantMessageEvent`]s. This crate knows nothing of the agent loop,
//! sessions or sockets: every provider quirk stays here.
//!
//! - [`provider`]: the interface; [`http`]: the one implementation, over HTTP and SSE.
//! - [`wire`] switches between [`openai_chat`], [`openai_responses`] and [`anthropic`], which
//!   each build request bodies (history conversion) and decode their stream into an
//!   [`assemble::MessageBuilder`]; [`encoded_history`] keeps what earlier requests encoded.
//! - [`history`] and [`ids`]: rules for replaying history from another provider.
//! - [`failure`] and [`retry`]: error classification and backoff.
//! - [`compat`]: per-model settings for what one server needs beyond its API's rules.
//! - [`config`], [`catalog`] and [`registry`]: from `provider/model` to a ready provider.
//! - [`local`]: finding a local model server, and the models request that checks a provider.

pub mod anthropic;
pub mod assemble;
pub mod catalog;
pub mod compat;
pub mod config;
pub mod cost;
pub mod encoded_history;
pub mod failure;
pub mod history;
pub mod http;
pub mod ids;
pub mod local;
pub mod openai_chat;
pub mod openai_responses;
pub mod preconnect;
pub mod provider;
pub mod registry;
pub mod retry;
pub mod tls;
pub mod whole_reply;
pub mod wire;

pub use config::{ConfigError, ModelOverride, ProviderConfig, ProvidersConfig};
pub use encoded_history::EncodedHistory;
pub use provider::{
    AssistantMessageEvent, EventStream, Provider, ProviderErrorKind, ProviderRequest,
    RequestContext, StreamOptions,
};
pub use registry::{Registry, ResolveError, ResolvedModel};
pub use retry::RetryPolicy;
