//! Asking a model for a summary: the transcript given to it and the one-shot request. Used by
//! compaction and by branch summaries.

use futures::StreamExt;
use rein_ai::{AssistantMessageEvent, Provider, ProviderErrorKind, ProviderRequest};
use rein_ai::{RequestContext, StreamOptions};
use rein_protocol::message::{ContentBlock, Message, Usage, UserMessage};
use rein_protocol::model::{ModelInfo, ThinkingLevel};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

use crate::error::SessionError;
use crate::ids::now_millis;

/// Longest tool result text put into a transcript, in characters; longer ones are cut.
const TOOL_RESULT_CHARS: usize = 2_000;

/// The system prompt of every summary request.
pub const SUMMARY_SYSTEM_PROMPT: &str = "You write summaries of conversations between a user and \
     a coding agent, so that the work can continue from the summary alone. Do not continue the \
     conversation and do not answer any request in it: only write the summary, in the format \
     asked for.";

/// The model a summary is asked of, and how.
#[derive(Clone, Copy)]
pub struct SummaryModel<'a> {
    /// The provider to ask.
    pub provider: &'a dyn Provider,
    /// The model to ask.
    pub model: &'a ModelInfo,
    /// Most output tokens for the summary (capped at the model's maximum).
    pub max_tokens: u64,
    /// Cancels the request.
    pub cancel: &'a CancellationToken,
}

impl std::fmt::Debug for SummaryModel<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SummaryModel")
            .field("model", &self.model.id)
            .field("max_tokens", &self.max_tokens)
            .finish_non_exhaustive()
    }
}

/// Renders messages as plain text for a summary prompt: one block per message, labelled by
/// role; tool calls with their arguments; long tool output cut.
pub fn transcript(messages: &[Message]) -> String {
    let mut out = String::new();
    for message in messages {
        match message {
            Message::User(user) => push_block(&mut out, "User", &blocks_text(&user.content)),
            Message::Assistant(assistant) => {
                for block in &assistant.content {
                    match block {
                        ContentBlock::Text { text } => push_block(&mut out, "Assistant", text),
                        ContentBlock::Thinking { thinking, .. } if !thinking.is_empty() => {
                            push_block(&mut out, "Assistant thinking", thinking);
                        }
                        ContentBlock::ToolCall(call) => {
                            let text = format!("{}({})", call.name, call.arguments);
                            push_block(&mut out, "Assistant tool call", &text);
                        }
                        _ => {}
                    }
                }
            }
            Message::ToolResult(result) => {
                let label = if result.is_error {
                    format!("Tool result ({}, error)", result.tool_name)
                } else {
                    format!("Tool result ({})", result.tool_name)
                };
                push_block(
                    &mut out,
                    &label,
                    &cut(&blocks_text(&result.content), TOOL_RESULT_CHARS),
                );
            }
        }
    }
    out
}

fn push_block(out: &mut String, label: &str, text: &str) {
    out.push('[');
    out.push_str(label);
    out.push_str("]: ");
    out.push_str(text);
    out.push_str("\n\n");
}

fn blocks_text(blocks: &[ContentBlock]) -> String {
    blocks
        .iter()
        .map(|block| match block {
            ContentBlock::Text { text } => text.as_str(),
            ContentBlock::Image { .. } => "[image]",
            _ => "",
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn cut(text: &str, max_chars: usize) -> String {
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(max_chars).collect();
    let rest = chars.count();
    if rest == 0 { head } else { format!("{head}\n[... {rest} more characters cut]") }
}

/// Sends `prompt` as one user message and returns the reply's text and the request's usage.
pub async fn request_summary(
    model: SummaryModel<'_>,
    prompt: String,
) -> Result<(String, Usage), SessionError> {
    let request = ProviderRequest {
        model: model.model.clone(),
        context: RequestContext {
            system_prompt: SUMMARY_SYSTEM_PROMPT.to_string(),
            messages: RequestContext::shared_history([Message::User(UserMessage::text(
                prompt,
                now_millis(),
            ))]),
            tools: Arc::from([]),
            encoded: None,
        },
        options: StreamOptions {
            thinking: ThinkingLevel::Off,
            max_tokens: Some(model.max_tokens.min(model.model.max_output_tokens.max(1))),
            temperature: None,
            cancel: model.cancel.clone(),
        },
    };
    let mut stream = model.provider.stream(request);
    while let Some(event) = stream.next().await {
        match event {
            AssistantMessageEvent::Done(message) => {
                let text = message.text();
                if text.trim().is_empty() {
                    return Err(SessionError::Summary {
                        kind: ProviderErrorKind::Protocol,
                        message: "the model returned an empty summary".into(),
                    });
                }
                return Ok((text.trim().to_string(), message.usage));
            }
            AssistantMessageEvent::Error { message, kind } => {
                return Err(SessionError::Summary {
                    kind,
                    message: message.error_message.unwrap_or_else(|| "request failed".into()),
                });
            }
            _ => {}
        }
    }
    Err(SessionError::Summary {
        kind: ProviderErrorKind::Protocol,
        message: "the stream ended without a final message".into(),
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::repair::tests::{assistant, result, user};
    use futures::stream;
    use rein_ai::EventStream;
    use rein_protocol::message::{AssistantMessage, StopReason};
    use rein_protocol::model::{Api, ModelCost};
    use std::collections::VecDeque;
    use std::sync::Mutex;

    /// A provider that answers each request with the next scripted reply and records requests.
    #[derive(Default)]
    pub(crate) struct ScriptedProvider {
        replies: Mutex<VecDeque<Result<String, ProviderErrorKind>>>,
        pub(crate) requests: Mutex<Vec<ProviderRequest>>,
    }

    impl ScriptedProvider {
        pub(crate) fn new(replies: Vec<Result<&str, ProviderErrorKind>>) -> Self {
            Self {
                replies: Mutex::new(replies.into_iter().map(|r| r.map(str::to_string)).collect()),
                requests: Mutex::default(),
            }
        }

        pub(crate) fn prompts(&self) -> Vec<String> {
            self.requests
                .lock()
                .unwrap()
                .iter()
                .map(|r| {
                    match r.context.messages.iter().map(|m| m.as_ref()).collect::<Vec<_>>()[..] {
                        [Message::User(u)] => blocks_text(&u.content),
                        ref other => format!("{other:?}"),
                    }
                })
                .collect()
        }
    }

    pub(crate) fn reply(text: &str, usage: Usage, stop_reason: StopReason) -> AssistantMessage {
        AssistantMessage {
            content: vec![ContentBlock::text(text)],
            api: "openai-chat".into(),
            provider: "scripted".into(),
            model: "m".into(),
            usage,
            stop_reason,
            error_message: None,
            timestamp: 0,
        }
    }

    impl Provider for ScriptedProvider {
        fn stream(&self, request: ProviderRequest) -> EventStream {
            self.requests.lock().unwrap().push(request);
            let next = self.replies.lock().unwrap().pop_front();
            let usage = Usage { input: 100, output: 10, total_tokens: 110, ..Usage::default() };
            let last = match next {
                Some(Ok(text)) => {
                    AssistantMessageEvent::Done(reply(&text, usage, StopReason::Stop))
                }
                Some(Err(kind)) => {
                    let mut message = reply("", usage, StopReason::Error);
                    message.error_message = Some("scripted failure".into());
                    AssistantMessageEvent::Error { message, kind }
                }
                None => AssistantMessageEvent::Error {
                    message: reply("", Usage::default(), StopReason::Error),
                    kind: ProviderErrorKind::Protocol,
                },
            };
            Box::pin(stream::iter(vec![AssistantMessageEvent::Start, last]))
        }
    }

    impl ScriptedProvider {
        /// Sends a request (as the agent loop would) and returns the stream.
        pub(crate) fn stream_request(&self, request: ProviderRequest) -> EventStream {
            self.stream(request)
        }
    }

    /// The reply text of a stream, or the failure kind.
    pub(crate) async fn final_event(mut stream: EventStream) -> Result<String, ProviderErrorKind> {
        while let Some(event) = stream.next().await {
            match event {
                AssistantMessageEvent::Done(message) => return Ok(message.text()),
                AssistantMessageEvent::Error { kind, .. } => return Err(kind),
                _ => {}
            }
        }
        Err(ProviderErrorKind::Protocol)
    }

    pub(crate) fn model_info(context_window: u64) -> ModelInfo {
        ModelInfo {
            provider: "scripted".into(),
            id: "m".into(),
            name: "M".into(),
            api: Api::OpenAiChat,
            context_window,
            max_output_tokens: 1_000,
            images: false,
            reasoning: false,
            cost: ModelCost::default(),
            known: true,
        }
    }

    #[test]
    fn transcript_labels_roles_and_cuts_long_output() {
        let mut long = result("r", "c1");
        if let Message::ToolResult(r) = &mut long.message {
            r.content = vec![ContentBlock::text("x".repeat(TOOL_RESULT_CHARS + 5))];
        }
        let text =
            transcript(&[user("hello").message, assistant("a", &["c1"]).message, long.message]);
        assert!(text.starts_with("[User]: hello\n\n[Assistant tool call]: read({})\n\n"), "{text}");
        assert!(text.contains("[Tool result (read)]: xxx"));
        assert!(text.ends_with("[... 5 more characters cut]\n\n"), "{text}");
    }

    #[test]
    fn summary_request_returns_text_and_usage_or_a_typed_error() {
        let provider = ScriptedProvider::new(vec![
            Ok("  the summary \n"),
            Err(ProviderErrorKind::RateLimited),
        ]);
        let info = model_info(1000);
        let cancel = CancellationToken::new();
        let model =
            SummaryModel { provider: &provider, model: &info, max_tokens: 5_000, cancel: &cancel };
        let (text, usage) =
            futures::executor::block_on(request_summary(model, "p".into())).unwrap();
        assert_eq!(text, "the summary");
        assert_eq!(usage.total_tokens, 110);
        {
            let requests = provider.requests.lock().unwrap();
            assert_eq!(requests[0].options.max_tokens, Some(1_000));
            assert!(requests[0].context.tools.is_empty());
            assert_eq!(requests[0].context.system_prompt, SUMMARY_SYSTEM_PROMPT);
        }
        let err = futures::executor::block_on(request_summary(model, "p".into())).unwrap_err();
        assert!(matches!(err, SessionError::Summary { kind: ProviderErrorKind::RateLimited, .. }));
    }
}
