//! Regenerates `docs/protocol.md` and `docs/protocol.schema.json` from the protocol crate's
//! types. Run it after changing any wire type: `cargo run -p rein-protocol-docs`.

use rein_protocol_docs as docs;
use std::process::ExitCode;

fn main() -> ExitCode {
    let dir = docs::repo_docs_dir();
    let dir = dir.canonicalize().unwrap_or(dir);
    let result = docs::generate().and_then(|generated| {
        std::fs::create_dir_all(&dir)
            .map_err(|source| docs::DocsError::Io { path: dir.clone(), source })?;
        generated.write_to(&dir)
    });
    match result {
        Ok(()) => {
            println!(
                "wrote {} and {} in {}",
                docs::MARKDOWN_FILE,
                docs::SCHEMA_FILE,
                dir.display()
            );
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("gen-docs: {error}");
            ExitCode::FAILURE
        }
    }
}
