//! The generated protocol reference: `docs/protocol.md` and `docs/protocol.schema.json`.
//!
//! Both files are produced from `rein-protocol`'s types, so they cannot drift from the wire:
//! the [`catalog`] documents every method of the protocol's method table with typed example
//! values, [`reference`] turns the catalog and the types' JSON Schemas (from schemars) into one
//! schema document, and the markdown is rendered from that document. A test in
//! `protocol-docs/tests/docs.rs` fails when the committed files differ from what [`generate`]
//! returns; regenerate them with `cargo run -p rein-protocol-docs`. This crate is apart from
//! the wire crate so that clients do not compile the generator.

pub mod catalog;
mod crate_docs;
pub mod examples;
mod markdown;
pub mod reference;
mod schema_text;

use std::path::{Path, PathBuf};

/// File name of the markdown reference inside the docs directory.
pub const MARKDOWN_FILE: &str = "protocol.md";

/// File name of the JSON Schema document inside the docs directory.
pub const SCHEMA_FILE: &str = "protocol.schema.json";

/// The command that regenerates the committed files.
pub const REGENERATE_COMMAND: &str = "cargo run -p rein-protocol-docs";

/// Why the reference could not be generated, written or compared.
#[derive(Debug, thiserror::Error)]
pub enum DocsError {
    /// An example value or the schema document could not be serialized.
    #[error("cannot serialize {what}: {source}")]
    Serialize {
        /// What was being serialized.
        what: String,
        /// The serializer's error.
        source: serde_json::Error,
    },
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// The two generated files' contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedDocs {
    /// `docs/protocol.md`.
    pub markdown: String,
    /// `docs/protocol.schema.json`, pretty-printed with a trailing newline.
    pub schema: String,
}

impl GeneratedDocs {
    /// Each file's name with its contents.
    pub fn files(&self) -> [(&'static str, &str); 2] {
        [(MARKDOWN_FILE, &self.markdown), (SCHEMA_FILE, &self.schema)]
    }

    /// Writes both files into `dir`.
    pub fn write_to(&self, dir: &Path) -> Result<(), DocsError> {
        for (name, contents) in self.files() {
            let path = dir.join(name);
            std::fs::write(&path, contents).map_err(|source| DocsError::Io { path, source })?;
        }
        Ok(())
    }

    /// The names of the files in `dir` whose contents differ from these (missing files count
    /// as different).
    pub fn stale_files(&self, dir: &Path) -> Result<Vec<&'static str>, DocsError> {
        let mut stale = Vec::new();
        for (name, contents) in self.files() {
            let path = dir.join(name);
            match std::fs::read_to_string(&path) {
                Ok(on_disk) if on_disk == contents => {}
                Ok(_) => stale.push(name),
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => stale.push(name),
                Err(source) => return Err(DocsError::Io { path, source }),
            }
        }
        Ok(stale)
    }
}

/// Generates both files from the crate's types.
pub fn generate() -> Result<GeneratedDocs, DocsError> {
    let reference = reference::Reference::build();
    let schema = reference.schema_document_text()?;
    let markdown = markdown::render(&reference)?;
    Ok(GeneratedDocs { markdown, schema })
}

/// The repository's `docs/` directory (beside this crate's directory), where the generated
/// files are committed.
pub fn repo_docs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("docs")
}
