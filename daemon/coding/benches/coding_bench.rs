//! Timings of the coding layer's hot paths on generated data: the edit matcher (exact match,
//! whitespace-tolerant match, a miss with candidate search) on a large file, and the `read`,
//! `grep` and `find` tools over a generated tree.
//!
//! Run with `cargo bench -p rein-coding --bench coding_bench`. Each case reports the median of
//! several runs.

use std::time::{Duration, Instant};

use rein_agent::{ToolInvocation, ToolUpdateSink};
use rein_coding::edit_match::{Replacement, apply_replacements};
use rein_coding::{FileLocks, ToolContext, coding_tools};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const RUNS: usize = 9;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn time<T>(name: &str, mut work: impl FnMut() -> T) {
    let samples: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            std::hint::black_box(work());
            start.elapsed()
        })
        .collect();
    println!("{name:<48} median {:>10.3} ms", median(samples).as_secs_f64() * 1e3);
}

fn source_file(lines: usize) -> String {
    (0..lines)
        .map(|i| format!("    let value_{i} = compute(input_{i}, {i}) + offset; // step {i}\n"))
        .collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let text = source_file(20_000);
    let exact = [Replacement::new("    let value_15000 = compute(input_15000, 15000)", "x")];
    time("edit_match exact, 20k lines", || apply_replacements(&text, &exact));
    let spaced = [Replacement::new("let  value_15000 =   compute(input_15000, 15000)", "x")];
    time("edit_match whitespace-tolerant, 20k lines", || apply_replacements(&text, &spaced));
    let missing = [Replacement::new("let value_15000 = compute(inptu_15000, 15001)", "x")];
    time("edit_match miss with candidates, 20k lines", || apply_replacements(&text, &missing));

    let dir = tempfile::tempdir()?;
    let cwd = dir.path().join("project");
    for d in 0..50 {
        let sub = cwd.join(format!("src/module_{d}"));
        std::fs::create_dir_all(&sub)?;
        for f in 0..20 {
            std::fs::write(sub.join(format!("file_{f}.rs")), source_file(200))?;
        }
    }
    std::fs::write(cwd.join("big.rs"), &text)?;
    let ctx = ToolContext::new(&cwd, FileLocks::new(), dir.path().join("out"));
    let tools = coding_tools(ctx);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let call = |name: &str, arguments: Value| {
        let tool = tools.iter().find(|t| t.name() == name).cloned();
        runtime.block_on(async move {
            let (updates, _rx) = ToolUpdateSink::channel();
            let invocation = ToolInvocation {
                call_id: "bench".into(),
                arguments,
                cancel: CancellationToken::new(),
                updates,
            };
            match tool {
                Some(tool) => Some(tool.execute(invocation).await),
                None => None,
            }
        })
    };
    time("read 2000 lines of a 20k-line file", || call("read", json!({"path": "big.rs"})));
    time("grep over 1000 files (4 MB), no match", || {
        call("grep", json!({"pattern": "no_such_[a-z]+_name"}))
    });
    time("find *.rs over 1000 files", || call("find", json!({"pattern": "*.rs"})));
    time("bash echo", || call("bash", json!({"command": "echo hi"})));
    Ok(())
}
