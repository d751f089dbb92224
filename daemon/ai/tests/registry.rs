//! From configuration text to a streamed answer: the registry resolves `provider/model`
//! against a configured provider pointed at the fake server.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;

use common::{collect, hello, outcome};
use rein_ai::{ProviderRequest, ProvidersConfig, Registry, RequestContext, StreamOptions};
use rein_protocol::model::Api;
use rein_testkit::fake_provider::{FakeProvider, Fault, Reply};
use std::sync::Arc;

#[tokio::test]
async fn a_configured_provider_streams_with_its_key_prices_and_retry_settings() {
    let first = Reply::fault(Fault::ServerError);
    let fake = FakeProvider::start(vec![first, Reply::text("hi")]).await.unwrap();
    let config = ProvidersConfig::from_toml(&format!(
        r#"
        model = "local/test-model"
        [providers.local]
        api = "anthropic"
        base_url = "{}"
        api_key_env = "LOCAL_API_KEY"
        [providers.local.models."test-model"]
        cost = {{ input = 3.0, output = 15.0 }}
        [retry]
        base_delay_ms = 1
        "#,
        fake.base_url()
    ))
    .unwrap();
    let env = Arc::new(|name: &str| (name == "LOCAL_API_KEY").then(|| "local-key".to_string()));
    let registry = Registry::with_environment(config, env).unwrap();
    let resolved = registry.resolve(None).unwrap();
    assert_eq!(resolved.info.api, Api::Anthropic);
    assert!(resolved.info.known);
    let request = ProviderRequest {
        model: resolved.info.clone(),
        context: RequestContext {
            messages: RequestContext::shared_history(hello()),
            ..RequestContext::default()
        },
        options: StreamOptions::default(),
    };
    let events = collect(resolved.provider.as_ref(), request).await;
    let (message, error) = outcome(&events);
    assert_eq!(error, None);
    assert_eq!(message.text(), "hi");
    assert_eq!((message.provider.as_str(), message.model.as_str()), ("local", "test-model"));
    let expected = 10.0 * 3.0 / 1e6 + 5.0 * 15.0 / 1e6;
    assert!((message.usage.cost.total - expected).abs() < 1e-12);
    let requests = fake.requests();
    assert_eq!(requests.len(), 2, "one retry after the 500");
    assert_eq!(requests[1].header("x-api-key"), Some("local-key"));
    assert_eq!(requests[1].body["max_tokens"], 16_384);
}
