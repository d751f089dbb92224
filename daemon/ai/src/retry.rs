//! When and how long to wait before retrying a failed request.

use rand::Rng;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Retry settings: `[retry]` in the configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetryPolicy {
    /// Retries after the first attempt (so `max_retries + 1` attempts in all).
    pub max_retries: u32,
    /// Wait before the first retry, doubled for each further one.
    pub base_delay_ms: u64,
    /// Longest wait. A provider asking for a longer one (`retry-after`) is not retried.
    pub max_delay_ms: u64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self { max_retries: 4, base_delay_ms: 1000, max_delay_ms: 60_000 }
    }
}

impl RetryPolicy {
    /// Attempts in all.
    pub fn max_attempts(&self) -> u32 {
        self.max_retries.saturating_add(1)
    }

    /// The wait after failed attempt number `attempt` (1-based): what the provider asked for,
    /// else exponential backoff with up to 50% random jitter on top, capped at `max_delay_ms`.
    /// `None` when the provider asks for more than `max_delay_ms`.
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Option<Duration> {
        let max = Duration::from_millis(self.max_delay_ms);
        if let Some(asked) = retry_after {
            return (asked <= max).then_some(asked);
        }
        let exponent = attempt.saturating_sub(1).min(30);
        let backoff = self.base_delay_ms.saturating_mul(1u64 << exponent);
        let jitter = if backoff > 1 { rand::rng().random_range(0..=backoff / 2) } else { 0 };
        Some(Duration::from_millis(backoff.saturating_add(jitter)).min(max))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_bounded_jitter_and_a_cap() {
        let policy = RetryPolicy { max_retries: 5, base_delay_ms: 100, max_delay_ms: 1000 };
        for _ in 0..50 {
            let first = policy.delay(1, None).unwrap().as_millis();
            assert!((100..=150).contains(&first), "{first}");
            let third = policy.delay(3, None).unwrap().as_millis();
            assert!((400..=600).contains(&third), "{third}");
            assert_eq!(policy.delay(10, None).unwrap().as_millis(), 1000);
        }
    }

    #[test]
    fn retry_after_is_honoured_unless_too_long() {
        let policy = RetryPolicy::default();
        assert_eq!(policy.delay(1, Some(Duration::from_secs(3))), Some(Duration::from_secs(3)));
        assert_eq!(policy.delay(1, Some(Duration::from_secs(3600))), None);
        assert_eq!(policy.max_attempts(), 5);
    }
}
