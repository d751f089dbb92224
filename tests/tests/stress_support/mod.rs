//! Helpers shared by the stress tests (`stress_*.rs`): a small seeded random generator and
//! checks of message histories. Their socket client is the testkit's
//! [`RawConnection`](rein_testkit::connection::RawConnection).
//!
//! Each stress test uses a different subset of these helpers.
#![allow(dead_code)]

use serde_json::Value;

/// A small deterministic generator (xorshift64*): a failing run can be replayed from its seed.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    /// A generator starting from `seed` (0 is replaced, xorshift needs a set bit).
    pub(crate) fn new(seed: u64) -> Self {
        Self(if seed == 0 { 0x9e37_79b9_7f4a_7c15 } else { seed })
    }

    /// A seed from the clock, for runs that should differ each time.
    pub(crate) fn clock_seed() -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
    }

    /// The next 64 random bits.
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { (self.next() % n as u64) as usize }
    }
}

/// Asserts that every tool call on `messages` (a `session/messages` list) has exactly one
/// result with its id, and every result answers a call.
pub(crate) fn assert_calls_answered_once(messages: &[Value], context: &str) {
    let mut calls: Vec<&str> = Vec::new();
    let mut results: Vec<&str> = Vec::new();
    for message in messages {
        if message["role"] == "assistant" {
            for block in message["content"].as_array().into_iter().flatten() {
                if block["type"] == "tool_call" {
                    calls.push(block["id"].as_str().unwrap_or_default());
                }
            }
        } else if message["role"] == "tool_result" {
            results.push(message["tool_call_id"].as_str().unwrap_or_default());
        }
    }
    for call in &calls {
        let answers = results.iter().filter(|r| *r == call).count();
        assert_eq!(answers, 1, "{context}: tool call {call} has {answers} results");
    }
    for result in &results {
        assert!(calls.contains(result), "{context}: result for unknown call {result}");
    }
}
