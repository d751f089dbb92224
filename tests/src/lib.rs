//! Shared test fixtures for every rein crate: the scripted fake provider and the daemon fixture.

pub mod background;
pub mod connection;
pub mod daemon;
pub mod fake_provider;
pub mod floor;
pub mod history;
pub mod process;
pub mod small_fs;
pub mod socket_proxy;
