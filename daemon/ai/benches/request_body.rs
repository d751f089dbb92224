//! Request body encoding as history grows: the whole history encoded for every request,
//! against a harness's kept encoding (`rein_ai::EncodedHistory`), for a history of whole turns
//! (the next request after one more turn) and for one prompt followed by a run's tool loop
//! (the next request after one more call).
//!
//! Run with `cargo bench -p rein-ai --bench request_body`. Prints, per API and history length,
//! the time to encode one request body both ways (best and median of the rounds).

use rein_ai::wire::encode_body;
use rein_ai::{EncodedHistory, ProviderRequest, RequestContext, StreamOptions, compat};
use rein_protocol::message::Message;
use rein_protocol::model::{Api, ModelInfo};
use std::sync::Arc;
use std::time::{Duration, Instant};

const ROUNDS: usize = 7;

fn model(api: Api) -> ModelInfo {
    let mut model = rein_ai::catalog::model_info("bench", "test-model", api);
    model.images = false;
    model
}

/// Turn `n` of the growth benchmark's sessions, as `api` recorded it.
fn turn(api: Api, n: usize) -> [Arc<Message>; 4] {
    rein_testkit::history::turn(n, api.as_str(), "bench").map(Arc::new)
}

fn request(
    model: &ModelInfo,
    messages: &[Arc<Message>],
    encoded: Option<Arc<EncodedHistory>>,
) -> ProviderRequest {
    ProviderRequest {
        model: model.clone(),
        context: RequestContext {
            system_prompt: "You are a coding agent.".into(),
            messages: Arc::new(messages.to_vec()),
            tools: Arc::from([]),
            encoded,
        },
        options: StreamOptions::default(),
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// The best and the median of `times`, in ms.
fn best_and_median(mut times: Vec<Duration>) -> (f64, f64) {
    times.sort();
    (ms(times[0]), ms(times[times.len() / 2]))
}

/// A history's shape, the history, and what the next request adds to it.
type Shape = (&'static str, Vec<Arc<Message>>, Vec<Arc<Message>>);

/// One more step of a run's tool loop: a `bash` call and its output.
fn step(api: Api, n: usize) -> [Arc<Message>; 2] {
    let [_, call, output, _] = turn(api, n);
    [call, output]
}

fn main() {
    println!("| API | history | messages | body | whole: best / median | kept: best / median |");
    println!("| --- | --- | --- | --- | --- | --- |");
    for api in [Api::OpenAiChat, Api::OpenAiResponses, Api::Anthropic] {
        let model = model(api);
        let compat = compat::for_model(&model);
        for turns in [250, 2_500, 25_000] {
            // Whole turns, the next request after one more turn; or one prompt and a run's
            // tool loop, the next request after one more call.
            let shapes: [Shape; 2] = [
                ("turns", (0..turns).flat_map(|n| turn(api, n)).collect(), turn(api, turns).into()),
                (
                    "one run",
                    std::iter::once(turn(api, 0)[0].clone())
                        .chain((0..turns * 2).flat_map(|n| step(api, n)))
                        .collect(),
                    step(api, turns * 2).into(),
                ),
            ];
            for (shape, history, next) in shapes {
                let mut grown = history.clone();
                grown.extend(next);
                let (mut whole, mut kept) = (Vec::new(), Vec::new());
                let mut size = 0;
                for _ in 0..ROUNDS {
                    let started = Instant::now();
                    let body = encode_body(&request(&model, &grown, None), &compat);
                    whole.push(started.elapsed());
                    size = body.map_or(0, |body| body.len());
                    // The request before, untimed, leaves the settled history kept.
                    let encoded = Arc::new(EncodedHistory::new());
                    let _ = encode_body(&request(&model, &history, Some(encoded.clone())), &compat);
                    let grown_request = request(&model, &grown, Some(encoded));
                    let started = Instant::now();
                    let body = encode_body(&grown_request, &compat);
                    kept.push(started.elapsed());
                    assert_eq!(body.map_or(0, |body| body.len()), size, "the same body either way");
                }
                let (whole, kept) = (best_and_median(whole), best_and_median(kept));
                println!(
                    "| `{}` | {shape} | {} | {:.1} MB | {:.2} / {:.2} ms | {:.2} / {:.2} ms |",
                    api.as_str(),
                    grown.len(),
                    size as f64 / 1e6,
                    whole.0,
                    whole.1,
                    kept.0,
                    kept.1
                );
            }
        }
    }
}
