//! A conversation's history as encoded for the wire, kept between requests, so that each
//! request encodes only the messages appended since the one before.
//!
//! A request body carries the whole history; encoding it (escaping every text, writing every
//! tool call's arguments) costs time in proportion to the history, on every request of every
//! turn. What was encoded is kept here as one JSON text per wire item, with the messages it
//! came from, and reused as long as the next request's history starts with those same
//! messages (compared by identity: the kept ones are held, so no other message can take
//! their place) for the same model and compatibility settings.
//!
//! Only a *settled* part is kept: the messages before the last one that starts a segment
//! (each wire API says which messages do, see [`SegmentStart`]). A segment's wire items depend
//! on nothing outside it, so the items of the kept part followed by the items of the rest are
//! exactly the items of the whole; what depends on a message's position (Anthropic's cache
//! breakpoint on the last user turn) falls in the rest, which is encoded anew every time.

use crate::compat::Compat;
use rein_protocol::message::{Message, starts_with_same};
use rein_protocol::model::ModelInfo;
use serde::ser::{Serialize, SerializeSeq, Serializer};
use serde_json::value::RawValue;
use std::sync::{Arc, Mutex, PoisonError};

/// The encoded history of one conversation (a harness keeps one and hands it to every
/// request it makes through [`crate::RequestContext::encoded`]).
#[derive(Debug, Default)]
pub struct EncodedHistory {
    kept: Mutex<Option<Kept>>,
}

/// What one request found encoded: the wire items of its first `messages` messages.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Encoded<'a> {
    /// The wire items, each one JSON text.
    pub(crate) items: &'a [Box<RawValue>],
    /// How many of the history's messages they stand for.
    pub(crate) messages: usize,
    /// Their length in bytes, together.
    pub(crate) bytes: usize,
}

impl Encoded<'_> {
    /// Nothing encoded: the whole history is encoded by the request itself.
    pub(crate) const NONE: Encoded<'static> = Encoded { items: &[], messages: 0, bytes: 0 };
}

/// A request body's history on the wire: a leading item (a system message, say), the items
/// kept from earlier requests, written as they are, then the items encoded now. Written as
/// one JSON array, without gathering the items into one list first.
#[derive(Debug)]
pub(crate) struct WireItems<'a, T> {
    lead: Option<T>,
    kept: &'a [Box<RawValue>],
    fresh: Vec<T>,
}

impl<'a, T> WireItems<'a, T> {
    /// `lead`, the kept items of `encoded`, then `fresh`.
    pub(crate) fn new(lead: Option<T>, encoded: Encoded<'a>, fresh: Vec<T>) -> Self {
        Self { lead, kept: encoded.items, fresh }
    }
}

impl<T: Serialize> Serialize for WireItems<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let len = usize::from(self.lead.is_some()) + self.kept.len() + self.fresh.len();
        let mut items = serializer.serialize_seq(Some(len))?;
        if let Some(lead) = &self.lead {
            items.serialize_element(lead)?;
        }
        for item in self.kept {
            items.serialize_element(item)?;
        }
        for item in &self.fresh {
            items.serialize_element(item)?;
        }
        items.end()
    }
}

/// Whether the message at an index of a history starts a segment of one wire API's history
/// there: the wire items of the messages before it depend neither on it nor on anything after
/// it, and the items from it on, position-dependent parts included, depend on nothing before
/// it.
pub(crate) type SegmentStart = fn(&[Arc<Message>], usize, &ModelInfo) -> bool;

/// How one wire API encodes the items of a run of whole segments, each as its own JSON text.
pub(crate) type EncodeItems =
    fn(&[Arc<Message>], &ModelInfo, &Compat) -> serde_json::Result<Vec<Box<RawValue>>>;

#[derive(Debug)]
struct Kept {
    model: ModelInfo,
    compat: Compat,
    /// The messages encoded, held so that none of them can be freed and another message be
    /// made at its address while it is kept.
    messages: Vec<Arc<Message>>,
    items: Vec<Box<RawValue>>,
    /// The items' length in bytes, together.
    bytes: usize,
}

impl Kept {
    /// Whether this encoding holds for a request to `model` with `compat` whose history is
    /// `messages`: it starts with the messages kept, and what follows them still starts a
    /// segment (after a step back, another message may follow them than when they were kept).
    fn fits(
        &self,
        messages: &[Arc<Message>],
        model: &ModelInfo,
        compat: &Compat,
        starts_segment: SegmentStart,
    ) -> bool {
        self.compat == *compat
            && self.model == *model
            && starts_with_same(messages, &self.messages)
            && (self.messages.len() == messages.len()
                || starts_segment(messages, self.messages.len(), model))
    }
}

impl EncodedHistory {
    /// An empty encoding.
    pub fn new() -> Self {
        Self::default()
    }

    /// Brings the kept encoding up to the settled part of `messages` and hands it to `write`,
    /// which writes the whole body from it. `items` encodes the wire items of a whole
    /// segment (or several).
    pub(crate) fn encode(
        &self,
        messages: &[Arc<Message>],
        model: &ModelInfo,
        compat: &Compat,
        starts_segment: SegmentStart,
        items: impl FnOnce(&[Arc<Message>]) -> serde_json::Result<Vec<Box<RawValue>>>,
        write: impl FnOnce(Encoded<'_>) -> serde_json::Result<Vec<u8>>,
    ) -> serde_json::Result<Vec<u8>> {
        // Taken out while in use: a request that comes meanwhile (none should) or a panic
        // halfway leaves nothing kept rather than something half updated.
        let taken = self.kept.lock().unwrap_or_else(PoisonError::into_inner).take();
        let mut kept = match taken {
            Some(kept) if kept.fits(messages, model, compat, starts_segment) => kept,
            _ => Kept {
                model: model.clone(),
                compat: *compat,
                messages: Vec::new(),
                items: Vec::new(),
                bytes: 0,
            },
        };
        let from = kept.messages.len();
        let settled =
            (from + 1..messages.len()).rev().find(|&index| starts_segment(messages, index, model));
        if let Some(settled) = settled {
            let segment = &messages[from..settled];
            let encoded = items(segment)?;
            kept.bytes += encoded.iter().map(|item| item.get().len()).sum::<usize>();
            kept.items.extend(encoded);
            kept.messages.extend(segment.iter().cloned());
        }
        let body =
            write(Encoded { items: &kept.items, messages: kept.messages.len(), bytes: kept.bytes });
        *self.kept.lock().unwrap_or_else(PoisonError::into_inner) = Some(kept);
        body
    }

    /// Forgets what was encoded (its memory is freed).
    pub fn clear(&self) {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner).take();
    }
}

/// Each of `items` as its own JSON text.
pub(crate) fn encode_items<T: Serialize>(items: &[T]) -> serde_json::Result<Vec<Box<RawValue>>> {
    items.iter().map(serde_json::value::to_raw_value).collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

    use super::*;
    use crate::compat;
    use crate::provider::{ProviderRequest, RequestContext, StreamOptions};
    use crate::wire::encode_body;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use rein_protocol::message::{
        AssistantMessage, ContentBlock, StopReason, ToolCall, ToolResultMessage, Usage, UserMessage,
    };
    use rein_protocol::model::{Api, ThinkingLevel};
    use serde_json::json;

    const APIS: [Api; 3] = [Api::OpenAiChat, Api::OpenAiResponses, Api::Anthropic];

    fn model(api: Api, images: bool, reasoning: bool) -> ModelInfo {
        let mut model = crate::catalog::model_info("p", "m", api);
        model.images = images;
        model.reasoning = reasoning;
        model
    }

    fn text(rng: &mut StdRng) -> String {
        ["", "  ", "plain", "with \"quotes\" and \\ and\nnewlines", "ünïcödé \u{1}"]
            [rng.random_range(0..5)]
        .to_string()
    }

    fn image() -> ContentBlock {
        ContentBlock::Image { data: "aGk=".into(), mime_type: "image/png".into() }
    }

    /// A message of any kind, in shapes each encoder treats differently (empty and blank
    /// content, images, foreign and native reasoning, ids that must be rewritten, failures).
    fn message(rng: &mut StdRng, api: Api, n: usize) -> Message {
        let call_id = |rng: &mut StdRng| match rng.random_range(0..3) {
            0 => format!("call_{n}"),
            1 => format!("call_{n}|fc_{n}"),
            _ => format!("an id that no API takes as it is, number {n}"),
        };
        match rng.random_range(0..3) {
            0 => {
                let content = (0..rng.random_range(0..3))
                    .map(|_| match rng.random_bool(0.8) {
                        true => ContentBlock::text(text(rng)),
                        false => image(),
                    })
                    .collect();
                Message::User(UserMessage { content, timestamp: 0 })
            }
            1 => {
                let content = (0..rng.random_range(0..4))
                    .map(|_| match rng.random_range(0..4) {
                        0 => ContentBlock::text(text(rng)),
                        1 => ContentBlock::Thinking {
                            thinking: text(rng),
                            signature: rng.random_bool(0.5).then(|| {
                                json!({"type": "reasoning", "id": "rs_1", "encrypted_content": "e"})
                                    .to_string()
                            }),
                            redacted: rng.random_bool(0.2),
                        },
                        _ => ContentBlock::ToolCall(ToolCall {
                            id: call_id(rng),
                            name: "bash".into(),
                            arguments: match rng.random_bool(0.8) {
                                true => json!({"command": text(rng)}),
                                false => json!("{not json"),
                            },
                        }),
                    })
                    .collect();
                let native = rng.random_bool(0.5);
                Message::Assistant(AssistantMessage {
                    content,
                    api: if native { api.as_str() } else { "other-api" }.into(),
                    provider: if native { "p" } else { "q" }.into(),
                    model: "m".into(),
                    usage: Usage::default(),
                    stop_reason: [StopReason::Stop, StopReason::ToolUse, StopReason::Error]
                        [rng.random_range(0..3)],
                    error_message: None,
                    timestamp: 0,
                })
            }
            _ => Message::ToolResult(ToolResultMessage {
                tool_call_id: call_id(rng),
                tool_name: "bash".into(),
                content: (0..rng.random_range(0..3))
                    .map(|_| match rng.random_bool(0.8) {
                        true => ContentBlock::text(text(rng)),
                        false => image(),
                    })
                    .collect(),
                is_error: rng.random_bool(0.2),
                details: None,
                timestamp: 0,
            }),
        }
    }

    fn request(
        model: &ModelInfo,
        messages: &[Arc<Message>],
        encoded: Option<Arc<EncodedHistory>>,
        thinking: ThinkingLevel,
    ) -> ProviderRequest {
        ProviderRequest {
            model: model.clone(),
            context: RequestContext {
                system_prompt: "system".into(),
                messages: Arc::new(messages.to_vec()),
                tools: Arc::from([]),
                encoded,
            },
            options: StreamOptions { thinking, ..StreamOptions::default() },
        }
    }

    fn kept_messages(encoded: &EncodedHistory) -> usize {
        encoded.kept.lock().unwrap().as_ref().map_or(0, |kept| kept.messages.len())
    }

    #[test]
    fn a_kept_encoding_gives_the_same_bytes_as_encoding_it_all() {
        let mut reused = 0;
        for seed in 0..300 {
            let mut rng = StdRng::seed_from_u64(seed);
            let api = APIS[rng.random_range(0..3)];
            let model = model(api, rng.random_bool(0.5), rng.random_bool(0.7));
            let mut compat = compat::for_model(&model);
            compat.reasoning_content = rng.random_bool(0.5);
            let thinking = [ThinkingLevel::Off, ThinkingLevel::High][rng.random_range(0..2)];
            let encoded = Arc::new(EncodedHistory::new());
            let mut history: Vec<Arc<Message>> = Vec::new();
            for _ in 0..12 {
                // Mostly appends, as a conversation grows; now and then a step back (a branch)
                // or a history made anew (compaction).
                match rng.random_range(0..10) {
                    0 => history.truncate(rng.random_range(0..=history.len())),
                    1 => history = history.iter().map(|m| Arc::new(m.as_ref().clone())).collect(),
                    _ => {}
                }
                for _ in 0..rng.random_range(1..5) {
                    history.push(Arc::new(message(&mut rng, api, history.len())));
                }
                let all = encode_body(&request(&model, &history, None, thinking), &compat);
                let kept_before = kept_messages(&encoded);
                let with_kept = encode_body(
                    &request(&model, &history, Some(encoded.clone()), thinking),
                    &compat,
                );
                assert_eq!(
                    String::from_utf8(with_kept.unwrap()).unwrap(),
                    String::from_utf8(all.unwrap()).unwrap(),
                    "seed {seed}, {api:?}, {history:#?}"
                );
                reused += usize::from(kept_before > 0 && kept_messages(&encoded) >= kept_before);
            }
        }
        // The comparison above is only worth something if the kept encoding was used.
        assert!(reused > 1_000, "the kept encoding was reused {reused} times");
    }

    #[test]
    fn only_what_was_appended_is_encoded_again() {
        for api in APIS {
            let model = model(api, false, false);
            let compat = compat::for_model(&model);
            let encoded = Arc::new(EncodedHistory::new());
            let reply = |content, stop_reason| {
                Arc::new(Message::Assistant(AssistantMessage {
                    content,
                    api: api.as_str().into(),
                    provider: "p".into(),
                    model: "m".into(),
                    usage: Usage::default(),
                    stop_reason,
                    error_message: None,
                    timestamp: 0,
                }))
            };
            let call = |n: usize| {
                let id = format!("call_{n}");
                let call = ToolCall { id: id.clone(), name: "bash".into(), arguments: json!({}) };
                let result = ToolResultMessage {
                    tool_call_id: id,
                    tool_name: "bash".into(),
                    content: vec![ContentBlock::text("ok")],
                    is_error: false,
                    details: None,
                    timestamp: 0,
                };
                [
                    reply(vec![ContentBlock::ToolCall(call)], StopReason::ToolUse),
                    Arc::new(Message::ToolResult(result)),
                ]
            };
            let turn = |n: usize| {
                let mut turn = vec![Arc::new(Message::User(UserMessage::text("step", 0)))];
                turn.extend(call(n));
                turn.push(reply(vec![ContentBlock::text("done")], StopReason::Stop));
                turn
            };
            let mut history: Vec<Arc<Message>> = (0..3).flat_map(turn).collect();
            let send = |history: &[Arc<Message>], model: &ModelInfo| {
                let request = request(model, history, Some(encoded.clone()), ThinkingLevel::Off);
                encode_body(&request, &compat).unwrap()
            };
            // Everything before the last message that starts a segment is kept: for Anthropic
            // the last reply with a user turn after it (its tool call); for Chat Completions
            // the last reply; for Responses, where every message starts one, the last message.
            let settled = |history: &[Arc<Message>]| match (api, history.last().map(AsRef::as_ref))
            {
                (Api::Anthropic, Some(Message::Assistant(_))) => history.len() - 3,
                (Api::OpenAiChat, Some(Message::ToolResult(_))) => history.len() - 2,
                _ => history.len() - 1,
            };
            send(&history, &model);
            assert_eq!(kept_messages(&encoded), settled(&history), "{api:?}");
            let first_kept = encoded.kept.lock().unwrap().as_ref().unwrap().items[0].get().as_ptr();
            // A run's tool loop: the kept part moves along with each call, not only with each
            // prompt.
            for n in 3..6 {
                history.extend(call(n));
                send(&history, &model);
                let expected =
                    if api == Api::OpenAiResponses { history.len() - 1 } else { history.len() - 2 };
                assert_eq!(kept_messages(&encoded), expected, "{api:?}");
            }
            let kept = encoded.kept.lock().unwrap();
            // The items kept before were not encoded again.
            assert_eq!(kept.as_ref().unwrap().items[0].get().as_ptr(), first_kept, "{api:?}");
            drop(kept);
            // Another model (its own rules for replaying reasoning, say) starts over.
            let other = ModelInfo { id: "other".into(), ..model.clone() };
            send(&history, &other);
            let kept = encoded.kept.lock().unwrap();
            assert_eq!(kept.as_ref().unwrap().model.id, "other", "{api:?}");
            drop(kept);
            // So does a history that no longer starts with the kept messages.
            let anew: Vec<Arc<Message>> =
                history.iter().map(|message| Arc::new(message.as_ref().clone())).collect();
            send(&anew, &other);
            let kept = encoded.kept.lock().unwrap();
            assert!(Arc::ptr_eq(&kept.as_ref().unwrap().messages[0], &anew[0]), "{api:?}");
            drop(kept);
            encoded.clear();
            assert!(encoded.kept.lock().unwrap().is_none());
        }
    }
}
