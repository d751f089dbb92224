//! `[limits]`: the limits of every run, as a configuration file sets them. One definition
//! serves the user's `config.toml` and a project's `.rein/config.toml`: each key a file sets
//! replaces the value below it (built-in defaults, then the user's file, then the project's
//! files, innermost last; a prompt's own limits still win over all of them).

use std::time::Duration;

use rein_agent::RunLimits;
use serde::Deserialize;

/// Most turns per run when no file sets `limits.max_turns`.
pub const DEFAULT_MAX_TURNS: u32 = 200;

/// The `[limits]` table of a configuration file; a key left out keeps the value below it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsConfig {
    /// Most turns per run.
    pub max_turns: Option<u32>,
    /// Most US dollars per run.
    pub max_cost: Option<f64>,
    /// Most seconds per run.
    pub max_seconds: Option<u64>,
    /// Consecutive turns in which every tool call failed before the run stops.
    pub max_failed_turns: Option<u32>,
}

impl LimitsConfig {
    /// The limits of a run when no file sets any: [`DEFAULT_MAX_TURNS`] turns, five turns
    /// of failing tool calls in a row, no cost or time limit.
    pub fn built_in() -> RunLimits {
        RunLimits { max_turns: Some(DEFAULT_MAX_TURNS), ..RunLimits::default() }
    }

    /// The run limits these settings make over `below`: each key set here replaces
    /// `below`'s. The one conversion from configuration to run limits.
    pub fn over(&self, below: &RunLimits) -> RunLimits {
        RunLimits {
            max_turns: self.max_turns.or(below.max_turns),
            max_cost: self.max_cost.or(below.max_cost),
            max_wall_time: self.max_seconds.map(Duration::from_secs).or(below.max_wall_time),
            max_failed_turns: self.max_failed_turns.or(below.max_failed_turns),
        }
    }

    /// Takes every key `inner` (a file nearer the session's directory) sets.
    pub fn merge(&mut self, inner: Self) {
        self.max_turns = inner.max_turns.or(self.max_turns);
        self.max_cost = inner.max_cost.or(self.max_cost);
        self.max_seconds = inner.max_seconds.or(self.max_seconds);
        self.max_failed_turns = inner.max_failed_turns.or(self.max_failed_turns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_keys_replace_the_ones_below_and_unset_keys_keep_them() {
        let built_in = LimitsConfig::built_in();
        assert_eq!(built_in.max_turns, Some(200));
        assert_eq!(built_in.max_failed_turns, Some(5));
        assert_eq!((built_in.max_cost, built_in.max_wall_time), (None, None));
        let user = LimitsConfig { max_turns: Some(7), max_seconds: Some(30), ..Default::default() };
        let mut project = LimitsConfig { max_cost: Some(1.0), ..Default::default() };
        project.merge(LimitsConfig { max_turns: Some(3), ..Default::default() });
        let limits = project.over(&user.over(&built_in));
        assert_eq!(limits.max_turns, Some(3));
        assert_eq!(limits.max_cost, Some(1.0));
        assert_eq!(limits.max_wall_time, Some(Duration::from_secs(30)));
        assert_eq!(limits.max_failed_turns, Some(5));
    }
}
