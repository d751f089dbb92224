//! End-to-end: automatic compaction scales with the model's context window. At 4k, 8k, 16k,
//! 32k and 200k windows a session runs several prompts without compacting while its context
//! is far from full, compacts once when the provider reports it nearly full, and the request
//! after the compaction still carries the user's newest prompt verbatim. Every request body
//! the scripted provider received is checked.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns: a failure stops the test

mod cli_support;

use cli_support::{CliEnv, assert_exit, request_mentions, session_id, stderr};
use rein_testkit::background::BackgroundFake;
use rein_testkit::daemon::DaemonFixture;
use rein_testkit::fake_provider::{RecordedRequest, Reply, ScriptUsage};

/// The words only the summarization request contains.
const SUMMARY_REQUEST: &str = "Summarize the conversation above";
/// What the model sees in place of summarized history.
const SUMMARY_PREFIX: &str = "[Context summary]";

/// A daemon whose model `fake/small` has `window` tokens of context (and the default output
/// limit of an unknown model, 16384, larger than the small windows themselves).
fn env_with_window(script: Vec<Reply>, window: u64) -> CliEnv {
    let fake = BackgroundFake::start(script);
    let mut daemon = DaemonFixture::new();
    let config = format!(
        "model = \"fake/small\"\napproval_policy = \"yolo\"\n\n[providers.fake]\napi = \
         \"openai-chat\"\nbase_url = \"{}\"\napi_key_env = \"\"\n\n[providers.fake.models.small]\n\
         context_window = {window}\n\n[retry]\nmax_retries = 0\n",
        fake.base_url()
    );
    std::fs::write(daemon.home().join("config.toml"), config).unwrap();
    daemon.spawn();
    let project = tempfile::Builder::new().prefix("rein-project-").tempdir().unwrap();
    CliEnv { fake, daemon, project }
}

fn answer(text: &str, context_tokens: u64) -> Reply {
    Reply {
        usage: Some(ScriptUsage { input: context_tokens, output: 10, ..ScriptUsage::default() }),
        ..Reply::text(text)
    }
}

fn is_summary_request(request: &RecordedRequest) -> bool {
    request_mentions(request, SUMMARY_REQUEST)
}

fn run_window(window: u64) {
    let script = vec![
        answer("answer one", window / 10),
        answer("answer two", window / 8),
        answer("answer three", window / 5),
        // The context is now nearly full: the next prompt compacts first.
        answer("answer four", window * 95 / 100),
        Reply::text("SUMMARY-OF-EARLIER-TURNS"),
        answer("answer five", window / 10),
        answer("answer six", window / 8),
    ];
    let env = env_with_window(script, window);
    let first = env.run(&["run", "question-1"]);
    assert_exit(&first, 0);
    let id = session_id(&stderr(&first));
    for turn in 2..=6 {
        let output = env.run(&["run", "--session", &id, &format!("question-{turn}")]);
        assert_exit(&output, 0);
    }
    let requests = env.requests();
    assert_eq!(requests.len(), 7, "window {window}: one request per prompt plus one summary");
    let summaries: Vec<usize> =
        (0..requests.len()).filter(|&i| is_summary_request(&requests[i])).collect();
    assert_eq!(summaries, [4], "window {window}: exactly one compaction, after the full turn");
    for (i, request) in requests.iter().enumerate().filter(|(i, _)| *i != 4) {
        // Prompt n is answered by request n-1 before the compaction, n after it.
        let turn = if i < 4 { i + 1 } else { i };
        let body = request.body.to_string();
        assert!(
            body.contains(&format!("question-{turn}")),
            "window {window}: request {i} lacks the user's prompt: {body}"
        );
        assert_eq!(
            body.contains(SUMMARY_PREFIX),
            i > 4,
            "window {window}: request {i} and the summary: {body}"
        );
    }
    // After the compaction the model sees the summary instead of the oldest prompt.
    let after = requests[5].body.to_string();
    assert!(after.contains("SUMMARY-OF-EARLIER-TURNS"), "window {window}: {after}");
    assert!(!after.contains("question-1\""), "window {window}: the oldest prompt was kept");
}

#[test]
fn a_4k_window_compacts_only_when_full() {
    run_window(4_096);
}

#[test]
fn an_8k_window_compacts_only_when_full() {
    run_window(8_192);
}

#[test]
fn a_16k_window_compacts_only_when_full() {
    run_window(16_384);
}

#[test]
fn a_32k_window_compacts_only_when_full() {
    run_window(32_768);
}

#[test]
fn a_200k_window_compacts_only_when_full() {
    run_window(200_000);
}

/// A first prompt larger than the whole kept tail is never summarized away: there is nothing
/// before it, so nothing is compacted and the model gets the prompt itself.
#[test]
fn a_single_large_prompt_is_sent_verbatim() {
    let env = env_with_window(vec![Reply::text("ok")], 4_096);
    let prompt = format!("BIG-PROMPT {}", "word ".repeat(3_000));
    let output = env.run(&["run", &prompt]);
    assert_exit(&output, 0);
    let requests = env.requests();
    assert_eq!(requests.len(), 1);
    assert!(!is_summary_request(&requests[0]));
    assert!(request_mentions(&requests[0], "BIG-PROMPT"));
}

/// One request whose tool work fills an 8k window: the run compacts mid-way and goes on, and
/// the request after the compaction still carries the user's prompt word for word.
#[test]
fn a_long_run_on_one_prompt_compacts_mid_run_and_keeps_the_prompt() {
    let window = 8_192;
    let step = |n: u64, tokens: u64| Reply {
        usage: Some(ScriptUsage { input: tokens, output: 10, ..ScriptUsage::default() }),
        ..Reply::tool_call("bash", serde_json::json!({"command": format!("echo step-{n}")}))
    };
    let script = vec![
        step(1, 1_000),
        step(2, 2_000),
        step(3, 3_000),
        step(4, window * 9 / 10),
        Reply::text("SUMMARY-OF-THE-FIRST-STEPS"),
        answer("all done", 2_000),
    ];
    let env = env_with_window(script, window);
    let output = env.run(&["run", "do-the-long-task with care"]);
    assert_exit(&output, 0);
    let requests = env.requests();
    assert_eq!(requests.len(), 6);
    let summaries: Vec<usize> =
        (0..requests.len()).filter(|&i| is_summary_request(&requests[i])).collect();
    assert_eq!(summaries, [4]);
    let last = requests[5].body.to_string();
    assert!(last.contains("SUMMARY-OF-THE-FIRST-STEPS"), "{last}");
    assert!(last.contains("do-the-long-task with care"), "the prompt was lost: {last}");
    assert!(last.contains("step-4"), "the latest step was not kept: {last}");
}
