//! Verification: the project's checks, run when the model ends a run.
//!
//! "The model stopped calling tools" is not a result anyone checked. When checks are declared
//! (`[verify]` in the configuration, `rein run --verify CMD`, or `verify` on `session/prompt`),
//! the session runs them in its directory once the model stops, through the `bash` tool's
//! runner ([`run_command`]: own process group, timeout, output capped and spilled to a file).
//! When one fails, its output tail goes back to the model as a user message and the run goes
//! on, for at most `max_rounds` rounds. The outcome is `verified`, `verify_failed` or
//! `unverified` (see [`RunOutcome`]).
//!
//! This module holds the settings, the plan of one run and the running of one round; the
//! session glue (events, the session file, the agent hook) is in `session::verification`.

use std::path::PathBuf;
use std::time::Duration;

use rein_protocol::verify::{RunOutcome, VerifyCheckResult, VerifyRequest};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::tools::{CommandOutcome, CommandRequest, run_command};

/// Seconds a check may run when the configuration does not say.
pub const DEFAULT_CHECK_TIMEOUT_SECS: u64 = 600;
/// Rounds a run gets when the configuration does not say.
pub const DEFAULT_MAX_ROUNDS: u32 = 2;

/// `[verify]` in a configuration file (the user's, or a trusted project's
/// `.rein/config.toml` once project configuration applies; a project's table replaces the
/// user's as a whole, see [`VerifyConfig::overridden_by`]).
///
/// ```toml
/// [verify]
/// commands = ["cargo test", { command = "cargo clippy -- -D warnings", timeout_secs = 300 }]
/// timeout_secs = 600
/// max_rounds = 2
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerifyConfig {
    /// The checks, run in order; each passes when its command exits 0.
    #[serde(default)]
    pub commands: Vec<CheckConfig>,
    /// Seconds each check may run, unless it sets its own.
    #[serde(default = "default_timeout_secs")]
    pub timeout_secs: u64,
    /// Most verification rounds per run.
    #[serde(default = "default_max_rounds")]
    pub max_rounds: u32,
}

fn default_timeout_secs() -> u64 {
    DEFAULT_CHECK_TIMEOUT_SECS
}

fn default_max_rounds() -> u32 {
    DEFAULT_MAX_ROUNDS
}

impl Default for VerifyConfig {
    fn default() -> Self {
        Self {
            commands: Vec::new(),
            timeout_secs: DEFAULT_CHECK_TIMEOUT_SECS,
            max_rounds: DEFAULT_MAX_ROUNDS,
        }
    }
}

/// One configured check: a command line, or a command with its own timeout.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum CheckConfig {
    /// A command line with the table's timeout.
    Command(String),
    /// A command line with its own timeout.
    Detailed {
        /// The command line.
        command: String,
        /// Seconds it may run.
        timeout_secs: Option<u64>,
    },
}

/// One check of a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// The command line, run with the session's shell in the session's directory.
    pub command: String,
    /// When it is killed (and fails).
    pub timeout: Duration,
}

/// The checks of one run and how many rounds it gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyPlan {
    /// The checks, in order. Empty: the run ends `unverified`.
    pub checks: Vec<Check>,
    /// Most rounds (at least 1).
    pub max_rounds: u32,
}

impl VerifyConfig {
    /// This configuration with a project's `[verify]` table put over it: the project's table
    /// wins as a whole when it names any command.
    pub fn overridden_by(&self, project: Option<&VerifyConfig>) -> VerifyConfig {
        match project {
            Some(project) if !project.commands.is_empty() => project.clone(),
            _ => self.clone(),
        }
    }

    /// The plan of a run: the prompt's own checks when it gave any (an empty list means none),
    /// else the configured ones.
    pub fn plan(&self, request: Option<&VerifyRequest>) -> VerifyPlan {
        let timeout = Duration::from_secs(self.timeout_secs);
        let configured = || {
            self.commands
                .iter()
                .map(|check| match check {
                    CheckConfig::Command(command) => Check { command: command.clone(), timeout },
                    CheckConfig::Detailed { command, timeout_secs } => Check {
                        command: command.clone(),
                        timeout: timeout_secs.map_or(timeout, Duration::from_secs),
                    },
                })
                .collect::<Vec<_>>()
        };
        let (checks, max_rounds) = match request {
            None => (configured(), self.max_rounds),
            Some(VerifyRequest::Commands(commands)) => (
                commands.iter().map(|c| Check { command: c.clone(), timeout }).collect(),
                self.max_rounds,
            ),
            Some(VerifyRequest::Settings(settings)) => {
                let timeout = settings.timeout_secs.map_or(timeout, Duration::from_secs);
                (
                    settings
                        .commands
                        .iter()
                        .map(|c| Check { command: c.clone(), timeout })
                        .collect(),
                    settings.max_rounds.unwrap_or(self.max_rounds),
                )
            }
        };
        let checks = checks.into_iter().filter(|check| !check.command.trim().is_empty()).collect();
        VerifyPlan { checks, max_rounds: max_rounds.max(1) }
    }
}

/// Where and how the checks of a session run.
#[derive(Debug, Clone)]
pub struct CheckRunner {
    /// The session's directory.
    pub cwd: PathBuf,
    /// The shell (`None`: bash when installed, else sh).
    pub shell: Option<PathBuf>,
    /// Where the full output of a long check goes.
    pub output_dir: PathBuf,
    /// Bounds on that full output (the bash tool's).
    pub spill: crate::tools::spill::SpillLimits,
    /// Variables the checks do not get (the providers' API keys).
    pub hidden_env: Vec<String>,
}

/// What one round gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoundReport {
    /// Each check that ran, in order; the first failure ends the round.
    pub checks: Vec<VerifyCheckResult>,
    /// True when every check passed.
    pub passed: bool,
}

impl CheckRunner {
    /// Runs the checks in order until one fails. `on_check` is told of each result as it
    /// comes. A check that cannot be started at all fails with the reason as its output.
    pub async fn run_round(
        &self,
        checks: &[Check],
        cancel: &CancellationToken,
        mut on_check: impl FnMut(&VerifyCheckResult),
    ) -> RoundReport {
        let mut results = Vec::with_capacity(checks.len());
        for check in checks {
            let request = CommandRequest {
                command: check.command.clone(),
                cwd: self.cwd.clone(),
                shell: self.shell.clone(),
                timeout: check.timeout,
                output_dir: self.output_dir.clone(),
                spill: self.spill,
                hidden_env: self.hidden_env.clone(),
            };
            let result = match run_command(&request, |_| {}, cancel).await {
                Ok(outcome) => check_result(&check.command, &outcome),
                Err(error) => VerifyCheckResult {
                    command: check.command.clone(),
                    passed: false,
                    exit_code: None,
                    timed_out: false,
                    duration_ms: 0,
                    output_tail: format!("could not run the check: {error}"),
                    full_output_path: None,
                },
            };
            on_check(&result);
            let passed = result.passed;
            results.push(result);
            if !passed || cancel.is_cancelled() {
                break;
            }
        }
        let passed = results.len() == checks.len() && results.iter().all(|r| r.passed);
        RoundReport { checks: results, passed }
    }
}

/// A check's record from the runner's outcome.
fn check_result(command: &str, outcome: &CommandOutcome) -> VerifyCheckResult {
    VerifyCheckResult {
        command: command.to_string(),
        passed: outcome.succeeded(),
        exit_code: outcome.exit_code,
        timed_out: outcome.timed_out,
        duration_ms: u64::try_from(outcome.duration.as_millis()).unwrap_or(u64::MAX),
        output_tail: outcome.output.clone(),
        full_output_path: outcome.full_output_path.as_ref().map(|p| p.display().to_string()),
    }
}

/// What a round decides for the run.
#[derive(Debug, Clone, PartialEq)]
pub enum RoundVerdict {
    /// The run ends with this outcome.
    Finish(RunOutcome),
    /// The run goes on; the model is told this.
    Retry(String),
}

/// The verdict of round `round` of `max_rounds`.
pub fn verdict(report: &RoundReport, round: u32, max_rounds: u32) -> RoundVerdict {
    if report.passed {
        RoundVerdict::Finish(RunOutcome::Verified)
    } else if round < max_rounds {
        RoundVerdict::Retry(feedback(report, round, max_rounds))
    } else {
        RoundVerdict::Finish(RunOutcome::VerifyFailed)
    }
}

/// The user message telling the model which check failed and how.
pub fn feedback(report: &RoundReport, round: u32, max_rounds: u32) -> String {
    let mut text = format!(
        "Verification failed (round {round} of {max_rounds}). The project's checks ran after \
         you stopped, and one failed.\n"
    );
    for check in &report.checks {
        let status = if check.passed {
            "passed".to_string()
        } else if check.timed_out {
            "timed out".to_string()
        } else {
            match check.exit_code {
                Some(code) => format!("failed with exit code {code}"),
                None => "failed".to_string(),
            }
        };
        text.push_str(&format!("\n$ {}\n[{status}]\n", check.command));
        if !check.passed {
            text.push_str("Output (the end of it):\n");
            text.push_str(&check.output_tail);
            if !check.output_tail.ends_with('\n') {
                text.push('\n');
            }
            if let Some(path) = &check.full_output_path {
                text.push_str(&format!("[full output: {path}]\n"));
            }
        }
    }
    text.push_str(
        "\nFix the cause (not the check itself), then stop again; the checks will run again.",
    );
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_protocol::verify::VerifySettings;

    #[test]
    fn configuration_reads_strings_and_tables() {
        let config: VerifyConfig = toml::from_str(
            r#"commands = ["cargo test", { command = "make lint", timeout_secs = 5 }]
               max_rounds = 3"#,
        )
        .unwrap();
        let plan = config.plan(None);
        assert_eq!(plan.max_rounds, 3);
        assert_eq!(plan.checks[0].timeout, Duration::from_secs(DEFAULT_CHECK_TIMEOUT_SECS));
        assert_eq!(
            plan.checks[1],
            Check { command: "make lint".into(), timeout: Duration::from_secs(5) }
        );
        assert!(toml::from_str::<VerifyConfig>("comands = []").is_err());
    }

    #[test]
    fn a_prompt_replaces_the_configured_checks() {
        let config = VerifyConfig {
            commands: vec![CheckConfig::Command("npm test".into())],
            ..VerifyConfig::default()
        };
        let none = config.plan(Some(&VerifyRequest::Commands(Vec::new())));
        assert!(none.checks.is_empty());
        let own = config.plan(Some(&VerifyRequest::Settings(VerifySettings {
            commands: vec!["true".into()],
            timeout_secs: Some(1),
            max_rounds: Some(0),
        })));
        assert_eq!(own.max_rounds, 1, "at least one round");
        assert_eq!(
            own.checks,
            vec![Check { command: "true".into(), timeout: Duration::from_secs(1) }]
        );
        assert_eq!(config.plan(None).max_rounds, DEFAULT_MAX_ROUNDS);
    }

    #[test]
    fn a_project_table_wins_when_it_names_commands() {
        let user = VerifyConfig {
            commands: vec![CheckConfig::Command("a".into())],
            ..VerifyConfig::default()
        };
        let project = VerifyConfig {
            commands: vec![CheckConfig::Command("b".into())],
            max_rounds: 4,
            ..VerifyConfig::default()
        };
        assert_eq!(user.overridden_by(Some(&project)), project);
        assert_eq!(user.overridden_by(Some(&VerifyConfig::default())), user);
        assert_eq!(user.overridden_by(None), user);
    }

    fn result(command: &str, passed: bool) -> VerifyCheckResult {
        VerifyCheckResult {
            command: command.into(),
            passed,
            exit_code: Some(if passed { 0 } else { 1 }),
            timed_out: false,
            duration_ms: 3,
            output_tail: format!("{command} said so"),
            full_output_path: None,
        }
    }

    #[test]
    fn verdicts_follow_the_round_count() {
        let failed =
            RoundReport { checks: vec![result("a", true), result("b", false)], passed: false };
        match verdict(&failed, 1, 2) {
            RoundVerdict::Retry(text) => {
                assert!(text.contains("round 1 of 2"), "{text}");
                assert!(text.contains("$ b\n[failed with exit code 1]"), "{text}");
                assert!(text.contains("b said so"), "{text}");
                assert!(!text.contains("a said so"), "passing output is left out: {text}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(verdict(&failed, 2, 2), RoundVerdict::Finish(RunOutcome::VerifyFailed));
        let passed = RoundReport { checks: vec![result("a", true)], passed: true };
        assert_eq!(verdict(&passed, 1, 2), RoundVerdict::Finish(RunOutcome::Verified));
    }

    /// A runner in `dir` with the bash tool's defaults.
    fn runner_in(dir: &std::path::Path) -> CheckRunner {
        CheckRunner {
            cwd: dir.to_path_buf(),
            shell: None,
            output_dir: dir.join("out"),
            spill: crate::tools::spill::SpillLimits::default(),
            hidden_env: Vec::new(),
        }
    }

    #[tokio::test]
    async fn a_round_stops_at_the_first_failure() {
        let dir = tempfile::tempdir().unwrap();
        let runner = runner_in(dir.path());
        let checks = vec![
            Check { command: "echo first".into(), timeout: Duration::from_secs(30) },
            Check { command: "echo broken >&2; exit 3".into(), timeout: Duration::from_secs(30) },
            Check { command: "touch never-ran".into(), timeout: Duration::from_secs(30) },
        ];
        let mut seen = 0;
        let report = runner.run_round(&checks, &CancellationToken::new(), |_| seen += 1).await;
        assert!(!report.passed);
        assert_eq!(seen, 2);
        assert_eq!(report.checks[0].output_tail.trim(), "first");
        assert_eq!(report.checks[1].exit_code, Some(3));
        assert!(report.checks[1].output_tail.contains("broken"));
        assert!(!dir.path().join("never-ran").exists());
    }

    #[tokio::test]
    async fn a_check_that_outlives_its_timeout_fails() {
        let dir = tempfile::tempdir().unwrap();
        let runner = runner_in(dir.path());
        let checks =
            vec![Check { command: "sleep 30".into(), timeout: Duration::from_millis(200) }];
        let report = runner.run_round(&checks, &CancellationToken::new(), |_| {}).await;
        assert!(!report.passed);
        assert!(report.checks[0].timed_out);
    }
}
