//! Helpers shared by the provider tests: a provider pointed at a fake server, and event
//! collection.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use futures::StreamExt;
use rein_ai::http::{HttpProvider, ProviderSettings};
use rein_ai::{AssistantMessageEvent, Provider, ProviderRequest, RequestContext, RetryPolicy};
use rein_ai::{ProviderErrorKind, StreamOptions};
use rein_protocol::message::{AssistantMessage, Message, ToolDefinition, UserMessage};
use rein_protocol::model::{Api, ModelCost, ModelInfo};
use rein_testkit::fake_provider::FakeProvider;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// The key the test environment hands out.
pub(crate) const KEY: &str = "sk-test-secret-123";

pub(crate) const APIS: [Api; 3] = [Api::OpenAiChat, Api::OpenAiResponses, Api::Anthropic];

pub(crate) fn model(api: Api) -> ModelInfo {
    ModelInfo {
        provider: "fake".into(),
        id: "fake-model".into(),
        name: "Fake".into(),
        api,
        context_window: 100_000,
        max_output_tokens: 4096,
        images: true,
        reasoning: true,
        cost: ModelCost { input: 1.0, output: 2.0, cache_read: 0.5, cache_write: 4.0 },
        known: true,
    }
}

pub(crate) fn settings(fake: &FakeProvider, max_retries: u32) -> ProviderSettings {
    ProviderSettings {
        name: "fake".into(),
        base_url: fake.base_url(),
        api_key_env: Some("FAKE_API_KEY".into()),
        headers: vec![],
        retry: RetryPolicy { max_retries, base_delay_ms: 1, max_delay_ms: 60_000 },
        idle_timeout: Duration::from_secs(30),
        compat: Default::default(),
    }
}

pub(crate) fn provider(fake: &FakeProvider) -> HttpProvider {
    provider_with(settings(fake, 3))
}

pub(crate) fn provider_with(settings: ProviderSettings) -> HttpProvider {
    let env = Arc::new(|name: &str| (name == "FAKE_API_KEY").then(|| KEY.to_string()));
    HttpProvider::with_environment(settings, env)
}

pub(crate) fn request(api: Api, messages: Vec<Message>) -> ProviderRequest {
    ProviderRequest {
        model: model(api),
        context: RequestContext {
            system_prompt: "You are a test.".into(),
            messages: RequestContext::shared_history(messages),
            tools: Arc::from([ToolDefinition {
                name: "bash".into(),
                description: "Run a command".into(),
                parameters: json!({"type": "object", "properties": {"command": {"type": "string"}}}),
            }]),
            // Requests in these tests go through the kept encoding, as a harness's do.
            encoded: Some(Arc::default()),
        },
        options: StreamOptions::default(),
    }
}

pub(crate) fn hello() -> Vec<Message> {
    vec![Message::User(UserMessage::text("hello", 1))]
}

/// Every event of one request; fails the test if the stream never ends.
pub(crate) async fn collect(
    provider: &dyn Provider,
    request: ProviderRequest,
) -> Vec<AssistantMessageEvent> {
    let stream = provider.stream(request);
    tokio::time::timeout(Duration::from_secs(30), stream.collect::<Vec<_>>())
        .await
        .expect("the stream did not end")
}

/// The final message and, for errors, the kind.
pub(crate) fn outcome(
    events: &[AssistantMessageEvent],
) -> (AssistantMessage, Option<ProviderErrorKind>) {
    let finals: Vec<_> = events
        .iter()
        .filter(|e| {
            matches!(e, AssistantMessageEvent::Done(_) | AssistantMessageEvent::Error { .. })
        })
        .collect();
    assert_eq!(finals.len(), 1, "exactly one final event: {events:#?}");
    assert!(
        matches!(
            events.last(),
            Some(AssistantMessageEvent::Done(_) | AssistantMessageEvent::Error { .. })
        ),
        "the final event comes last"
    );
    assert_eq!(events.first(), Some(&AssistantMessageEvent::Start));
    match finals[0] {
        AssistantMessageEvent::Done(message) => (message.clone(), None),
        AssistantMessageEvent::Error { message, kind } => (message.clone(), Some(*kind)),
        _ => unreachable!(),
    }
}

pub(crate) fn retries(events: &[AssistantMessageEvent]) -> Vec<(u32, u32, u64, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            AssistantMessageEvent::Retry { attempt, max_attempts, delay_ms, error } => {
                Some((*attempt, *max_attempts, *delay_ms, error.clone()))
            }
            _ => None,
        })
        .collect()
}
