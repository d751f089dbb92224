//! What one hook's exit code and output mean, following Claude Code's hook protocol:
//!
//! - exit 0: success. Standard output may be a JSON object (`continue`, `stopReason`,
//!   `decision`, `reason`, `systemMessage`, `hookSpecificOutput` with `permissionDecision`,
//!   `permissionDecisionReason`, `updatedInput`, `additionalContext`, or for
//!   `PermissionRequest` a `decision` object with `behavior`, `message`, `updatedInput`).
//!   Plain text output of `UserPromptSubmit` and `SessionStart` hooks is context for the
//!   model.
//! - exit 2: blocks (for events that can block), with standard error as the reason.
//! - anything else (another code, a signal, a timeout, a failure to start): a non-blocking
//!   error shown to the user, unless the hook says `on_error = "block"`.

use rein_protocol::event::HookDecision;
use serde_json::Value;

use super::config::{HookEvent, OnError};
use super::process::{HookExit, HookProcessResult};

/// Characters of a reason or message kept in events.
const MAX_MESSAGE_CHARS: usize = 4_000;

/// What one hook decided.
#[derive(Debug, Clone, PartialEq)]
pub struct HookVerdict {
    /// The decision.
    pub decision: HookDecision,
    /// Why it blocked or denied (the model sees it), or what it reported to the user.
    pub reason: Option<String>,
    /// New arguments for the tool call.
    pub updated_input: Option<Value>,
    /// Text for the model's context.
    pub additional_context: Option<String>,
    /// Why the run should stop (`continue: false`), shown to the user.
    pub stop_reason: Option<String>,
    /// A message for the user (`systemMessage`).
    pub system_message: Option<String>,
    /// The exit code, when it exited.
    pub exit_code: Option<i32>,
}

impl HookVerdict {
    fn new(decision: HookDecision, exit_code: Option<i32>) -> Self {
        Self {
            decision,
            reason: None,
            updated_input: None,
            additional_context: None,
            stop_reason: None,
            system_message: None,
            exit_code,
        }
    }

    /// The text `hook_finished` carries: the reason, else the stop reason, else the message.
    pub fn message(&self) -> Option<String> {
        self.reason
            .clone()
            .or_else(|| self.stop_reason.clone())
            .or_else(|| self.system_message.clone())
            .map(|text| cut(&text))
    }
}

/// Interprets a finished hook of `event` run as `command`.
pub(super) fn interpret(
    event: HookEvent,
    command: &str,
    on_error: OnError,
    result: &HookProcessResult,
) -> HookVerdict {
    let failure = match &result.exit {
        HookExit::Code(0) => return success(event, result.stdout.trim()),
        HookExit::Code(2) => {
            let stderr = result.stderr.trim();
            let reason = if stderr.is_empty() {
                format!("blocked by the hook `{command}`")
            } else {
                stderr.to_string()
            };
            let decision =
                if event.can_block() { HookDecision::Block } else { HookDecision::Error };
            let mut verdict = HookVerdict::new(decision, Some(2));
            verdict.reason = Some(reason);
            return verdict;
        }
        HookExit::Code(code) => format!("exited with code {code}"),
        HookExit::Signal(signal) => format!("was ended by signal {signal}"),
        HookExit::TimedOut => "timed out".to_string(),
        HookExit::Cancelled => "was cancelled".to_string(),
        HookExit::SpawnFailed(error) => format!("could not start: {error}"),
    };
    let exit_code = match result.exit {
        HookExit::Code(code) => Some(code),
        _ => None,
    };
    let stderr = result.stderr.trim();
    let mut reason = format!("the hook `{command}` {failure}");
    if !stderr.is_empty() {
        reason.push_str(": ");
        reason.push_str(stderr);
    }
    let blocks = on_error == OnError::Block && event.can_block();
    let mut verdict =
        HookVerdict::new(if blocks { HookDecision::Block } else { HookDecision::Error }, exit_code);
    verdict.reason = Some(reason);
    verdict
}

/// Exit 0: the JSON output's decisions, or plain text.
fn success(event: HookEvent, stdout: &str) -> HookVerdict {
    let mut verdict = HookVerdict::new(HookDecision::None, Some(0));
    let json = stdout
        .starts_with('{')
        .then(|| serde_json::from_str::<Value>(stdout).ok())
        .flatten()
        .filter(Value::is_object);
    let Some(output) = json else {
        if !stdout.is_empty()
            && matches!(event, HookEvent::UserPromptSubmit | HookEvent::SessionStart)
        {
            verdict.additional_context = Some(stdout.to_string());
        }
        return verdict;
    };
    let text = |value: Option<&Value>| value.and_then(Value::as_str).map(str::to_string);
    let specific = output.get("hookSpecificOutput");
    verdict.system_message = text(output.get("systemMessage"));
    verdict.additional_context = text(specific.and_then(|s| s.get("additionalContext")));
    verdict.updated_input = specific.and_then(|s| s.get("updatedInput")).cloned();
    let reason = text(output.get("reason"));
    match output.get("decision") {
        Some(Value::String(decision)) if decision == "block" && event.can_block() => {
            verdict.decision = HookDecision::Block;
            verdict.reason = reason;
        }
        Some(Value::String(decision)) if decision == "approve" => {
            verdict.decision = HookDecision::Allow;
            verdict.reason = reason;
        }
        _ => {}
    }
    // PreToolUse: permissionDecision (it replaces the older top-level decision).
    if let Some(permission) = specific.and_then(|s| s.get("permissionDecision")) {
        let decision = match permission.as_str() {
            Some("allow") => Some(HookDecision::Allow),
            Some("deny") => Some(HookDecision::Block),
            Some("ask") => Some(HookDecision::Ask),
            _ => None,
        };
        if let Some(decision) = decision {
            verdict.decision = decision;
            verdict.reason =
                text(specific.and_then(|s| s.get("permissionDecisionReason"))).or(verdict.reason);
        }
    }
    // PermissionRequest: decision.behavior.
    if let Some(decision) = specific.and_then(|s| s.get("decision")).filter(|d| d.is_object()) {
        match decision.get("behavior").and_then(Value::as_str) {
            Some("allow") => verdict.decision = HookDecision::Allow,
            Some("deny") => {
                verdict.decision = HookDecision::Block;
                verdict.reason = text(decision.get("message")).or(verdict.reason);
            }
            _ => {}
        }
        if let Some(input) = decision.get("updatedInput") {
            verdict.updated_input = Some(input.clone());
        }
    }
    if output.get("continue") == Some(&Value::Bool(false)) {
        verdict.decision = HookDecision::Stop;
        verdict.stop_reason =
            Some(text(output.get("stopReason")).unwrap_or_else(|| "stopped by a hook".to_string()));
    }
    if verdict.decision == HookDecision::Block && verdict.reason.is_none() {
        verdict.reason = Some("blocked by a hook".to_string());
    }
    verdict
}

/// At most [`MAX_MESSAGE_CHARS`] characters.
fn cut(text: &str) -> String {
    match text.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((index, _)) => format!("{}…", &text[..index]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    fn result(exit: HookExit, stdout: &str, stderr: &str) -> HookProcessResult {
        HookProcessResult {
            exit,
            stdout: stdout.into(),
            stderr: stderr.into(),
            duration: Duration::ZERO,
        }
    }

    fn ok(stdout: Value) -> HookProcessResult {
        result(HookExit::Code(0), &stdout.to_string(), "")
    }

    #[test]
    fn exit_codes() {
        let pre = HookEvent::PreToolUse;
        let blocked = interpret(pre, "g", OnError::Warn, &result(HookExit::Code(2), "", "no\n"));
        assert_eq!(
            (blocked.decision, blocked.reason.as_deref()),
            (HookDecision::Block, Some("no"))
        );
        let failed = interpret(pre, "g", OnError::Warn, &result(HookExit::Code(1), "", "bad"));
        assert_eq!(failed.decision, HookDecision::Error);
        assert_eq!(failed.reason.as_deref(), Some("the hook `g` exited with code 1: bad"));
        let strict = interpret(pre, "g", OnError::Block, &result(HookExit::TimedOut, "", ""));
        assert_eq!(strict.decision, HookDecision::Block);
        // Events that cannot block only report.
        let start = interpret(
            HookEvent::SessionStart,
            "g",
            OnError::Block,
            &result(HookExit::Code(2), "", "x"),
        );
        assert_eq!(start.decision, HookDecision::Error);
        let plain = interpret(
            HookEvent::UserPromptSubmit,
            "g",
            OnError::Warn,
            &result(HookExit::Code(0), "ctx\n", ""),
        );
        assert_eq!(
            (plain.decision, plain.additional_context.as_deref()),
            (HookDecision::None, Some("ctx"))
        );
        let quiet = interpret(pre, "g", OnError::Warn, &result(HookExit::Code(0), "ctx", ""));
        assert_eq!(quiet.additional_context, None);
    }

    #[test]
    fn json_decisions() {
        let pre = HookEvent::PreToolUse;
        let deny = interpret(
            pre,
            "g",
            OnError::Warn,
            &ok(json!({"hookSpecificOutput": {
            "hookEventName": "PreToolUse", "permissionDecision": "deny",
            "permissionDecisionReason": "not here"}})),
        );
        assert_eq!(
            (deny.decision, deny.reason.as_deref()),
            (HookDecision::Block, Some("not here"))
        );
        let allow = interpret(
            pre,
            "g",
            OnError::Warn,
            &ok(json!({"hookSpecificOutput": {
            "permissionDecision": "allow", "updatedInput": {"command": "ls"}}})),
        );
        assert_eq!(allow.decision, HookDecision::Allow);
        assert_eq!(allow.updated_input, Some(json!({"command": "ls"})));
        let ask = interpret(
            pre,
            "g",
            OnError::Warn,
            &ok(json!({"hookSpecificOutput": {"permissionDecision": "ask"}})),
        );
        assert_eq!(ask.decision, HookDecision::Ask);
        let stop = interpret(
            HookEvent::Stop,
            "g",
            OnError::Warn,
            &ok(json!({"decision": "block", "reason": "tests fail"})),
        );
        assert_eq!(
            (stop.decision, stop.reason.as_deref()),
            (HookDecision::Block, Some("tests fail"))
        );
        let halt = interpret(
            pre,
            "g",
            OnError::Warn,
            &ok(json!({"continue": false, "stopReason": "enough", "decision": "block"})),
        );
        assert_eq!(
            (halt.decision, halt.stop_reason.as_deref()),
            (HookDecision::Stop, Some("enough"))
        );
        let permission = interpret(
            HookEvent::PermissionRequest,
            "g",
            OnError::Warn,
            &ok(json!({"hookSpecificOutput": {
            "hookEventName": "PermissionRequest", "decision": {"behavior": "deny", "message": "never"}}})),
        );
        assert_eq!(
            (permission.decision, permission.reason.as_deref()),
            (HookDecision::Block, Some("never"))
        );
        let context = interpret(
            HookEvent::PostToolUse,
            "g",
            OnError::Warn,
            &ok(json!({
            "hookSpecificOutput": {"additionalContext": "lint is clean"}, "systemMessage": "hi"})),
        );
        assert_eq!(context.additional_context.as_deref(), Some("lint is clean"));
        assert_eq!(context.message().as_deref(), Some("hi"));
        // A blocking decision of an event that cannot block is ignored.
        let compact =
            interpret(HookEvent::PreCompact, "g", OnError::Warn, &ok(json!({"decision": "block"})));
        assert_eq!(compact.decision, HookDecision::None);
    }
}
