//! Documentation generator.
