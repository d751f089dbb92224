//! What differs between the three wire APIs, behind one switch: the endpoint, the auth
//! headers, the request body and the stream decoder.

use crate::anthropic::{self, AnthropicDecoder};
use crate::assemble::MessageBuilder;
use crate::compat::{self, Compat};
use crate::encoded_history::{EncodeItems, Encoded, SegmentStart};
use crate::failure::Failure;
use crate::openai_chat::{self, ChatDecoder};
use crate::openai_responses::{self, ResponsesDecoder};
use crate::provider::{ProviderErrorKind, ProviderRequest};
use bytes::Bytes;
use eventsource_stream::Eventsource;
use futures::{Stream, StreamExt};
use rein_protocol::message::AssistantMessage;
use rein_protocol::model::{Api, ModelInfo};
use serde_json::Value;

/// What a decoder wants after an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Keep reading.
    Continue,
    /// The terminal event arrived: the message is complete.
    Done,
}

/// The URL a request to `api` is posted to, under `base_url` (which ends with the version
/// segment, e.g. `https://api.openai.com/v1`).
pub fn endpoint(api: Api, base_url: &str) -> String {
    let base = base_url.trim_end_matches('/');
    match api {
        Api::OpenAiChat => format!("{base}/chat/completions"),
        Api::OpenAiResponses => format!("{base}/responses"),
        Api::Anthropic => format!("{base}/messages"),
    }
}

/// The JSON request body for the model's API, with the catalog's compatibility settings.
pub fn request_body(request: &ProviderRequest) -> Value {
    request_body_with(request, &compat::for_model(&request.model))
}

/// The JSON request body for the model's API, with the given compatibility settings.
pub fn request_body_with(request: &ProviderRequest, compat: &Compat) -> Value {
    match request.model.api {
        Api::OpenAiChat => openai_chat::request_body(request, compat),
        Api::OpenAiResponses => openai_responses::request_body(request, compat),
        Api::Anthropic => anthropic::request_body(request, compat),
    }
}

/// The request body for the model's API, serialized straight from the request's history (no
/// JSON tree in between): what is sent.
///
/// With the request's [`EncodedHistory`](crate::EncodedHistory), only what was appended since
/// the one before is encoded; the bytes are the same either way.
pub fn encode_body(request: &ProviderRequest, compat: &Compat) -> serde_json::Result<Vec<u8>> {
    let (model, messages) = (&request.model, request.context.messages.as_slice());
    let Some(kept) = &request.context.encoded else {
        return encode_body_after(request, compat, Encoded::NONE);
    };
    let (starts_segment, items): (SegmentStart, EncodeItems) = match model.api {
        Api::OpenAiChat => (openai_chat::starts_segment, openai_chat::encoded_items),
        Api::OpenAiResponses => (openai_responses::starts_segment, openai_responses::encoded_items),
        Api::Anthropic => (anthropic::starts_segment, anthropic::encoded_items),
    };
    kept.encode(
        messages,
        model,
        compat,
        starts_segment,
        |segment| items(segment, model, compat),
        |encoded| encode_body_after(request, compat, encoded),
    )
}

/// Room for what a body holds besides the kept history (the tool definitions, the system
/// prompt, the latest messages), so that writing it rarely grows the buffer.
const BODY_ROOM: usize = 64 * 1024;

/// The request body with the history's first `encoded.messages` messages already encoded.
fn encode_body_after(
    request: &ProviderRequest,
    compat: &Compat,
    encoded: Encoded<'_>,
) -> serde_json::Result<Vec<u8>> {
    let mut body = Vec::with_capacity(encoded.bytes + encoded.items.len() + BODY_ROOM);
    match request.model.api {
        Api::OpenAiChat => {
            serde_json::to_writer(&mut body, &openai_chat::body_after(request, compat, encoded))
        }
        Api::OpenAiResponses => serde_json::to_writer(
            &mut body,
            &openai_responses::body_after(request, compat, encoded),
        ),
        Api::Anthropic => {
            serde_json::to_writer(&mut body, &anthropic::body_after(request, compat, encoded))
        }
    }?;
    Ok(body)
}

/// The headers that carry the API key (and the API version, for Anthropic).
pub fn auth_headers(api: Api, key: Option<&str>) -> Vec<(&'static str, String)> {
    let mut headers = Vec::new();
    match api {
        Api::OpenAiChat | Api::OpenAiResponses => {
            if let Some(key) = key {
                headers.push(("authorization", format!("Bearer {key}")));
            }
        }
        Api::Anthropic => {
            headers.push(("anthropic-version", anthropic::API_VERSION.to_string()));
            if let Some(key) = key {
                headers.push(("x-api-key", key.to_string()));
            }
        }
    }
    headers
}

/// Turns one API's SSE events into message content.
#[derive(Debug)]
pub enum Decoder {
    /// Chat Completions.
    Chat(ChatDecoder),
    /// Responses.
    Responses(ResponsesDecoder),
    /// Anthropic Messages.
    Anthropic(AnthropicDecoder),
}

impl Decoder {
    /// A fresh decoder for `api`.
    pub fn new(api: Api) -> Self {
        match api {
            Api::OpenAiChat => Self::Chat(ChatDecoder::default()),
            Api::OpenAiResponses => Self::Responses(ResponsesDecoder::default()),
            Api::Anthropic => Self::Anthropic(AnthropicDecoder::default()),
        }
    }

    /// Feeds one SSE event: its `event:` name (`message` when absent) and its data.
    pub fn on_event(
        &mut self,
        name: &str,
        data: &str,
        out: &mut MessageBuilder,
    ) -> Result<Step, Failure> {
        match self {
            Self::Chat(decoder) => decoder.on_data(data, out),
            Self::Responses(decoder) => decoder.on_data(data, out),
            Self::Anthropic(decoder) => decoder.on_event(name, data, out),
        }
    }
}

/// The SSE events of a response body.
///
/// Network reads are first cut after each event's blank line before `eventsource-stream`
/// sees them: its parser copies the rest of its buffer after every line, so a read holding
/// many small events would cost time quadratic in the read's size. Cutting is free (`Bytes`
/// slices share memory), and a read that ends inside an event (or inside a UTF-8 character)
/// is still joined by the parser.
pub fn sse_events<S, E>(
    bytes: S,
) -> impl Stream<Item = Result<eventsource_stream::Event, eventsource_stream::EventStreamError<E>>>
where
    S: Stream<Item = Result<Bytes, E>>,
{
    bytes.flat_map(|read| futures::stream::iter(cut_at_event_ends(read))).eventsource()
}

fn cut_at_event_ends<E>(read: Result<Bytes, E>) -> Vec<Result<Bytes, E>> {
    let bytes = match read {
        Ok(bytes) => bytes,
        Err(error) => return vec![Err(error)],
    };
    let mut pieces = Vec::new();
    let mut piece_start = 0;
    let mut line_start = 0;
    for (end, _) in bytes.iter().enumerate().filter(|(_, b)| **b == b'\n') {
        let line = &bytes[line_start..end];
        // A blank line ends an event: cut after it.
        if line.is_empty() || line == b"\r" {
            pieces.push(Ok(bytes.slice(piece_start..end + 1)));
            piece_start = end + 1;
        }
        line_start = end + 1;
    }
    if piece_start < bytes.len() {
        pieces.push(Ok(bytes.slice(piece_start..)));
    }
    pieces
}

/// The error for a stream that ended before its terminal event.
pub fn unterminated() -> Failure {
    Failure::protocol("the stream ended before its terminal event")
}

/// Decodes a whole SSE byte stream of `model`'s API in process, without HTTP: the parser and
/// assembler the providers use, exposed for benchmarks and tests. Returns the message and the
/// number of deltas it streamed.
pub async fn assemble<S, E>(
    model: &ModelInfo,
    bytes: S,
) -> Result<(AssistantMessage, usize), Failure>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
    E: std::fmt::Display,
{
    let mut builder = MessageBuilder::new(model, 0);
    let mut decoder = Decoder::new(model.api);
    let mut events = std::pin::pin!(sse_events(bytes));
    let mut deltas = 0;
    while let Some(event) = events.next().await {
        let event = event.map_err(|e| {
            Failure::transient(ProviderErrorKind::Network, format!("stream failed: {e}"))
        })?;
        let step = decoder.on_event(&event.event, &event.data, &mut builder)?;
        deltas += builder.take_deltas().len();
        if step == Step::Done {
            let message = builder.finish();
            return Ok((message, deltas));
        }
    }
    Err(unterminated())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{RequestContext, StreamOptions};
    use rein_protocol::message::{
        AssistantMessage, ContentBlock, Message, StopReason, ToolCall, ToolResultMessage,
        UserMessage,
    };
    use rein_protocol::model::{ModelCost, ThinkingLevel};
    use serde_json::json;
    use std::convert::Infallible;
    use std::sync::Arc;

    fn model(api: Api) -> ModelInfo {
        ModelInfo {
            provider: "p".into(),
            id: "m".into(),
            name: String::new(),
            api,
            context_window: 1000,
            max_output_tokens: 500,
            images: false,
            reasoning: true,
            cost: ModelCost::default(),
            known: true,
        }
    }

    /// Feeds `text` in pieces of `size` bytes (splitting UTF-8 characters on purpose).
    fn run(api: Api, text: &str, size: usize) -> Result<AssistantMessage, Failure> {
        let chunks: Vec<Result<Bytes, Infallible>> =
            text.as_bytes().chunks(size).map(|c| Ok(Bytes::copy_from_slice(c))).collect();
        futures::executor::block_on(assemble(&model(api), futures::stream::iter(chunks)))
            .map(|(message, _)| message)
    }

    #[test]
    fn chat_reads_reasoning_comments_usage_only_chunks_and_reused_indexes() {
        let stream = concat!(
            ": OPENROUTER PROCESSING\r\n\r\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning\":\"th\"}}]}\r\n\r\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"h\u{e9}\"}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",",
            "\"function\":{\"name\":\"x\",\"arguments\":\"{\\\"k\\\"\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,",
            "\"function\":{\"arguments\":\":1}\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"b\",",
            "\"function\":{\"name\":\"y\",\"arguments\":\"{}\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":3,",
            "\"total_tokens\":12,\"prompt_tokens_details\":{\"cached_tokens\":4}}}\n\n",
            "data: [DONE]\n\n",
        );
        for size in [1, 2, 7, 4096] {
            let message = run(Api::OpenAiChat, stream, size).unwrap();
            assert_eq!(
                message.content[0],
                ContentBlock::Thinking { thinking: "th".into(), signature: None, redacted: false }
            );
            assert_eq!(message.content[1], ContentBlock::text("hé"));
            assert_eq!(
                message.content[2],
                ContentBlock::ToolCall(ToolCall {
                    id: "a".into(),
                    name: "x".into(),
                    arguments: json!({"k": 1})
                })
            );
            assert_eq!(
                message.content[3],
                ContentBlock::ToolCall(ToolCall {
                    id: "b".into(),
                    name: "y".into(),
                    arguments: json!({})
                })
            );
            assert_eq!(
                (message.usage.input, message.usage.cache_read, message.usage.output),
                (5, 4, 3)
            );
            assert_eq!(message.stop_reason, StopReason::ToolUse);
        }
    }

    #[test]
    fn a_stream_without_its_terminal_event_is_an_error() {
        let chat = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\n";
        let failure = run(Api::OpenAiChat, chat, 5).unwrap_err();
        assert_eq!(failure.kind, ProviderErrorKind::Protocol);
        let anthropic = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1}}}\n\n";
        assert_eq!(
            run(Api::Anthropic, anthropic, 3).unwrap_err().kind,
            ProviderErrorKind::Protocol
        );
    }

    #[test]
    fn errors_inside_streams_are_classified() {
        let chat = "data: {\"error\":{\"message\":\"This model's maximum context length is 10 tokens\"}}\n\n";
        assert_eq!(
            run(Api::OpenAiChat, chat, 64).unwrap_err().kind,
            ProviderErrorKind::ContextOverflow
        );
        let anthropic = "event: ping\ndata: {\"type\":\"ping\"}\n\nevent: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
        let failure = run(Api::Anthropic, anthropic, 64).unwrap_err();
        assert!(failure.retryable && failure.message.contains("Overloaded"));
        let responses = "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"error\":{\"code\":\"context_length_exceeded\",\"message\":\"Your input exceeds the context window of this model.\"}}}\n\n";
        assert_eq!(
            run(Api::OpenAiResponses, responses, 64).unwrap_err().kind,
            ProviderErrorKind::ContextOverflow
        );
        let garbage = "data: {not json\n\n";
        assert_eq!(
            run(Api::OpenAiChat, garbage, 64).unwrap_err().kind,
            ProviderErrorKind::Protocol
        );
    }

    #[test]
    fn responses_separates_summary_parts() {
        let events = [
            json!({"type":"response.output_item.added","output_index":0,"item":{"type":"reasoning","id":"rs"}}),
            json!({"type":"response.reasoning_summary_text.delta","output_index":0,"summary_index":0,"delta":"one"}),
            json!({"type":"response.reasoning_summary_text.delta","output_index":0,"summary_index":1,"delta":"two"}),
            json!({"type":"response.output_item.done","output_index":0,"item":{"type":"reasoning","id":"rs","summary":[]}}),
            json!({"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":3,"output_tokens":2,"total_tokens":5}}}),
        ];
        let text: String = events
            .iter()
            .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
            .collect();
        let message = run(Api::OpenAiResponses, &text, 10).unwrap();
        match &message.content[0] {
            ContentBlock::Thinking { thinking, signature, .. } => {
                assert_eq!(thinking, "one\n\ntwo");
                assert!(signature.as_deref().unwrap().contains("\"rs\""));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(message.usage.total_tokens, 5);
    }

    fn request(api: Api, thinking: ThinkingLevel, reasoning: bool) -> ProviderRequest {
        let mut model = model(api);
        model.reasoning = reasoning;
        ProviderRequest {
            model,
            context: RequestContext::default(),
            options: StreamOptions { thinking, temperature: Some(0.5), ..StreamOptions::default() },
        }
    }

    #[test]
    fn thinking_levels_reach_only_reasoning_models() {
        let body = request_body(&request(Api::OpenAiChat, ThinkingLevel::High, true));
        assert_eq!(body["reasoning_effort"], "high");
        assert_eq!(body["stream_options"]["include_usage"], true);
        let body = request_body(&request(Api::OpenAiChat, ThinkingLevel::High, false));
        assert!(body.get("reasoning_effort").is_none());
        let body = request_body(&request(Api::OpenAiResponses, ThinkingLevel::Low, true));
        assert_eq!(body["reasoning"]["effort"], "low");
        assert_eq!(body["include"][0], "reasoning.encrypted_content");
        assert_eq!(body["store"], false);
        let mut medium = request(Api::Anthropic, ThinkingLevel::Medium, true);
        medium.model.max_output_tokens = 64_000;
        medium.options.max_tokens = Some(500);
        let body = request_body(&medium);
        assert_eq!(body["thinking"]["budget_tokens"], 8192);
        assert_eq!(body["max_tokens"], 8192 + 1024);
        assert!(body.get("temperature").is_none());
        let body = request_body(&request(Api::Anthropic, ThinkingLevel::Off, true));
        assert_eq!(body["max_tokens"], 500);
        assert_eq!(body["temperature"], 0.5);
        // A 500-token limit has no room for the smallest budget: thinking stays off.
        let body = request_body(&request(Api::Anthropic, ThinkingLevel::Medium, true));
        assert!(body.get("thinking").is_none() && body["max_tokens"] == 500, "{body}");
    }

    #[test]
    fn max_tokens_stay_within_the_catalog_output_limit() {
        // Claude Opus 4.1 writes at most 32,000 tokens; the xhigh budget alone is 32,000.
        let opus = crate::catalog::model_info("anthropic", "claude-opus-4-1", Api::Anthropic);
        let request = ProviderRequest {
            model: opus,
            context: RequestContext::default(),
            options: StreamOptions { thinking: ThinkingLevel::Xhigh, ..StreamOptions::default() },
        };
        let body = request_body(&request);
        let max = body["max_tokens"].as_u64().unwrap();
        let budget = body["thinking"]["budget_tokens"].as_u64().unwrap();
        assert!(max <= 32_000 && budget < max && budget >= 1024, "{body}");
        // The OpenAI APIs: a requested cap above the limit is lowered to it.
        let mut chat = request.clone();
        chat.model = crate::catalog::model_info("groq", "llama-3.3-70b-versatile", Api::OpenAiChat);
        chat.options.max_tokens = Some(100_000);
        assert_eq!(request_body(&chat)["max_tokens"], 32_768);
        let mut responses = request;
        responses.model = crate::catalog::model_info("openai", "gpt-4.1", Api::OpenAiResponses);
        responses.options.max_tokens = Some(1_000_000);
        assert_eq!(request_body(&responses)["max_output_tokens"], 32_768);
    }

    fn assistant_turn(model: &ModelInfo, content: Vec<ContentBlock>) -> Message {
        Message::Assistant(AssistantMessage {
            content,
            api: model.api.as_str().into(),
            provider: model.provider.clone(),
            model: model.id.clone(),
            usage: Default::default(),
            stop_reason: StopReason::ToolUse,
            error_message: None,
            timestamp: 0,
        })
    }

    fn tool_loop(model: &ModelInfo, first: Vec<ContentBlock>) -> ProviderRequest {
        let call_id = first
            .iter()
            .find_map(|b| match b {
                ContentBlock::ToolCall(call) => Some(call.id.clone()),
                _ => None,
            })
            .unwrap();
        ProviderRequest {
            model: model.clone(),
            context: RequestContext {
                system_prompt: String::new(),
                messages: RequestContext::shared_history([
                    Message::User(UserMessage::text("list files", 0)),
                    assistant_turn(model, first),
                    Message::ToolResult(ToolResultMessage {
                        tool_call_id: call_id,
                        tool_name: "bash".into(),
                        content: vec![ContentBlock::text("a.rs")],
                        is_error: false,
                        details: None,
                        timestamp: 0,
                    }),
                ]),
                tools: Arc::from([]),
                encoded: None,
            },
            options: StreamOptions::default(),
        }
    }

    fn bash_call(id: &str) -> ContentBlock {
        ContentBlock::ToolCall(ToolCall {
            id: id.into(),
            name: "bash".into(),
            arguments: json!({}),
        })
    }

    #[test]
    fn stateless_responses_replay_only_reasoning_the_server_can_resolve() {
        let gpt5 = crate::catalog::model_info("openai", "gpt-5", Api::OpenAiResponses);
        // A reasoning item as a server returns it when encrypted content was not asked for.
        let bare = json!({"type": "reasoning", "id": "rs_1", "summary": []}).to_string();
        let request = tool_loop(
            &gpt5,
            vec![
                ContentBlock::Thinking {
                    thinking: String::new(),
                    signature: Some(bare),
                    redacted: false,
                },
                bash_call("call_1|fc_1"),
            ],
        );
        let body = request_body(&request);
        let input = body["input"].as_array().unwrap();
        assert!(input.iter().all(|item| item["type"] != "reasoning"), "{body}");
        let call = input.iter().find(|item| item["type"] == "function_call").unwrap();
        assert!(call.get("id").is_none(), "an fc_ id without its reasoning item: {call}");
        // Encrypted content is asked for at every thinking level, `off` included.
        assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
        // With encrypted content the item and the fc_ id go back.
        let full = json!({"type": "reasoning", "id": "rs_1", "summary": [],
            "encrypted_content": "gAAA"})
        .to_string();
        let request = tool_loop(
            &gpt5,
            vec![
                ContentBlock::Thinking {
                    thinking: String::new(),
                    signature: Some(full),
                    redacted: false,
                },
                bash_call("call_1|fc_1"),
            ],
        );
        let body = request_body(&request);
        assert_eq!(body["input"][1]["encrypted_content"], "gAAA");
        assert_eq!(body["input"][2]["id"], "fc_1");
    }

    #[test]
    fn deepseek_tool_call_turns_carry_their_reasoning_content() {
        let reasoner = crate::catalog::model_info("deepseek", "deepseek-reasoner", Api::OpenAiChat);
        let thinking =
            ContentBlock::Thinking { thinking: "need ls".into(), signature: None, redacted: false };
        let body = request_body(&tool_loop(&reasoner, vec![thinking, bash_call("call_1")]));
        assert_eq!(body["messages"][1]["reasoning_content"], "need ls", "{body}");
        // Required even when the turn had no reasoning.
        let body = request_body(&tool_loop(&reasoner, vec![bash_call("call_1")]));
        assert_eq!(body["messages"][1]["reasoning_content"], "", "{body}");
        // Other servers get no such field.
        let local = crate::catalog::model_info("local", "qwen3", Api::OpenAiChat);
        let body = request_body(&tool_loop(&local, vec![bash_call("call_1")]));
        assert!(body["messages"][1].get("reasoning_content").is_none(), "{body}");
    }

    #[test]
    fn anthropic_tool_results_of_only_whitespace_are_sent_as_no_output() {
        let model = model(Api::Anthropic);
        let mut request = tool_loop(&model, vec![bash_call("toolu_1")]);
        if let Some(Message::ToolResult(result)) =
            Arc::make_mut(&mut request.context.messages).last_mut().map(Arc::make_mut)
        {
            result.content = vec![ContentBlock::text("  \n")];
        }
        let body = request_body(&request);
        assert_eq!(body["messages"][2]["content"][0]["content"][0]["text"], "(no output)");
    }

    #[test]
    fn compat_settings_drop_parameters_and_rename_the_output_cap() {
        let mut request = request(Api::OpenAiChat, ThinkingLevel::High, true);
        request.options.max_tokens = Some(100);
        let off =
            Compat { stream_usage: false, reasoning_effort: false, ..compat::OPENAI_REASONING };
        let body = request_body_with(&request, &off);
        assert!(body.get("stream_options").is_none() && body.get("reasoning_effort").is_none());
        assert!(body.get("max_tokens").is_none() && body["max_completion_tokens"] == 100);
    }

    #[test]
    fn chat_deltas_with_nulls_parts_and_both_reasoning_names_are_read() {
        let stream = concat!(
            // SGLang writes every unset field as null.
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":null,\"content\":\"a\",",
            "\"reasoning_content\":null,\"tool_calls\":null,\"function_call\":null},",
            "\"finish_reason\":null}],\"usage\":null}\n\n",
            // An empty reasoning_content next to a real `reasoning`.
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"\",",
            "\"reasoning\":\"hm\"}}]}\n\n",
            // Mistral's typed content parts.
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":[{\"type\":\"thinking\",",
            "\"thinking\":[{\"type\":\"text\",\"text\":\"t\"}]},{\"type\":\"text\",\"text\":\"b\"}]}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"content_filter\"}]}\n\n",
            "data: [DONE]\n\n",
        );
        let message = run(Api::OpenAiChat, stream, 9).unwrap();
        assert_eq!(message.text(), "ab");
        let thinking: String = message
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Thinking { thinking, .. } => Some(thinking.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(thinking, "hmt");
        assert_eq!(message.stop_reason, StopReason::ContentFilter);
    }

    #[test]
    fn responses_events_with_non_text_deltas_are_skipped() {
        let events = [
            json!({"type":"response.mcp_call_arguments.delta","output_index":0,"delta":{"q":1}}),
            json!({"type":"response.output_text.delta","output_index":1,"delta":"ok"}),
            json!({"type":"response.incomplete","response":{"status":"incomplete",
                "incomplete_details":{"reason":"content_filter"}}}),
        ];
        let text: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
        let message = run(Api::OpenAiResponses, &text, 7).unwrap();
        assert_eq!(message.text(), "ok");
        assert_eq!(message.stop_reason, StopReason::ContentFilter);
    }

    #[test]
    fn anthropic_events_without_event_lines_are_read_by_their_type() {
        let events = [
            json!({"type":"message_start","message":{"usage":{"input_tokens":3}}}),
            json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
            json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}),
            json!({"type":"message_delta","delta":{"stop_reason":"refusal"},"usage":{"output_tokens":1}}),
            json!({"type":"message_stop"}),
        ];
        let text: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
        let message = run(Api::Anthropic, &text, 5).unwrap();
        assert_eq!(message.text(), "hi");
        assert_eq!(message.stop_reason, StopReason::ContentFilter);
    }

    #[test]
    fn reads_are_cut_after_each_event() {
        let read = Bytes::from_static(b"data: a\n\nevent: x\r\ndata: b\r\n\r\ndata: par");
        let pieces: Vec<Bytes> =
            cut_at_event_ends::<Infallible>(Ok(read)).into_iter().map(|p| p.unwrap()).collect();
        assert_eq!(
            pieces,
            vec![
                Bytes::from_static(b"data: a\n\n"),
                Bytes::from_static(b"event: x\r\ndata: b\r\n\r\n"),
                Bytes::from_static(b"data: par"),
            ]
        );
    }

    #[test]
    fn endpoints_and_auth_headers() {
        assert_eq!(endpoint(Api::Anthropic, "http://h/v1/"), "http://h/v1/messages");
        assert_eq!(endpoint(Api::OpenAiChat, "http://h/v1"), "http://h/v1/chat/completions");
        assert_eq!(endpoint(Api::OpenAiResponses, "http://h/v1"), "http://h/v1/responses");
        assert!(auth_headers(Api::OpenAiChat, None).is_empty());
        assert_eq!(auth_headers(Api::Anthropic, None).len(), 1);
    }
}
