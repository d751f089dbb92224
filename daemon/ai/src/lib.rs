//! Model providers.
//!
//! Each wire API (OpenAI Chat Completions, OpenAI Responses, Anthropic Messages) is turned into
//! one stream of [`AssistantMessageEvent`]s. This crate knows nothing of the agent loop,
//! sessions or sockets: every provider quirk stays here.

pub mod provider;

pub use provider::{
    AssistantMessageEvent, EventStream, Provider, ProviderErrorKind, ProviderRequest,
    RequestContext, StreamOptions,
};
