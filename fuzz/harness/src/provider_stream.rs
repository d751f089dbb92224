//! The SSE parser and each provider's stream assembly: what a model's HTTP body goes through.
//!
//! Input layout: byte 0 picks the wire API (Chat Completions, Responses, Anthropic), byte 1
//! the size of the network reads, the rest is the response body. The body is assembled with
//! [`rein_ai::wire::assemble`] (the providers' own parser, decoder and message builder) twice:
//! in one read and in reads of the chosen size. Checked: nothing panics, and the outcome does
//! not depend on how the body was cut (the same message and delta count, or a failure of the
//! same kind), since the network may cut a stream anywhere.

use bytes::Bytes;
use rein_ai::ProviderErrorKind;
use rein_ai::wire::assemble;
use rein_protocol::message::AssistantMessage;
use rein_protocol::model::{Api, ModelCost, ModelInfo};
use std::convert::Infallible;

/// The three wire APIs, in the order byte 0 picks them.
pub const APIS: [Api; 3] = [Api::OpenAiChat, Api::OpenAiResponses, Api::Anthropic];

/// Runs the stream checks on one input.
pub fn check(data: &[u8]) {
    let (Some(&api), Some(&read)) = (data.first(), data.get(1)) else { return };
    let api = APIS[usize::from(api) % APIS.len()];
    let read_size = usize::from(read % 64) + 1;
    let body = &data[2..];
    let whole = run(api, body, body.len().max(1));
    let pieces = run(api, body, read_size);
    match (&whole, &pieces) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "{api:?}: the message depends on the reads"),
        (Err(a), Err(b)) => assert_eq!(a, b, "{api:?}: the failure depends on the reads"),
        _ => panic!("{api:?}: one read gives {whole:?}, {read_size}-byte reads give {pieces:?}"),
    }
}

/// Assembles `body` of `api` delivered in reads of `read_size` bytes.
pub fn run(
    api: Api,
    body: &[u8],
    read_size: usize,
) -> Result<(AssistantMessage, usize), ProviderErrorKind> {
    let reads: Vec<Result<Bytes, Infallible>> =
        body.chunks(read_size).map(|c| Ok(Bytes::copy_from_slice(c))).collect();
    futures::executor::block_on(assemble(&model(api), futures::stream::iter(reads)))
        .map_err(|failure| failure.kind)
}

/// A reasoning model of `api` with prices, so usage and cost are computed too.
pub fn model(api: Api) -> ModelInfo {
    ModelInfo {
        provider: "fuzz".into(),
        id: "fuzz-model".into(),
        name: String::new(),
        api,
        context_window: 200_000,
        max_output_tokens: 32_000,
        images: true,
        reasoning: true,
        cost: ModelCost { input: 3.0, output: 15.0, cache_read: 0.3, cache_write: 3.75 },
        known: true,
    }
}
