//! Identifiers and timestamps: session ids (uuid v7), entry ids (short random hex), RFC 3339
//! times.

use rand::Rng;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// Hex digits in an entry id. 8 digits give 4 billion values: collisions inside one session are
/// rare and are retried anyway.
const ENTRY_ID_HEX_DIGITS: usize = 8;

/// A new session id: a uuid v7, so ids sort by creation time.
pub fn new_session_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// A new entry id, short random hex, for which `taken` is false.
pub fn new_entry_id(taken: impl Fn(&str) -> bool) -> String {
    let mut rng = rand::rng();
    loop {
        let value: u32 = rng.random();
        let id = format!("{value:0width$x}", width = ENTRY_ID_HEX_DIGITS);
        if !taken(&id) {
            return id;
        }
    }
}

/// The current time as RFC 3339 (UTC).
pub fn now_rfc3339() -> String {
    format_rfc3339(OffsetDateTime::now_utc())
}

/// The current time in milliseconds since the Unix epoch (the unit of message timestamps).
pub use rein_protocol::clock::now_ms as now_millis;

/// Formats a time as RFC 3339; falls back to the Unix epoch text if formatting fails (it only
/// fails for years outside 0..=9999).
pub fn format_rfc3339(time: OffsetDateTime) -> String {
    time.format(&Rfc3339).unwrap_or_else(|_| "1970-01-01T00:00:00Z".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn entry_ids_are_short_hex_and_avoid_taken_ones() {
        let mut taken = HashSet::new();
        for _ in 0..1000 {
            let id = new_entry_id(|id| taken.contains(id));
            assert_eq!(id.len(), ENTRY_ID_HEX_DIGITS);
            assert!(id.chars().all(|c| c.is_ascii_hexdigit()));
            assert!(taken.insert(id), "duplicate id");
        }
    }

    #[test]
    fn session_ids_sort_by_creation() {
        let a = new_session_id();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = new_session_id();
        assert!(a < b, "{a} !< {b}");
        assert_eq!(uuid::Uuid::parse_str(&a).unwrap().get_version_num(), 7);
    }

    #[test]
    fn timestamps_parse_back() {
        let text = now_rfc3339();
        assert!(OffsetDateTime::parse(&text, &Rfc3339).is_ok(), "{text}");
        assert!(now_millis() > 1_700_000_000_000);
    }
}
