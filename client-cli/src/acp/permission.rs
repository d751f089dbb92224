//! The choices offered with `session/request_permission`, and the approval decision each one
//! sends back to the daemon.

use rein_protocol::event::ApprovalDecision;
use serde_json::{Value, json};

/// The options offered for every approval, one per decision rein knows.
pub fn options() -> Value {
    json!([
        {"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"},
        {"optionId": "allow_session", "name": "Allow this tool for the session",
            "kind": "allow_always"},
        {"optionId": "deny", "name": "Deny", "kind": "reject_once"},
    ])
}

/// The decision an editor's answer stands for. A cancelled request, an unknown option or a
/// malformed answer denies: nothing runs without an explicit yes.
pub fn decision(answer: &Value) -> ApprovalDecision {
    let outcome = &answer["outcome"];
    if outcome["outcome"] != "selected" {
        return ApprovalDecision::Deny;
    }
    match outcome["optionId"].as_str() {
        Some("allow_once") => ApprovalDecision::AllowOnce,
        Some("allow_session") => ApprovalDecision::AllowSession,
        _ => ApprovalDecision::Deny,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_offered_option_maps_to_its_decision() {
        let expected =
            [ApprovalDecision::AllowOnce, ApprovalDecision::AllowSession, ApprovalDecision::Deny];
        for (option, want) in options().as_array().unwrap().iter().zip(expected) {
            let answer =
                json!({"outcome": {"outcome": "selected", "optionId": option["optionId"]}});
            assert_eq!(decision(&answer), want);
        }
    }

    #[test]
    fn cancelled_unknown_and_malformed_answers_deny() {
        assert_eq!(decision(&json!({"outcome": {"outcome": "cancelled"}})), ApprovalDecision::Deny);
        let unknown = json!({"outcome": {"outcome": "selected", "optionId": "maybe"}});
        assert_eq!(decision(&unknown), ApprovalDecision::Deny);
        assert_eq!(decision(&json!(null)), ApprovalDecision::Deny);
    }
}
