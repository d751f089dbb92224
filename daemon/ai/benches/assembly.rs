//! Assembly throughput: a large SSE stream of small deltas, fed in process through the same
//! SSE parser, decoder and message builder the providers use (no HTTP).
//!
//! Run with `cargo bench -p rein-ai --bench assembly`. Prints MB/s of SSE input per API.

use bytes::Bytes;
use rein_ai::wire::assemble;
use rein_protocol::model::{Api, ModelCost, ModelInfo};
use rein_testkit::fake_provider::encode::{self, WireFormat};
use rein_testkit::fake_provider::{Reply, ScriptToolCall};
use serde_json::json;
use std::convert::Infallible;
use std::time::Instant;

/// Bytes per simulated network read.
const READ_SIZE: usize = 16 * 1024;
const ROUNDS: usize = 5;

fn model(api: Api) -> ModelInfo {
    ModelInfo {
        provider: "bench".into(),
        id: "bench-model".into(),
        name: String::new(),
        api,
        context_window: 1_000_000,
        max_output_tokens: 100_000,
        images: false,
        reasoning: true,
        cost: ModelCost { input: 1.0, output: 2.0, cache_read: 0.1, cache_write: 0.0 },
        known: true,
    }
}

/// A reply of about 1.5 MB of text and thinking plus a large tool call, in 4-character deltas.
fn reply() -> Reply {
    let text: String = "The quick brown fox jumps over the lazy dog; ünïcödé ok. ".repeat(12_000);
    let thinking: String = "hmm, consider the options carefully. ".repeat(6_000);
    let content: String = "fn main() { println!(\"hi\"); }\n".repeat(4_000);
    Reply {
        thinking: Some(thinking),
        text: Some(text),
        tool_calls: vec![ScriptToolCall {
            id: Some("call_1".into()),
            name: "write".into(),
            arguments: json!({"path": "src/main.rs", "content": content}),
            raw_arguments: None,
        }],
        delta_size: Some(4),
        ..Reply::default()
    }
}

fn main() {
    let runtime = match tokio::runtime::Builder::new_current_thread().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("cannot start a runtime: {error}");
            std::process::exit(1);
        }
    };
    let reply = reply();
    println!("api               input MB   events   deltas   best MB/s   mean MB/s");
    for (api, format) in [
        (Api::OpenAiChat, WireFormat::Chat),
        (Api::OpenAiResponses, WireFormat::Responses),
        (Api::Anthropic, WireFormat::Anthropic),
    ] {
        let mut n = 0;
        let mut ids = move || {
            n += 1;
            n
        };
        let events = encode::stream(format, &reply, "bench-model", &mut ids);
        let bytes: Vec<u8> = events.concat();
        let chunks: Vec<Bytes> = bytes.chunks(READ_SIZE).map(Bytes::copy_from_slice).collect();
        let model = model(api);
        let mut rates = Vec::new();
        let mut delta_count = 0;
        for _ in 0..ROUNDS {
            let input = futures::stream::iter(chunks.clone().into_iter().map(Ok::<_, Infallible>));
            let start = Instant::now();
            let result = runtime.block_on(assemble(&model, input));
            let elapsed = start.elapsed().as_secs_f64();
            match result {
                Ok((message, deltas)) => {
                    assert_eq!(message.content.len(), 3, "every block assembled");
                    delta_count = deltas;
                }
                Err(failure) => {
                    eprintln!("{api}: assembly failed: {}", failure.message);
                    std::process::exit(1);
                }
            }
            rates.push(bytes.len() as f64 / 1e6 / elapsed);
        }
        let best = rates.iter().cloned().fold(0.0, f64::max);
        let mean = rates.iter().sum::<f64>() / rates.len() as f64;
        println!(
            "{:<17} {:>8.1} {:>8} {:>8} {:>11.1} {:>11.1}",
            api.as_str(),
            bytes.len() as f64 / 1e6,
            events.len(),
            delta_count,
            best,
            mean
        );
    }
}
