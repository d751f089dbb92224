//! Pages of a session's history, so that no reply outgrows the line limit.
//!
//! A page holds at most the asked `limit` of items and at most [`page_bytes`] of serialized
//! JSON; an item larger than that comes alone, so paging always moves on. Cursors are opaque
//! to clients: `m<index>` (messages before `index` on the active path) and `t<index>` (tree
//! entries from `index` in file order).

use crate::rpc_error::RpcError;
use serde::Serialize;
use std::ops::Range;

/// Most serialized bytes of items in one page.
const MAX_PAGE_BYTES: usize = 4 * 1024 * 1024;

/// The page size for a daemon whose line limit is `max_line_bytes`: a quarter of it, at most
/// [`MAX_PAGE_BYTES`], leaving room for the rest of the reply.
pub(super) fn page_bytes(max_line_bytes: usize) -> usize {
    (max_line_bytes / 4).clamp(1, MAX_PAGE_BYTES)
}

/// Which way pages go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Direction {
    /// From the newest item back (`session/messages`).
    Backward,
    /// From the first item on (`session/tree`).
    Forward,
}

impl Direction {
    fn tag(self) -> char {
        match self {
            Self::Backward => 'm',
            Self::Forward => 't',
        }
    }
}

/// One page: the items' range and the cursor of the next page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Page {
    /// The items in the page.
    pub range: Range<usize>,
    /// The next page's cursor; `None` on the last page.
    pub next_cursor: Option<String>,
}

/// Picks the page of `items` that `cursor` names, going `direction`.
pub(super) fn page<T: Serialize>(
    items: &[T],
    direction: Direction,
    cursor: Option<&str>,
    limit: Option<u32>,
    max_bytes: usize,
) -> Result<Page, RpcError> {
    let limit = match limit {
        Some(0) => return Err(RpcError::invalid_param("limit", "limit must be at least 1")),
        Some(limit) => usize::try_from(limit).unwrap_or(usize::MAX),
        None => usize::MAX,
    };
    let position = match cursor {
        None => match direction {
            Direction::Backward => items.len(),
            Direction::Forward => 0,
        },
        Some(cursor) => parse_cursor(cursor, direction)?.min(items.len()),
    };
    let mut bytes = 0usize;
    let mut taken = 0usize;
    let fits = |item: &T, bytes: &mut usize, taken: usize| {
        let size = serialized_size(item);
        if taken > 0 && (taken >= limit || *bytes + size > max_bytes) {
            return false;
        }
        *bytes += size;
        true
    };
    match direction {
        Direction::Backward => {
            let mut start = position;
            while start > 0 && fits(&items[start - 1], &mut bytes, taken) {
                start -= 1;
                taken += 1;
            }
            let next_cursor = (start > 0).then(|| format!("{}{start}", direction.tag()));
            Ok(Page { range: start..position, next_cursor })
        }
        Direction::Forward => {
            let mut end = position;
            while end < items.len() && fits(&items[end], &mut bytes, taken) {
                end += 1;
                taken += 1;
            }
            let next_cursor = (end < items.len()).then(|| format!("{}{end}", direction.tag()));
            Ok(Page { range: position..end, next_cursor })
        }
    }
}

fn parse_cursor(cursor: &str, direction: Direction) -> Result<usize, RpcError> {
    cursor.strip_prefix(direction.tag()).and_then(|number| number.parse().ok()).ok_or_else(|| {
        RpcError::invalid_param("cursor", "not a cursor this method returned (next_cursor)")
    })
}

/// The length of `item` as compact JSON, without building the text.
fn serialized_size<T: Serialize>(item: &T) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    // Counting cannot fail; a type that refuses to serialize counts as empty.
    let _ = serde_json::to_writer(&mut counter, item);
    counter.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("item-{i:04}")).collect()
    }

    #[test]
    fn backward_pages_end_with_the_newest_and_join_up() {
        let items = words(10);
        let first = page(&items, Direction::Backward, None, Some(4), usize::MAX).unwrap();
        assert_eq!(first.range, 6..10);
        let second =
            page(&items, Direction::Backward, first.next_cursor.as_deref(), Some(4), usize::MAX)
                .unwrap();
        assert_eq!(second.range, 2..6);
        let last =
            page(&items, Direction::Backward, second.next_cursor.as_deref(), Some(4), usize::MAX)
                .unwrap();
        assert_eq!(last.range, 0..2);
        assert_eq!(last.next_cursor, None);
    }

    #[test]
    fn forward_pages_start_with_the_first_and_respect_the_byte_budget() {
        let items = words(10);
        // Each item is 11 bytes as JSON ("item-0000" in quotes).
        let first = page(&items, Direction::Forward, None, None, 35).unwrap();
        assert_eq!(first.range, 0..3);
        let rest = page(&items, Direction::Forward, first.next_cursor.as_deref(), None, usize::MAX)
            .unwrap();
        assert_eq!(rest.range, 3..10);
        assert_eq!(rest.next_cursor, None);
        // An item larger than the budget comes alone.
        let alone = page(&items, Direction::Forward, None, None, 5).unwrap();
        assert_eq!(alone.range, 0..1);
    }

    #[test]
    fn bad_cursors_and_limits_are_invalid_params() {
        let items = words(3);
        let error = page(&items, Direction::Forward, Some("m1"), None, 100).unwrap_err();
        assert_eq!(error.field.as_deref(), Some("cursor"));
        let error = page(&items, Direction::Forward, None, Some(0), 100).unwrap_err();
        assert_eq!(error.field.as_deref(), Some("limit"));
        // A cursor past the end (the history shrank) gives an empty last page.
        let beyond = page(&items, Direction::Forward, Some("t9"), None, 100).unwrap();
        assert!(beyond.range.is_empty());
        assert_eq!(beyond.next_cursor, None);
    }
}
