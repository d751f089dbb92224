//! `--shard I/N`: the I-th of N disjoint parts of a task file (I from 0, as Kubernetes'
//! `JOB_COMPLETION_INDEX`), so N processes on N machines together run every task once.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// One shard of a batch: the tasks whose position in the file is `index` modulo `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// Which shard, from 0.
    pub index: usize,
    /// How many shards there are.
    pub count: usize,
}

impl Shard {
    /// The whole batch as a single shard.
    pub const ALL: Shard = Shard { index: 0, count: 1 };

    /// Whether the task at `position` (from 0, in file order) belongs to this shard. Positions
    /// are dealt round-robin, so shards differ in size by at most one task.
    pub fn contains(self, position: usize) -> bool {
        position % self.count == self.index
    }
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let usage = || format!("`{text}` is not a shard: write I/N with 0 <= I < N (e.g. 0/4)");
        let (index, count) = text.split_once('/').ok_or_else(usage)?;
        let index: usize = index.trim().parse().map_err(|_| usage())?;
        let count: usize = count.trim().parse().map_err(|_| usage())?;
        if count == 0 || index >= count {
            return Err(usage());
        }
        Ok(Self { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_reject_bad_input() {
        assert_eq!("2/5".parse::<Shard>(), Ok(Shard { index: 2, count: 5 }));
        for bad in ["5/5", "1/0", "a/2", "3", "-1/2", ""] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }

    #[test]
    fn every_position_falls_in_exactly_one_shard() {
        for count in 1..7 {
            for position in 0..50 {
                let owners =
                    (0..count).filter(|&index| Shard { index, count }.contains(position)).count();
                assert_eq!(owners, 1, "position {position} of {count} shards");
            }
        }
    }
}
