//! Wall-clock time in the unit of every timestamp on the wire.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch (0 when the clock reads before it, `i64::MAX` past the
/// year 292 million): the unit of message, entry and event timestamps.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_after_2020() {
        // 2020-01-01T00:00:00Z in milliseconds: any sane clock is past it.
        assert!(now_ms() > 1_577_836_800_000);
    }
}
