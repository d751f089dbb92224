//! Faults injected by the fake provider: retries with their events, errors with their kinds,
//! and cancellation.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;

use common::*;
use futures::StreamExt;
use rein_ai::{AssistantMessageEvent, Provider, ProviderErrorKind};
use rein_protocol::message::{ContentBlock, StopReason};
use rein_testkit::fake_provider::{FakeProvider, Fault, Reply};
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn transient_failures_are_retried_and_reported() {
    let faults = [
        (Fault::RateLimit, "HTTP 429"),
        (Fault::ServerError, "HTTP 500"),
        (Fault::BadGateway, "502 Bad Gateway"),
        (Fault::Disconnect, "connection"),
        (Fault::Drop, "stream broke"),
    ];
    for api in APIS {
        for (fault, wording) in faults {
            let first = Reply { retry_after: Some(0), ..Reply::fault(fault) };
            let fake = FakeProvider::start(vec![first, Reply::text("recovered")]).await.unwrap();
            let events = collect(&provider(&fake), request(api, hello())).await;
            let (message, error) = outcome(&events);
            assert_eq!(error, None, "{api} {fault:?}: {message:?}");
            assert_eq!(message.text(), "recovered");
            let retries = retries(&events);
            assert_eq!(retries.len(), 1, "{api} {fault:?}");
            let (attempt, max_attempts, _, text) = &retries[0];
            assert_eq!((*attempt, *max_attempts), (1, 4));
            assert!(text.contains(wording), "{api} {fault:?}: {text}");
            assert_eq!(fake.requests().len(), 2);
            // The retry event comes before any content.
            let retry_at =
                events.iter().position(|e| matches!(e, AssistantMessageEvent::Retry { .. }));
            let delta_at = events.iter().position(|e| matches!(e, AssistantMessageEvent::Delta(_)));
            assert!(retry_at < delta_at);
        }
    }
}

#[tokio::test]
async fn retry_after_headers_set_the_delay() {
    let first =
        Reply { retry_after_ms: Some(7), retry_after: Some(50), ..Reply::fault(Fault::RateLimit) };
    let fake = FakeProvider::start(vec![first, Reply::text("ok")]).await.unwrap();
    let events =
        collect(&provider(&fake), request(rein_protocol::model::Api::OpenAiChat, hello())).await;
    assert_eq!(retries(&events)[0].2, 7);
    assert_eq!(outcome(&events).1, None);
}

#[tokio::test]
async fn a_wait_longer_than_the_limit_is_not_retried() {
    let first = Reply { retry_after: Some(3600), ..Reply::fault(Fault::RateLimit) };
    let fake = FakeProvider::start(vec![first]).await.unwrap();
    let events =
        collect(&provider(&fake), request(rein_protocol::model::Api::Anthropic, hello())).await;
    assert!(retries(&events).is_empty());
    assert_eq!(outcome(&events).1, Some(ProviderErrorKind::RateLimited));
}

#[tokio::test]
async fn retries_run_out_with_the_last_error() {
    for api in APIS {
        let limited = || Reply { retry_after: Some(0), ..Reply::fault(Fault::RateLimit) };
        let fake = FakeProvider::start(vec![limited(), limited(), limited()]).await.unwrap();
        let events = collect(&provider_with(settings(&fake, 2)), request(api, hello())).await;
        let (message, error) = outcome(&events);
        assert_eq!(error, Some(ProviderErrorKind::RateLimited));
        assert_eq!(message.stop_reason, StopReason::Error);
        assert!(message.error_message.unwrap().contains("Rate limit reached"));
        assert_eq!(retries(&events).iter().map(|r| r.0).collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!(fake.requests().len(), 3);
    }
}

#[tokio::test]
async fn context_overflow_is_its_own_kind_and_not_retried() {
    for api in APIS {
        let fake = FakeProvider::start(vec![Reply::fault(Fault::ContextOverflow)]).await.unwrap();
        let events = collect(&provider(&fake), request(api, hello())).await;
        let (message, error) = outcome(&events);
        assert_eq!(error, Some(ProviderErrorKind::ContextOverflow), "{api}");
        assert!(message.error_message.unwrap().contains("HTTP 400"));
        assert!(retries(&events).is_empty());
    }
}

#[tokio::test]
async fn a_stream_without_its_terminal_event_is_a_protocol_error() {
    for api in APIS {
        let reply = Reply { fault: Some(Fault::Truncate), ..Reply::text("partial answer") };
        let fake = FakeProvider::start(vec![reply]).await.unwrap();
        let events = collect(&provider(&fake), request(api, hello())).await;
        let (message, error) = outcome(&events);
        assert_eq!(error, Some(ProviderErrorKind::Protocol), "{api}");
        assert_eq!(message.stop_reason, StopReason::Error);
        assert_eq!(message.text(), "partial answer");
        assert!(message.error_message.unwrap().contains("terminal event"));
        assert!(retries(&events).is_empty(), "content had streamed: no retry");
    }
}

#[tokio::test]
async fn an_empty_truncated_stream_is_retried() {
    for api in APIS {
        let reply =
            Reply { fault: Some(Fault::Truncate), after_events: Some(1), ..Reply::text("x") };
        let fake = FakeProvider::start(vec![reply, Reply::text("second")]).await.unwrap();
        let events = collect(&provider(&fake), request(api, hello())).await;
        assert_eq!(outcome(&events).0.text(), "second", "{api}");
        assert_eq!(retries(&events).len(), 1);
    }
}

#[tokio::test]
async fn a_drop_after_content_is_a_network_error_keeping_the_partial_message() {
    for api in APIS {
        let reply = Reply {
            fault: Some(Fault::Drop),
            after_events: Some(6),
            delta_size: Some(1),
            ..Reply::text("abcdefghijklmnop")
        };
        let fake = FakeProvider::start(vec![reply]).await.unwrap();
        let events = collect(&provider(&fake), request(api, hello())).await;
        let (message, error) = outcome(&events);
        assert_eq!(error, Some(ProviderErrorKind::Network), "{api}: {message:?}");
        assert!(!message.text().is_empty() && "abcdefghijklmnop".starts_with(&message.text()));
        assert!(retries(&events).is_empty());
    }
}

#[tokio::test]
async fn an_exhausted_script_fails_loudly() {
    let fake = FakeProvider::start(vec![]).await.unwrap();
    let events = collect(
        &provider_with(settings(&fake, 0)),
        request(rein_protocol::model::Api::OpenAiChat, hello()),
    )
    .await;
    let (message, error) = outcome(&events);
    assert_eq!(error, Some(ProviderErrorKind::Http));
    assert!(message.error_message.unwrap().contains("script is exhausted"));
}

#[tokio::test]
async fn cancelling_mid_stream_ends_with_an_aborted_message() {
    for api in APIS {
        let reply =
            Reply { delay_ms: Some(50), delta_size: Some(1), ..Reply::text("slow slow slow slow") };
        let fake = FakeProvider::start(vec![reply]).await.unwrap();
        let provider = provider(&fake);
        let mut request = request(api, hello());
        let cancel = CancellationToken::new();
        request.options.cancel = cancel.clone();
        let mut stream = provider.stream(request);
        let mut events = Vec::new();
        while let Some(event) = stream.next().await {
            if matches!(event, AssistantMessageEvent::Delta(_)) && !cancel.is_cancelled() {
                cancel.cancel();
            }
            events.push(event);
        }
        let (message, error) = outcome(&events);
        assert_eq!(error, Some(ProviderErrorKind::Aborted), "{api}");
        assert_eq!(message.stop_reason, StopReason::Aborted);
        assert!(matches!(&message.content[0], ContentBlock::Text { text } if !text.is_empty()));
        assert!(message.text().len() < "slow slow slow slow".len());
    }
}

#[tokio::test]
async fn cancelling_while_waiting_to_retry_ends_at_once() {
    let first = Reply { retry_after: Some(50), ..Reply::fault(Fault::RateLimit) };
    let fake = FakeProvider::start(vec![first, Reply::text("never")]).await.unwrap();
    let provider = provider(&fake);
    let mut request = request(rein_protocol::model::Api::OpenAiResponses, hello());
    let cancel = CancellationToken::new();
    request.options.cancel = cancel.clone();
    let mut stream = provider.stream(request);
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        if matches!(event, AssistantMessageEvent::Retry { .. }) {
            cancel.cancel();
        }
        events.push(event);
    }
    let (message, error) = outcome(&events);
    assert_eq!(error, Some(ProviderErrorKind::Aborted));
    assert_eq!(message.stop_reason, StopReason::Aborted);
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test]
async fn the_key_never_appears_in_events() {
    let fake = FakeProvider::start(vec![Reply::fault(Fault::ContextOverflow)]).await.unwrap();
    let provider = provider(&fake);
    let events = collect(&provider, request(rein_protocol::model::Api::OpenAiChat, hello())).await;
    assert!(!format!("{events:?} {provider:?}").contains(KEY));
}
