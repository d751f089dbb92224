//! `rein-fake-provider`: serves a scripted fake model provider on 127.0.0.1 for demos and
//! benchmarks.
//!
//! ```text
//! rein-fake-provider SCRIPT.json [--port PORT] [--loop] [--chunk-size BYTES] [--delay-ms MS]
//! ```
//!
//! The first line on stdout is the base URL to configure (`http://127.0.0.1:PORT/v1`), which
//! tells the chosen port when `--port 0` (the default) is given. The script format is
//! described in `rein_testkit::fake_provider`. Runs until interrupted.

use clap::Parser;
use rein_testkit::fake_provider::{FakeOptions, FakeProvider};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Serves a scripted fake model provider on 127.0.0.1.
#[derive(Debug, Parser)]
#[command(name = "rein-fake-provider", version)]
struct Args {
    /// The script: a JSON array of replies.
    script: PathBuf,
    /// Port to listen on; 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Start the script over when it runs out.
    #[arg(long = "loop")]
    loop_script: bool,
    /// Bytes per network write.
    #[arg(long)]
    chunk_size: Option<usize>,
    /// Pause before each write, in milliseconds.
    #[arg(long, default_value_t = 0)]
    delay_ms: u64,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let text = match std::fs::read_to_string(&args.script) {
        Ok(text) => text,
        Err(error) => {
            eprintln!("rein-fake-provider: cannot read {}: {error}", args.script.display());
            return ExitCode::FAILURE;
        }
    };
    let script = match FakeProvider::parse_script(&text) {
        Ok(script) => script,
        Err(error) => {
            eprintln!("rein-fake-provider: invalid script {}: {error}", args.script.display());
            return ExitCode::FAILURE;
        }
    };
    let options = FakeOptions {
        chunk_size: args.chunk_size,
        delay_ms: args.delay_ms,
        loop_script: args.loop_script,
        port: args.port,
        skip_validation: false,
    };
    let fake = match FakeProvider::start_with(script, options).await {
        Ok(fake) => fake,
        Err(error) => {
            eprintln!("rein-fake-provider: cannot listen on port {}: {error}", args.port);
            return ExitCode::FAILURE;
        }
    };
    let mut stdout = std::io::stdout();
    let _ = writeln!(stdout, "{}", fake.base_url());
    let _ = stdout.flush();
    if let Err(error) = tokio::signal::ctrl_c().await {
        eprintln!("rein-fake-provider: cannot wait for a signal: {error}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
