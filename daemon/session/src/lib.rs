//! Placeholder crate root; replaced by the crate's real modules.
