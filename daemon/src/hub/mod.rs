//! The session hub: loaded sessions, their event streams and their subscribers.

pub mod events;
