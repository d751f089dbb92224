//! Run limits: when a run must stop even though the model wants to go on.

use rein_protocol::event::EndReason;
use std::time::Duration;

/// Limits of one run. `None` means unlimited.
#[derive(Debug, Clone, PartialEq)]
pub struct RunLimits {
    /// Most turns (provider requests) in one run.
    pub max_turns: Option<u32>,
    /// Most cost in US dollars: the sum of `usage.cost.total` of the run's assistant messages.
    pub max_cost: Option<f64>,
    /// Most wall time from the run's start. Reaching it aborts the provider stream and every
    /// running tool, like a cancel.
    pub max_wall_time: Option<Duration>,
    /// Most consecutive turns in which every tool call failed.
    pub max_failed_turns: Option<u32>,
}

impl Default for RunLimits {
    /// Unlimited turns, cost and time; five consecutive all-failed tool turns end the run, so a
    /// model stuck repeating a broken call cannot spin forever.
    fn default() -> Self {
        Self { max_turns: None, max_cost: None, max_wall_time: None, max_failed_turns: Some(5) }
    }
}

impl RunLimits {
    /// These limits with the ones a client set for one run taking precedence.
    pub fn with_overrides(mut self, overrides: &rein_protocol::method::RunLimits) -> Self {
        if let Some(turns) = overrides.max_turns {
            self.max_turns = Some(turns);
        }
        if let Some(cost) = overrides.max_cost {
            self.max_cost = Some(cost);
        }
        if let Some(seconds) = overrides.max_seconds {
            self.max_wall_time = Some(Duration::from_secs(seconds));
        }
        if let Some(turns) = overrides.max_failed_turns {
            self.max_failed_turns = Some(turns);
        }
        self
    }

    /// The limit that forbids another turn, checked at a turn boundary of a run that wants to
    /// go on. The wall time is not checked here: it interrupts the run wherever it is.
    pub fn exceeded(&self, progress: &RunProgress) -> Option<EndReason> {
        if self.max_failed_turns.is_some_and(|max| progress.failed_turns >= max) {
            return Some(EndReason::ToolFailureLimit);
        }
        if self.max_turns.is_some_and(|max| progress.turns >= max) {
            return Some(EndReason::MaxTurns);
        }
        if self.max_cost.is_some_and(|max| progress.cost >= max) {
            return Some(EndReason::CostLimit);
        }
        None
    }
}

/// How far a run has come, as the limits see it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunProgress {
    /// Turns taken.
    pub turns: u32,
    /// Cost so far in US dollars.
    pub cost: f64,
    /// Consecutive turns, up to now, in which every tool call failed.
    pub failed_turns: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn progress(turns: u32, cost: f64, failed_turns: u32) -> RunProgress {
        RunProgress { turns, cost, failed_turns }
    }

    #[test]
    fn unlimited_runs_never_stop_on_turns_or_cost() {
        let limits = RunLimits { max_failed_turns: None, ..RunLimits::default() };
        assert_eq!(limits.exceeded(&progress(10_000, 1e9, 10_000)), None);
    }

    #[test]
    fn each_limit_reports_its_own_reason() {
        let limits = RunLimits {
            max_turns: Some(3),
            max_cost: Some(0.5),
            max_wall_time: None,
            max_failed_turns: Some(2),
        };
        assert_eq!(limits.exceeded(&progress(2, 0.1, 1)), None);
        assert_eq!(limits.exceeded(&progress(3, 0.1, 0)), Some(EndReason::MaxTurns));
        assert_eq!(limits.exceeded(&progress(1, 0.5, 0)), Some(EndReason::CostLimit));
        assert_eq!(limits.exceeded(&progress(1, 0.0, 2)), Some(EndReason::ToolFailureLimit));
    }

    #[test]
    fn client_overrides_take_precedence() {
        let overrides = rein_protocol::method::RunLimits {
            max_turns: Some(7),
            max_cost: None,
            max_seconds: Some(30),
            max_failed_turns: None,
        };
        let limits =
            RunLimits { max_cost: Some(2.0), ..RunLimits::default() }.with_overrides(&overrides);
        assert_eq!(limits.max_turns, Some(7));
        assert_eq!(limits.max_cost, Some(2.0));
        assert_eq!(limits.max_wall_time, Some(Duration::from_secs(30)));
        assert_eq!(limits.max_failed_turns, Some(5));
    }
}
