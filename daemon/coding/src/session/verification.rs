//! The session side of verification: which checks each run gets, and the `on_stop` hook that
//! runs them, announces them (`verify_started`, `verify_finished`) and records each round in
//! the session file (a `custom` entry of type [`VERIFICATION_ENTRY_TYPE`], which the JSONL
//! trajectory exports as a `verification` line).
//!
//! A `Stop` hook (Claude Code's hook protocol, not built yet) plugs in at
//! [`CodingSession::on_stop`]: run it before the checks; when it blocks, its reason goes back to
//! the model exactly like a failing check and the round counts against `max_rounds`.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use rein_agent::{StopDecision, StopView};
use rein_protocol::EntryKind;
use rein_protocol::event::SessionEvent;
use rein_protocol::message::ContentBlock;
use rein_protocol::verify::{RunOutcome, VerifyCheckResult};
use serde_json::json;

use super::CodingSession;
use crate::verify::{RoundVerdict, VerifyPlan, verdict};

/// `custom_type` of the entry recording one verification round. Its `data` is
/// `{"run_id", "round", "max_rounds", "passed", "checks": [VerifyCheckResult...]}`.
pub use rein_session::export::VERIFICATION_ENTRY_TYPE;

/// Runs a prompt gave its own checks, and the rounds each run used.
#[derive(Default)]
pub(crate) struct RunPlans {
    runs: Mutex<HashMap<String, RunState>>,
}

/// One run's plan and the rounds it used.
struct RunState {
    plan: Option<VerifyPlan>,
    rounds: u32,
}

/// Runs whose state is kept at most (runs that ended without reaching a verdict leave theirs
/// behind; the oldest are dropped past this).
const MAX_TRACKED_RUNS: usize = 64;

impl RunPlans {
    /// The lock; hold it across submitting a prompt and [`RunPlans::set`], so a run cannot
    /// reach its first stop before its plan is known.
    pub(crate) fn lock(&self) -> PlansGuard<'_> {
        PlansGuard(self.runs.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// The locked plans.
pub(crate) struct PlansGuard<'a>(MutexGuard<'a, HashMap<String, RunState>>);

impl PlansGuard<'_> {
    /// Gives run `run_id` its own plan.
    pub(crate) fn set(&mut self, run_id: String, plan: VerifyPlan) {
        if self.0.len() >= MAX_TRACKED_RUNS {
            self.0.clear();
        }
        self.0.insert(run_id, RunState { plan: Some(plan), rounds: 0 });
    }
}

/// Announces the end of a round exactly once, also when the run is cancelled while checks run
/// (the hook's future is then dropped).
struct RoundReport<'a> {
    session: &'a CodingSession,
    run_id: String,
    round: u32,
    checks: Vec<VerifyCheckResult>,
    done: bool,
}

impl Drop for RoundReport<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.session.emit(SessionEvent::VerifyFinished {
                run_id: self.run_id.clone(),
                round: self.round,
                passed: false,
                checks: std::mem::take(&mut self.checks),
                cancelled: true,
            });
        }
    }
}

impl CodingSession {
    /// The model stopped: run the round's checks and decide whether the run is done.
    pub(crate) async fn on_stop(&self, stop: StopView<'_>) -> StopDecision {
        // `Stop` hooks run first: a hook that blocks continues the run with its reason, like a
        // failed check, without running the checks this time.
        // With checks configured, a block counts as a failed round toward `max_rounds`.
        if let Some(reason) = self.stop_hooks(stop.continuations, stop.cancel).await {
            let mut runs = self.run_plans.lock();
            let state = runs
                .0
                .entry(stop.run_id.to_string())
                .or_insert_with(|| RunState { plan: None, rounds: 0 });
            let plan = state.plan.clone().unwrap_or_else(|| self.verify_config().plan(None));
            if plan.checks.is_empty() {
                let content = vec![ContentBlock::text(reason)];
                return StopDecision::Continue { content, outcome: RunOutcome::Unverified };
            }
            if state.rounds >= plan.max_rounds {
                runs.0.remove(stop.run_id);
                return StopDecision::Finish(RunOutcome::VerifyFailed);
            }
            state.rounds += 1;
            let content = vec![ContentBlock::text(reason)];
            return StopDecision::Continue { content, outcome: RunOutcome::VerifyFailed };
        }
        let (plan, round) = {
            let mut runs = self.run_plans.lock();
            let state = runs
                .0
                .entry(stop.run_id.to_string())
                .or_insert_with(|| RunState { plan: None, rounds: 0 });
            let plan = state.plan.clone().unwrap_or_else(|| self.verify_config().plan(None));
            if plan.checks.is_empty() {
                runs.0.remove(stop.run_id);
                return StopDecision::Finish(RunOutcome::Unverified);
            }
            if state.rounds >= plan.max_rounds {
                runs.0.remove(stop.run_id);
                return StopDecision::Finish(RunOutcome::VerifyFailed);
            }
            state.rounds += 1;
            (plan, state.rounds)
        };
        // The round's events follow those of the reply that stopped.
        self.pump.catch_up().await;
        let commands = plan.checks.iter().map(|check| check.command.clone()).collect();
        self.emit(SessionEvent::VerifyStarted {
            run_id: stop.run_id.to_string(),
            round,
            max_rounds: plan.max_rounds,
            commands,
        });
        let mut report = RoundReport {
            session: self,
            run_id: stop.run_id.to_string(),
            round,
            checks: Vec::new(),
            done: false,
        };
        let result = self
            .check_runner()
            .run_round(&plan.checks, stop.cancel, |check| report.checks.push(check.clone()))
            .await;
        report.done = true;
        let cancelled = stop.cancel.is_cancelled();
        self.emit(SessionEvent::VerifyFinished {
            run_id: stop.run_id.to_string(),
            round,
            passed: result.passed,
            checks: result.checks.clone(),
            cancelled,
        });
        let data = json!({
            "run_id": stop.run_id,
            "round": round,
            "max_rounds": plan.max_rounds,
            "passed": result.passed,
            "checks": result.checks,
        });
        let kind = EntryKind::Custom { custom_type: VERIFICATION_ENTRY_TYPE.into(), data };
        if let Err(error) = self.journal.append(vec![kind]).await {
            tracing::error!(session = %self.id, %error, "could not record a verification round");
        }
        match verdict(&result, round, plan.max_rounds) {
            RoundVerdict::Retry(text) if !cancelled => StopDecision::Continue {
                content: vec![ContentBlock::text(text)],
                outcome: RunOutcome::VerifyFailed,
            },
            RoundVerdict::Retry(_) => StopDecision::Finish(RunOutcome::VerifyFailed),
            RoundVerdict::Finish(outcome) => {
                self.run_plans.lock().0.remove(stop.run_id);
                StopDecision::Finish(outcome)
            }
        }
    }

    /// How this session runs checks: like its `bash` tool.
    fn check_runner(&self) -> crate::verify::CheckRunner {
        let env = self.env();
        crate::verify::CheckRunner {
            cwd: self.live().tool_context.cwd.clone(),
            shell: env.defaults.bash.shell.clone(),
            output_dir: crate::tools::spill::session_dir(&env.output_dir, &self.id),
            spill: env.defaults.bash.spill,
            hidden_env: env.defaults.bash.hidden_env.clone(),
        }
    }
}
