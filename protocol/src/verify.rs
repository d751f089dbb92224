//! Verification on the wire: the outcome of a run, the checks a prompt asks for, and what each
//! check did.
//!
//! A run's *end reason* says why the loop stopped (the model stopped calling tools, a limit, a
//! cancel). Its *outcome* says whether the result was checked: when the model stops, the
//! project's checks (`cargo test`, `npm test`, ...) run; a failure is fed back to the model and
//! the run goes on, for at most `max_rounds` rounds.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Whether a run's result passed the project's checks. Separate from the end reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunOutcome {
    /// No check ran: none was configured, or the run ended before the model stopped.
    #[default]
    Unverified,
    /// The last verification round passed every check.
    Verified,
    /// The last verification round had a failing check (see `verify_finished`).
    VerifyFailed,
}

impl RunOutcome {
    /// The wire name (`verified`, `verify_failed`, `unverified`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unverified => "unverified",
            Self::Verified => "verified",
            Self::VerifyFailed => "verify_failed",
        }
    }
}

/// The checks a prompt asks for: a list of commands, or commands with a timeout and a round
/// limit. An empty list turns the configured checks off for that run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum VerifyRequest {
    /// Shell commands, run in order in the session's directory, with the configured timeout
    /// and round limit.
    Commands(Vec<String>),
    /// Commands with their own timeout and round limit.
    Settings(VerifySettings),
}

/// `verify` of `session/prompt` in its long form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VerifySettings {
    /// Shell commands, run in order; a check passes when its command exits 0.
    pub commands: Vec<String>,
    /// Seconds each command may run before it is killed (and fails); the configured value
    /// when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
    /// Most verification rounds per run (at least 1); the configured value when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rounds: Option<u32>,
}

/// One check as it ran in a verification round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct VerifyCheckResult {
    /// The command line.
    pub command: String,
    /// True when the command exited 0 within its timeout.
    pub passed: bool,
    /// Its exit code, when it exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// True when the timeout killed it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub timed_out: bool,
    /// How long it ran, in milliseconds.
    pub duration_ms: u64,
    /// The end of its output (stdout and stderr merged), within the bash tool's caps.
    pub output_tail: String,
    /// The file holding its whole output, when the tail is not all of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_output_path: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn verify_takes_a_list_or_settings() {
        let list: VerifyRequest = serde_json::from_value(json!(["cargo test"])).unwrap();
        assert_eq!(list, VerifyRequest::Commands(vec!["cargo test".into()]));
        let long: VerifyRequest =
            serde_json::from_value(json!({"commands": ["make"], "max_rounds": 3})).unwrap();
        assert_eq!(
            long,
            VerifyRequest::Settings(VerifySettings {
                commands: vec!["make".into()],
                timeout_secs: None,
                max_rounds: Some(3),
            })
        );
        assert!(serde_json::from_value::<VerifyRequest>(json!({"command": "x"})).is_err());
    }

    #[test]
    fn outcomes_have_snake_case_names() {
        for outcome in [RunOutcome::Unverified, RunOutcome::Verified, RunOutcome::VerifyFailed] {
            assert_eq!(serde_json::to_value(outcome).unwrap(), json!(outcome.as_str()));
        }
    }
}
