//! The session's model: resolved through the registry when possible, and otherwise kept as a
//! reference with the reason it cannot be used, so a session opens even when its provider is
//! gone or its API key is not set.

use std::sync::Arc;

use futures::StreamExt;
use futures::stream;
use rein_ai::{
    AssistantMessageEvent, EventStream, Provider, ProviderErrorKind, ProviderRequest, Registry,
    ResolveError,
};
use rein_protocol::ErrorKind;
use rein_protocol::message::{AssistantMessage, StopReason, Usage};
use rein_protocol::model::{Api, ModelInfo, ModelRef};

use super::error::CodingError;

/// The model in force and whether it can be reached.
#[derive(Clone)]
pub(crate) struct ModelSlot {
    /// What the session asks for.
    pub(crate) reference: ModelRef,
    /// What rein knows of it (catalog defaults when nothing is known).
    pub(crate) info: ModelInfo,
    /// The provider, or why there is none.
    pub(crate) provider: Result<Arc<dyn Provider>, UnusableModel>,
}

/// Why the model cannot be used, and what to set.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct UnusableModel {
    kind: ErrorKind,
    message: String,
}

impl UnusableModel {
    fn from_resolve(error: &ResolveError) -> Self {
        Self { kind: ErrorKind::ModelNotFound, message: error.to_string() }
    }

    pub(crate) fn to_error(&self) -> CodingError {
        CodingError::Model { kind: self.kind, message: self.message.clone() }
    }
}

impl ModelSlot {
    /// Resolves `reference` (the registry's default when `None`: the configured one, else the
    /// first provider with an API key set). Never fails: an unusable model is kept with its
    /// reason.
    pub(crate) fn resolve(registry: &Registry, reference: Option<&str>) -> Self {
        let fallback = registry.effective_default_model();
        let chosen = reference.or(fallback.as_deref());
        let text = chosen.unwrap_or_default().to_string();
        let parsed = ModelRef::parse(&text)
            .unwrap_or_else(|| ModelRef { provider: String::new(), model: text.clone() });
        let resolved = match chosen {
            Some(text) => registry.resolve(Some(text)),
            None => Err(ResolveError::NoDefault),
        };
        match resolved {
            Ok(resolved) => {
                Self { reference: parsed, info: resolved.info, provider: Ok(resolved.provider) }
            }
            Err(error) => {
                tracing::warn!(model = %text, %error, "session model cannot be used");
                let info = registry.model_info(&text).unwrap_or_else(|_| {
                    rein_ai::catalog::model_info(&parsed.provider, &parsed.model, Api::OpenAiChat)
                });
                Self { reference: parsed, info, provider: Err(UnusableModel::from_resolve(&error)) }
            }
        }
    }

    /// The provider and model, or the error naming what to set.
    pub(crate) fn usable(&self) -> Result<(Arc<dyn Provider>, ModelInfo), CodingError> {
        match &self.provider {
            Ok(provider) => Ok((provider.clone(), self.info.clone())),
            Err(unusable) => Err(unusable.to_error()),
        }
    }

    /// The provider the harness holds: the real one, or one that fails every request with
    /// the reason (the session refuses to prompt first, so it is only a safety net).
    pub(crate) fn harness_provider(&self) -> Arc<dyn Provider> {
        match &self.provider {
            Ok(provider) => provider.clone(),
            Err(unusable) => Arc::new(UnavailableProvider { message: unusable.message.clone() }),
        }
    }
}

/// A provider standing in for one that cannot be reached.
struct UnavailableProvider {
    message: String,
}

impl Provider for UnavailableProvider {
    fn stream(&self, request: ProviderRequest) -> EventStream {
        let message = AssistantMessage {
            content: Vec::new(),
            api: request.model.api.as_str().to_string(),
            provider: request.model.provider.clone(),
            model: request.model.id.clone(),
            usage: Usage::default(),
            stop_reason: StopReason::Error,
            error_message: Some(self.message.clone()),
            timestamp: 0,
        };
        stream::iter([AssistantMessageEvent::Error { message, kind: ProviderErrorKind::Auth }])
            .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_ai::ProvidersConfig;

    fn registry(toml: &str) -> Registry {
        let config = ProvidersConfig::from_toml(toml).unwrap();
        Registry::with_environment(config, Arc::new(|_| None)).unwrap()
    }

    #[test]
    fn a_configured_local_model_resolves() {
        let registry = registry(
            "[providers.local]\napi = \"openai-chat\"\nbase_url = \"http://127.0.0.1:9/v1\"\n",
        );
        let slot = ModelSlot::resolve(&registry, Some("local/m"));
        assert!(slot.usable().is_ok());
        assert_eq!(slot.reference.to_string(), "local/m");
    }

    #[test]
    fn unusable_models_say_what_to_set() {
        let registry = registry("");
        let unknown = ModelSlot::resolve(&registry, Some("nowhere/m"));
        let error = unknown.usable().err().unwrap();
        assert_eq!(error.kind(), ErrorKind::ModelNotFound);
        assert!(error.to_string().contains("[providers.nowhere]"), "{error}");
        assert_eq!(unknown.reference.provider, "nowhere");

        let keyless = ModelSlot::resolve(&registry, Some("anthropic/claude-sonnet-4-5"));
        let error = keyless.usable().err().unwrap();
        assert_eq!(error.kind(), ErrorKind::ModelNotFound);
        assert!(error.to_string().contains("ANTHROPIC_API_KEY"), "{error}");

        let none = ModelSlot::resolve(&registry, None);
        assert!(none.usable().err().unwrap().to_string().contains("no model chosen"));
    }
}
