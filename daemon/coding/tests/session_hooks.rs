//! Command hooks in a running session, with real bash and Python scripts: every exit code and
//! JSON decision of a `PreToolUse` hook, `on_error = "block"`, `PostToolUse` feedback,
//! `UserPromptSubmit` refusals and context, `PermissionRequest` answers, and every event
//! firing with its input fields.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use common::{Fixture, prompt, text_of};
use rein_coding::command_hooks::HooksConfig;
use rein_protocol::ErrorKind;
use rein_protocol::event::{ApprovalDecision, EndReason, HookDecision, SessionEvent};
use rein_protocol::message::Message;
use rein_protocol::method::ApprovalPolicy;
use rein_testkit::fake_provider::Reply;
use serde_json::{Value, json};

/// Decides from the bash command it guards (`echo CASE`), in Python.
const PYTHON_HOOK: &str = r#"#!/usr/bin/env python3
import json, sys
event = json.load(sys.stdin)
case = event.get("tool_input", {}).get("command", "").replace("echo ", "")
def out(value):
    print(json.dumps(value))
specific = lambda **kw: out({"hookSpecificOutput": dict(hookEventName="PreToolUse", **kw)})
if case == "exit2":
    print("no exit2 here", file=sys.stderr); sys.exit(2)
elif case == "exit1":
    print("the hook broke", file=sys.stderr); sys.exit(1)
elif case == "deny":
    specific(permissionDecision="deny", permissionDecisionReason="denied by policy")
elif case == "allow":
    specific(permissionDecision="allow")
elif case == "ask":
    specific(permissionDecision="ask", permissionDecisionReason="looks odd")
elif case == "rewrite":
    specific(permissionDecision="allow", updatedInput={"command": "echo rewritten"})
elif case == "stop":
    out({"continue": False, "stopReason": "halt now"})
elif case == "legacy":
    out({"decision": "block", "reason": "old style block"})
"#;

/// The same decisions in bash.
const BASH_HOOK: &str = r#"#!/usr/bin/env bash
input="$(cat)"
case "$input" in
  *'"echo exit2"'*) echo "no exit2 here" >&2; exit 2 ;;
  *'"echo exit1"'*) echo "the hook broke" >&2; exit 1 ;;
  *'"echo deny"'*) echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"denied by policy"}}' ;;
  *'"echo allow"'*) echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}' ;;
  *'"echo ask"'*) echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"looks odd"}}' ;;
  *'"echo rewrite"'*) echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"command":"echo rewritten"}}}' ;;
  *'"echo stop"'*) echo '{"continue":false,"stopReason":"halt now"}' ;;
  *'"echo legacy"'*) echo '{"decision":"block","reason":"old style block"}' ;;
esac
exit 0
"#;

fn python3() -> bool {
    std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn script(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A bash hook script `dir/name` that reads its input and answers by matching it: `arms` are
/// the arms of a `case "$input" in ... esac`.
fn case_script(dir: &Path, name: &str, arms: &str) -> PathBuf {
    let path = dir.join(name);
    script(
        &path,
        &format!("#!/usr/bin/env bash\ninput=\"$(cat)\"\ncase \"$input\" in\n{arms}esac\n"),
    );
    path
}

/// The TOML of one command hook on `event` running `command`, with a matcher when given and
/// `settings` (lines such as `timeout = 1\n`) added to the hook.
fn hook_toml(event: &str, matcher: Option<&str>, command: &Path, settings: &str) -> String {
    let matcher = matcher.map(|m| format!("matcher = {m:?}\n")).unwrap_or_default();
    let command = command.display().to_string();
    format!(
        "[[{event}]]\n{matcher}[[{event}.hooks]]\ntype = \"command\"\ncommand = {command:?}\n{settings}"
    )
}

fn hooks(toml_text: &str) -> HooksConfig {
    toml::from_str(toml_text).unwrap()
}

/// What one guarded call ended as.
#[derive(Debug)]
struct Outcome {
    result: String,
    is_error: bool,
    decisions: Vec<HookDecision>,
    end: Option<EndReason>,
    approval_requested: bool,
}

/// Runs one bash call `echo CASE` under `policy` with the hook at `hook` guarding it.
async fn guarded(hook: &Path, case: &str, policy: ApprovalPolicy, on_error: &str) -> Outcome {
    let mut fx = Fixture::new(vec![
        Reply::tool_call("bash", json!({"command": format!("echo {case}")})),
        Reply::text("done"),
    ])
    .await;
    let settings = format!("timeout = 20\non_error = {on_error:?}\n");
    fx.env.defaults.hooks = hooks(&hook_toml("PreToolUse", Some("Bash"), hook, &settings));
    let (session, mut events) = fx.create(policy).await;
    session.prompt(prompt(&session, "go")).await.unwrap();
    events.settled().await;
    let result = session
        .messages()
        .into_iter()
        .find_map(|m| match m {
            Message::ToolResult(result) => Some(result),
            _ => None,
        })
        .unwrap();
    let decisions = events.picked(|e| match e {
        SessionEvent::HookFinished { decision, .. } => Some(*decision),
        _ => None,
    });
    let end = events.seen.iter().find_map(|e| match e {
        SessionEvent::AgentEnd { reason, .. } => Some(*reason),
        _ => None,
    });
    let approval_requested =
        !events.matching(|e| matches!(e, SessionEvent::ApprovalRequested { .. })).is_empty();
    Outcome {
        result: text_of(&Message::ToolResult(result.clone())),
        is_error: result.is_error,
        decisions,
        end,
        approval_requested,
    }
}

/// Every case against one script.
async fn every_decision(hook: &Path) {
    use ApprovalPolicy::{AutoEdit, Yolo};
    // exit 0 without output: the policy decides (yolo runs it).
    let pass = guarded(hook, "pass", Yolo, "warn").await;
    assert_eq!((pass.is_error, pass.result.as_str()), (false, "pass"), "{pass:?}");
    assert_eq!(pass.decisions, vec![HookDecision::None]);
    // exit 2 blocks with stderr for the model.
    let exit2 = guarded(hook, "exit2", Yolo, "warn").await;
    assert!(exit2.is_error && exit2.result.contains("no exit2 here"), "{exit2:?}");
    assert_eq!(exit2.decisions, vec![HookDecision::Block]);
    // Another exit code is a non-blocking error ...
    let exit1 = guarded(hook, "exit1", Yolo, "warn").await;
    assert_eq!((exit1.is_error, exit1.result.as_str()), (false, "exit1"), "{exit1:?}");
    assert_eq!(exit1.decisions, vec![HookDecision::Error]);
    // ... unless the hook says on_error = "block".
    let strict = guarded(hook, "exit1", Yolo, "block").await;
    assert!(strict.is_error && strict.result.contains("exited with code 1"), "{strict:?}");
    assert!(strict.result.contains("the hook broke"), "{strict:?}");
    // permissionDecision deny blocks with its reason.
    let deny = guarded(hook, "deny", Yolo, "warn").await;
    assert!(deny.is_error && deny.result.contains("denied by policy"), "{deny:?}");
    // allow skips the approval auto-edit would ask for (no approver is attached).
    let allow = guarded(hook, "allow", AutoEdit, "warn").await;
    assert_eq!((allow.is_error, allow.result.as_str()), (false, "allow"), "{allow:?}");
    assert!(!allow.approval_requested);
    assert_eq!(allow.decisions, vec![HookDecision::Allow]);
    // Without the hook's allow, auto-edit asks, and nobody can answer.
    let asks = guarded(hook, "pass", AutoEdit, "warn").await;
    assert!(asks.is_error && asks.approval_requested, "{asks:?}");
    // ask makes even yolo ask.
    let ask = guarded(hook, "ask", Yolo, "warn").await;
    assert!(ask.is_error && ask.approval_requested, "{ask:?}");
    // updatedInput rewrites the call.
    let rewrite = guarded(hook, "rewrite", Yolo, "warn").await;
    assert_eq!((rewrite.is_error, rewrite.result.as_str()), (false, "rewritten"), "{rewrite:?}");
    // continue: false ends the run.
    let stop = guarded(hook, "stop", Yolo, "warn").await;
    assert_eq!(stop.end, Some(EndReason::Cancelled), "{stop:?}");
    assert_eq!(stop.decisions, vec![HookDecision::Stop]);
    // The older top-level decision still blocks.
    let legacy = guarded(hook, "legacy", Yolo, "warn").await;
    assert!(legacy.is_error && legacy.result.contains("old style block"), "{legacy:?}");
}

#[tokio::test]
async fn a_bash_pre_tool_use_hook_decides_every_way() {
    let dir = tempfile::tempdir().unwrap();
    let hook = dir.path().join("guard.sh");
    script(&hook, BASH_HOOK);
    every_decision(&hook).await;
}

#[tokio::test]
async fn a_python_pre_tool_use_hook_decides_every_way() {
    if !python3() {
        eprintln!("skipped: python3 is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let hook = dir.path().join("guard.py");
    script(&hook, PYTHON_HOOK);
    every_decision(&hook).await;
}

#[tokio::test]
async fn a_hook_past_its_timeout_is_an_error_or_a_block() {
    let dir = tempfile::tempdir().unwrap();
    let hook = dir.path().join("slow.sh");
    script(&hook, "#!/usr/bin/env bash\nsleep 30\n");
    let mut fx = Fixture::new(vec![
        Reply::tool_call("bash", json!({"command": "echo hi"})),
        Reply::text("done"),
    ])
    .await;
    let settings = "timeout = 1\non_error = \"block\"\n";
    fx.env.defaults.hooks = hooks(&hook_toml("PreToolUse", None, &hook, settings));
    let (session, mut events) = fx.create(ApprovalPolicy::Yolo).await;
    session.prompt(prompt(&session, "go")).await.unwrap();
    events.settled().await;
    let finished = events.matching(|e| matches!(e, SessionEvent::HookFinished { .. }));
    assert!(
        matches!(&finished[0], SessionEvent::HookFinished { decision: HookDecision::Block, exit_code: None, message: Some(m), .. } if m.contains("timed out")),
        "{finished:?}"
    );
}

#[tokio::test]
async fn post_tool_use_prompt_submit_and_permission_hooks() {
    let dir = tempfile::tempdir().unwrap();
    let post = dir.path().join("post.sh");
    script(
        &post,
        r#"#!/usr/bin/env bash
echo '{"decision":"block","reason":"lint failed on line 3","hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"ran lint"}}'
"#,
    );
    let submit = case_script(
        dir.path(),
        "submit.sh",
        r#"  *secret*) echo '{"decision":"block","reason":"prompts must not carry secrets"}' ;;
  *) echo "the build is green" ;;
"#,
    );
    let permission = case_script(
        dir.path(),
        "permission.sh",
        r#"  *'"tool_name":"write"'*) echo '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"no writes today"}}}' ;;
  *) echo '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}' ;;
"#,
    );
    let mut fx = Fixture::new(vec![
        Reply::tool_call("bash", json!({"command": "echo checked"})),
        Reply::tool_call("write", json!({"path": "/tmp/rein-hook-test-never.txt", "content": "x"})),
        Reply::text("done"),
    ])
    .await;
    fx.env.defaults.hooks = hooks(&format!(
        "{}{}{}",
        hook_toml("PostToolUse", Some("bash"), &post, ""),
        hook_toml("UserPromptSubmit", Some(""), &submit, ""),
        hook_toml("PermissionRequest", Some("*"), &permission, "")
    ));
    let (session, mut events) = fx.create(ApprovalPolicy::AutoEdit).await;
    // A refused prompt starts nothing.
    let refused = session.prompt(prompt(&session, "here is my secret")).await.unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::ApprovalDenied);
    assert!(refused.to_string().contains("prompts must not carry secrets"), "{refused}");
    assert!(fx.bodies().is_empty());
    session.prompt(prompt(&session, "check it")).await.unwrap();
    events.settled().await;
    let body = fx.bodies()[0].to_string();
    assert!(body.contains("the build is green"), "{body}");
    let results: Vec<(bool, String)> = session
        .messages()
        .iter()
        .filter(|m| matches!(m, Message::ToolResult(_)))
        .map(|m| (matches!(m, Message::ToolResult(r) if r.is_error), text_of(m)))
        .collect();
    // bash asked under auto-edit; the permission hook allowed it; the post hook commented.
    assert!(!results[0].0, "{results:?}");
    assert!(results[0].1.contains("checked"), "{results:?}");
    assert!(results[0].1.contains("Hook feedback: lint failed on line 3"), "{results:?}");
    assert!(results[0].1.contains("Hook context: ran lint"), "{results:?}");
    // write outside the project asked; the permission hook denied it.
    assert!(results[1].0 && results[1].1.contains("no writes today"), "{results:?}");
    assert!(events.matching(|e| matches!(e, SessionEvent::ApprovalRequested { .. })).is_empty());
    assert!(!Path::new("/tmp/rein-hook-test-never.txt").exists());
}

/// Reads the inputs a logging hook saved, one file each (hooks run at the same time, so they
/// do not share a file).
fn logged(dir: &Path) -> Vec<Value> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            serde_json::from_slice(&std::fs::read(entry.unwrap().path()).unwrap()).unwrap()
        })
        .collect()
}

#[tokio::test]
async fn every_event_fires_with_its_input_fields_and_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events");
    std::fs::create_dir(&log).unwrap();
    let logger = dir.path().join("log.sh");
    script(
        &logger,
        &format!("#!/usr/bin/env bash\ncat > \"$(mktemp {}/event-XXXXXXXX)\"\n", log.display()),
    );
    let mut fx = Fixture::new(vec![
        Reply::tool_call("bash", json!({"command": "echo fine"})),
        Reply::tool_call("bash", json!({"command": "exit 3"})),
        Reply::text("all done"),
        Reply::text("the summary"),
    ])
    .await;
    let mut config = String::new();
    for event in [
        "SessionStart",
        "SessionEnd",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "PermissionRequest",
        "Stop",
        "PreCompact",
        "PostCompact",
        "Notification",
    ] {
        config.push_str(&hook_toml(event, None, &logger, ""));
    }
    fx.env.defaults.hooks = hooks(&config);
    fx.gate.0.store(true, std::sync::atomic::Ordering::SeqCst);
    let (session, mut events) = fx.create(ApprovalPolicy::AutoEdit).await;
    session.prompt(prompt(&session, "do things")).await.unwrap();
    // Both bash calls ask under auto-edit; answer them.
    for _ in 0..2 {
        let request = events.until(|e| matches!(e, SessionEvent::ApprovalRequested { .. })).await;
        let SessionEvent::ApprovalRequested { request_id, .. } = request else { unreachable!() };
        session.respond_approval(&request_id, ApprovalDecision::AllowOnce, None, "test").unwrap();
    }
    events.settled().await;
    session.compact(None).await.unwrap();
    let id = session.id().to_string();
    session.close().await;

    let entries = logged(&log);
    let names: Vec<&str> = entries.iter().filter_map(|e| e["hook_event_name"].as_str()).collect();
    for name in [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PermissionRequest",
        "Notification",
        "PostToolUse",
        "PostToolUseFailure",
        "Stop",
        "PreCompact",
        "PostCompact",
        "SessionEnd",
    ] {
        assert!(names.contains(&name), "{name} did not fire: {names:?}");
    }
    let find = |name: &str| entries.iter().find(|e| e["hook_event_name"] == name).unwrap();
    for entry in &entries {
        assert_eq!(entry["session_id"], id.as_str());
        assert!(entry["transcript_path"].as_str().unwrap().ends_with(".jsonl"), "{entry}");
        assert_eq!(entry["permission_mode"], "acceptEdits");
    }
    assert_eq!(find("SessionStart")["source"], "startup");
    assert_eq!(find("UserPromptSubmit")["prompt"], "do things");
    assert_eq!(find("PreToolUse")["tool_name"], "bash");
    assert!(
        entries
            .iter()
            .any(|e| e["hook_event_name"] == "PreToolUse"
                && e["tool_input"]["command"] == "echo fine"),
        "{entries:?}"
    );
    assert!(find("PreToolUse")["tool_use_id"].is_string());
    assert!(find("PostToolUse")["tool_response"]["content"].as_str().unwrap().contains("fine"));
    assert!(find("PostToolUseFailure")["error"].as_str().unwrap().contains('3'));
    assert_eq!(find("Stop")["stop_hook_active"], false);
    assert_eq!(find("PreCompact")["trigger"], "manual");
    // The recorded summary (it may carry the user's current request after the model's text).
    let summary = find("PostCompact")["compact_summary"].as_str().unwrap().to_string();
    assert!(summary.starts_with("the summary"), "{summary}");
    assert_eq!(find("Notification")["notification_type"], "permission_prompt");
    assert_eq!(find("SessionEnd")["reason"], "other");
    // Each run is recorded in the session file.
    let file = std::fs::read_to_string(fx.session_file(&id)).unwrap();
    let recorded = file.lines().filter(|line| line.contains("\"hook_run\"")).count();
    assert!(recorded >= 10, "{recorded} hook runs recorded");
}

#[tokio::test]
async fn user_prompt_submit_hooks_see_steers_and_follow_ups_too() {
    let dir = tempfile::tempdir().unwrap();
    let submit = case_script(
        dir.path(),
        "submit.sh",
        r#"  *secret*) echo "prompts must not carry secrets" >&2; exit 2 ;;
  *) echo "the build is green" ;;
"#,
    );
    let mut fx = Fixture::new(vec![Reply::text("first"), Reply::text("second")]).await;
    fx.env.defaults.hooks = hooks(&hook_toml("UserPromptSubmit", None, &submit, ""));
    let (session, mut events) = fx.create(ApprovalPolicy::Yolo).await;

    let refused = session.follow_up("here is my secret".into(), Vec::new()).await.unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::ApprovalDenied, "{refused}");
    assert!(refused.to_string().contains("must not carry secrets"), "{refused}");
    let refused = session.steer("another secret".into(), Vec::new()).await.unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::ApprovalDenied, "{refused}");

    // A follow-up that passes starts a run (the session is idle) carrying the hook's context.
    let queued = session.follow_up("carry on".into(), Vec::new()).await.unwrap();
    assert!(queued.started_run);
    events.settled().await;
    let first_user = session
        .messages()
        .iter()
        .find(|message| matches!(message, Message::User(_)))
        .map(text_of)
        .unwrap();
    assert!(first_user.contains("carry on"), "{first_user}");
    assert!(first_user.contains("the build is green"), "{first_user}");
    assert!(!session.messages().iter().map(text_of).any(|text| text.contains("secret")));
}
