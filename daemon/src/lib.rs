//! The rein daemon library.
