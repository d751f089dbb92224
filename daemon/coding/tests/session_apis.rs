//! One session that thinks and calls tools on each wire API in turn, switching models across
//! APIs and compacting at the end. The fake provider's validator holds every request to its
//! API's documented rules (a broken one is answered 400 and fails the test): the second
//! request of each tool loop, the first request after each switch, and the summary request.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;

use common::{Fixture, prompt};
use rein_ai::{ProvidersConfig, Registry};
use rein_protocol::event::{EndReason, SessionEvent};
use rein_protocol::method::ApprovalPolicy;
use rein_protocol::model::ThinkingLevel;
use rein_testkit::fake_provider::Reply;
use serde_json::json;
use std::sync::Arc;

fn thinking_tool_call() -> Reply {
    Reply {
        thinking: Some("Read the file first.".into()),
        thinking_signature: Some("c2lnbmF0dXJlLWJ5dGVz".into()),
        ..Reply::tool_call("read", json!({"path": "notes.txt"}))
    }
}

#[tokio::test]
async fn tool_loops_on_every_api_with_switches_and_compaction_send_only_valid_requests() {
    let mut script = Vec::new();
    for _ in 0..3 {
        script.push(thinking_tool_call());
        script.push(Reply { thinking: Some("Done.".into()), ..Reply::text("It says hello.") });
    }
    script.push(Reply::text("SUMMARY: the file says hello."));
    let mut fx = Fixture::new(script).await;
    fx.write("notes.txt", "hello\n");
    // The same fake serves three providers, one per wire API.
    let mut config = String::new();
    for (name, api) in
        [("chat", "openai-chat"), ("resp", "openai-responses"), ("anth", "anthropic")]
    {
        config.push_str(&format!(
            "[providers.{name}]\napi = \"{api}\"\nbase_url = \"{}\"\n\
             [providers.{name}.models.\"m\"]\nreasoning = true\nmax_output_tokens = 32000\n",
            fx.fake.base_url()
        ));
    }
    config.push_str("[retry]\nmax_retries = 0\n");
    let config = ProvidersConfig::from_toml(&config).unwrap();
    fx.env.registry = Arc::new(Registry::with_environment(config, Arc::new(|_| None)).unwrap());

    let (session, mut events) = fx.create(ApprovalPolicy::Yolo).await;
    for model in ["chat/m", "resp/m", "anth/m"] {
        session.set_model(model).await.unwrap();
        session.set_thinking(ThinkingLevel::Medium).await.unwrap();
        events.clear();
        session.prompt(prompt(&session, "what does notes.txt say?")).await.unwrap();
        events.settled().await;
        let end = events.matching(|e| matches!(e, SessionEvent::AgentEnd { .. }));
        assert!(
            matches!(&end[..], [SessionEvent::AgentEnd { reason: EndReason::Completed, .. }]),
            "{model}: {end:#?}\nviolations: {:#?}",
            fx.fake.violations()
        );
    }
    session.compact(None).await.unwrap();
    assert_eq!(fx.fake.violations(), Vec::<String>::new());
    let paths: Vec<String> = fx.fake.requests().iter().map(|r| r.path.clone()).collect();
    assert_eq!(paths.len(), 7, "{paths:?}");
    assert!(paths[0].ends_with("/chat/completions") && paths[2].ends_with("/responses"));
    assert!(paths[4].ends_with("/messages") && paths[6].ends_with("/messages"));
    // Thinking was on throughout, including the continued Anthropic tool loop.
    let bodies: Vec<_> = fx.fake.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(bodies[1]["reasoning_effort"], "medium");
    assert_eq!(bodies[3]["reasoning"]["effort"], "medium");
    assert_eq!(bodies[5]["thinking"]["type"], "enabled", "{}", bodies[5]);
}
