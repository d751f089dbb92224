//! ACP session modes and config options, and how they map onto rein's approval policies,
//! models and thinking levels.

use rein_protocol::method::{ApprovalPolicy, SessionState};
use rein_protocol::model::{ModelInfo, ThinkingLevel};
use serde_json::{Value, json};

/// The config option that picks the model.
pub const MODEL_OPTION: &str = "model";
/// The config option that picks the thinking level.
pub const THINKING_OPTION: &str = "thought_level";
/// The config option that picks the mode (the approval policy).
pub const MODE_OPTION: &str = "mode";

/// Every approval policy, in the order editors list them.
const POLICIES: [(ApprovalPolicy, &str); 3] = [
    (ApprovalPolicy::Ask, "Ask before every write, edit and command"),
    (ApprovalPolicy::AutoEdit, "Edit the project freely; ask before commands"),
    (ApprovalPolicy::Yolo, "Never ask"),
];

/// Every thinking level, in increasing effort.
const LEVELS: [ThinkingLevel; 6] = [
    ThinkingLevel::Off,
    ThinkingLevel::Minimal,
    ThinkingLevel::Low,
    ThinkingLevel::Medium,
    ThinkingLevel::High,
    ThinkingLevel::Xhigh,
];

/// The wire name of a thinking level.
fn level_name(level: ThinkingLevel) -> String {
    serde_json::to_value(level)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The approval policy an ACP mode id names.
pub fn policy_for_mode(mode_id: &str) -> Option<ApprovalPolicy> {
    POLICIES.iter().map(|(policy, _)| *policy).find(|policy| policy.as_str() == mode_id)
}

/// The thinking level a config value names.
pub fn level_for_value(value: &str) -> Option<ThinkingLevel> {
    LEVELS.iter().copied().find(|level| level_name(*level) == value)
}

/// The ACP `modes` state for a session: one mode per approval policy.
pub fn mode_state(current: ApprovalPolicy) -> Value {
    let modes: Vec<Value> = POLICIES
        .iter()
        .map(|(policy, description)| {
            json!({"id": policy.as_str(), "name": policy.as_str(), "description": description})
        })
        .collect();
    json!({"currentModeId": current.as_str(), "availableModes": modes})
}

/// The ACP config options for a session: mode, model and thinking level.
pub fn config_options(state: &SessionState, models: &[ModelInfo]) -> Value {
    let current_model = format!("{}/{}", state.model.provider, state.model.model);
    let mut model_values: Vec<Value> = models
        .iter()
        .map(|model| {
            let value = format!("{}/{}", model.provider, model.id);
            let name = if model.name.is_empty() { value.clone() } else { model.name.clone() };
            json!({"value": value, "name": name})
        })
        .collect();
    if !model_values.iter().any(|option| option["value"] == current_model.as_str()) {
        model_values.insert(0, json!({"value": current_model, "name": current_model}));
    }
    let modes: Vec<Value> = POLICIES
        .iter()
        .map(|(policy, _)| json!({"value": policy.as_str(), "name": policy.as_str()}))
        .collect();
    let levels: Vec<Value> = LEVELS
        .iter()
        .map(|level| json!({"value": level_name(*level), "name": level_name(*level)}))
        .collect();
    json!([
        {"id": MODE_OPTION, "name": "Mode", "category": "mode", "type": "select",
            "currentValue": state.approval_policy.as_str(), "options": modes},
        {"id": MODEL_OPTION, "name": "Model", "category": "model", "type": "select",
            "currentValue": current_model, "options": model_values},
        {"id": THINKING_OPTION, "name": "Thinking", "category": "thought_level",
            "type": "select", "currentValue": level_name(state.thinking_level),
            "options": levels},
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> SessionState {
        serde_json::from_value(json!({"session_id": "s", "cwd": "/p",
            "model": {"provider": "local", "model": "test-model"}, "thinking_level": "medium",
            "approval_policy": "auto-edit", "running": false,
            "queues": {"steering": [], "follow_up": []}, "usage": {}, "context_tokens": 0,
            "context_window": 1000, "trusted": false, "last_seq": 0}))
        .unwrap()
    }

    #[test]
    fn modes_are_the_approval_policies() {
        let modes = mode_state(ApprovalPolicy::AutoEdit);
        assert_eq!(modes["currentModeId"], "auto-edit");
        let ids: Vec<&str> = modes["availableModes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["ask", "auto-edit", "yolo"]);
        for id in ids {
            assert_eq!(policy_for_mode(id).unwrap().as_str(), id);
        }
        assert_eq!(policy_for_mode("plan"), None);
    }

    #[test]
    fn config_options_show_current_values_and_keep_an_unlisted_model() {
        let options = config_options(&state(), &[]);
        assert_eq!(options[0]["currentValue"], "auto-edit");
        assert_eq!(options[1]["currentValue"], "local/test-model");
        assert_eq!(options[1]["options"][0]["value"], "local/test-model");
        assert_eq!(options[2]["currentValue"], "medium");
        assert_eq!(level_for_value("xhigh"), Some(ThinkingLevel::Xhigh));
        assert_eq!(level_for_value("max"), None);
    }
}
