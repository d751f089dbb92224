//! The system prompt a session sends: instruction files in order, their changes picked up
//! between turns, the skills index, and trust deciding whether project files are used.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;

use common::{Fixture, prompt};
use rein_protocol::method::ApprovalPolicy;
use rein_testkit::fake_provider::Reply;
use serde_json::json;

/// A repository with instructions at its root and in `pkg`, a project skill, and a global
/// AGENTS.md. Returns the `pkg` directory.
fn layout(fx: &Fixture) -> std::path::PathBuf {
    std::fs::create_dir_all(fx.cwd().join(".git")).unwrap();
    fx.write("AGENTS.md", "root-rules: run cargo fmt\n");
    fx.write("pkg/AGENTS.md", "pkg-rules-one\n");
    fx.write(
        ".rein/skills/lint-fix/SKILL.md",
        "---\nname: lint-fix\ndescription: Fixes clippy warnings one by one.\n---\nSteps...\n",
    );
    std::fs::write(fx.env.global_dir.join("AGENTS.md"), "global-rules: be brief\n").unwrap();
    fx.cwd().join("pkg")
}

fn position(haystack: &str, needle: &str) -> usize {
    haystack.find(needle).unwrap_or_else(|| panic!("{needle:?} missing from:\n{haystack}"))
}

#[tokio::test]
async fn trusted_instructions_nest_in_order_and_changes_reach_the_next_request() {
    let fx = Fixture::new(vec![
        Reply::tool_call(
            "write",
            json!({"path": "AGENTS.md", "content": "pkg-rules-two: a longer text than before\n"}),
        ),
        Reply::text("done"),
    ])
    .await;
    let pkg = layout(&fx);
    fx.env.trust.trust(&fx.cwd()).unwrap();
    let (session, mut events) = fx.create_in(&pkg, ApprovalPolicy::Yolo).await;
    let state = session.state(0);
    assert!(state.trusted);
    assert!(state.excluded_files.is_empty(), "{:?}", state.excluded_files);

    session.prompt(prompt(&session, "tidy up")).await.unwrap();
    events.settled().await;

    let first = fx.system_prompt(0);
    let global = position(&first, "global-rules: be brief");
    let root = position(&first, "root-rules: run cargo fmt");
    let inner = position(&first, "pkg-rules-one");
    assert!(global < root && root < inner, "{first}");
    position(&first, "lint-fix: Fixes clippy warnings one by one.");
    position(&first, &pkg.display().to_string());

    // The write changed pkg/AGENTS.md between the two turns of the run.
    let second = fx.system_prompt(1);
    position(&second, "pkg-rules-two: a longer text than before");
    assert!(!second.contains("pkg-rules-one"), "{second}");
    position(&second, "root-rules: run cargo fmt");
}

#[tokio::test]
async fn untrusted_project_files_are_left_out_and_listed_until_trusted() {
    let fx = Fixture::new(vec![Reply::text("one"), Reply::text("two")]).await;
    let pkg = layout(&fx);
    let (session, mut events) = fx.create_in(&pkg, ApprovalPolicy::Yolo).await;
    let state = session.state(0);
    assert!(!state.trusted);
    let mut excluded: Vec<String> = state
        .excluded_files
        .iter()
        .map(|file| {
            assert_eq!(file.reason, "project not trusted");
            file.path.strip_prefix(&fx.cwd().display().to_string()).unwrap().to_string()
        })
        .collect();
    excluded.sort();
    assert_eq!(excluded, ["/.rein/skills/lint-fix/SKILL.md", "/AGENTS.md", "/pkg/AGENTS.md"]);

    session.prompt(prompt(&session, "hi")).await.unwrap();
    events.settled().await;
    let untrusted = fx.system_prompt(0);
    position(&untrusted, "global-rules: be brief");
    for project_text in ["root-rules", "pkg-rules-one", "lint-fix"] {
        assert!(!untrusted.contains(project_text), "{project_text} leaked:\n{untrusted}");
    }

    fx.env.trust.trust(&fx.cwd()).unwrap();
    session.refresh_trust();
    let state = session.state(0);
    assert!(state.trusted);
    assert!(state.excluded_files.is_empty());
    session.prompt(prompt(&session, "again")).await.unwrap();
    events.settled().await;
    let trusted = fx.system_prompt(1);
    position(&trusted, "root-rules: run cargo fmt");
    position(&trusted, "pkg-rules-one");
    position(&trusted, "lint-fix: Fixes clippy warnings one by one.");
}
