//! The assistant message as streamed so far, rebuilt from deltas.
//!
//! The provider's final message is authoritative; this copy exists for the moment the loop
//! stops listening before that (cancel, time limit), so what the user saw is still recorded.

use rein_protocol::event::AssistantDelta;
use rein_protocol::message::{AssistantMessage, ContentBlock, StopReason, ToolCall, Usage};
use rein_protocol::model::ModelInfo;
use serde_json::Value;

/// A block being streamed, at its index in the message.
#[derive(Debug)]
enum PartialBlock {
    Text(String),
    Thinking(String),
    ToolCall { id: String, name: String, raw_arguments: String, finished: Option<ToolCall> },
}

/// Accumulates deltas into blocks.
#[derive(Debug, Default)]
pub(crate) struct PartialMessage {
    blocks: Vec<(usize, PartialBlock)>,
}

impl PartialMessage {
    /// Applies one delta.
    pub(crate) fn apply(&mut self, delta: &AssistantDelta) {
        match delta {
            AssistantDelta::TextDelta { index, delta } => {
                if let PartialBlock::Text(text) =
                    self.block(*index, || PartialBlock::Text(String::new()))
                {
                    text.push_str(delta);
                }
            }
            AssistantDelta::ThinkingDelta { index, delta } => {
                if let PartialBlock::Thinking(text) =
                    self.block(*index, || PartialBlock::Thinking(String::new()))
                {
                    text.push_str(delta);
                }
            }
            AssistantDelta::ToolCallStart { index, id, name } => {
                self.block(*index, || PartialBlock::ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    raw_arguments: String::new(),
                    finished: None,
                });
            }
            AssistantDelta::ToolCallDelta { index, delta } => {
                if let Some(PartialBlock::ToolCall { raw_arguments, .. }) = self.existing(*index) {
                    raw_arguments.push_str(delta);
                }
            }
            AssistantDelta::ToolCallEnd { index, call } => {
                let block = self.block(*index, || PartialBlock::ToolCall {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    raw_arguments: String::new(),
                    finished: None,
                });
                if let PartialBlock::ToolCall { finished, .. } = block {
                    *finished = Some(call.clone());
                }
            }
            AssistantDelta::Unknown => {}
        }
    }

    /// The message so far, with the given stop reason and error text. An unfinished tool
    /// call keeps its arguments parsed when they are complete JSON and as a string otherwise.
    pub(crate) fn to_message(
        &self,
        model: &ModelInfo,
        stop_reason: StopReason,
        error_message: Option<String>,
        timestamp: i64,
    ) -> AssistantMessage {
        let mut blocks: Vec<&(usize, PartialBlock)> = self.blocks.iter().collect();
        blocks.sort_by_key(|(index, _)| *index);
        let content = blocks.into_iter().map(|(_, block)| finish_block(block)).collect();
        AssistantMessage {
            content,
            api: model.api.as_str().to_string(),
            provider: model.provider.clone(),
            model: model.id.clone(),
            usage: Usage::default(),
            stop_reason,
            error_message,
            timestamp,
        }
    }

    fn existing(&mut self, index: usize) -> Option<&mut PartialBlock> {
        self.blocks.iter_mut().find(|(at, _)| *at == index).map(|(_, block)| block)
    }

    fn block(&mut self, index: usize, create: impl FnOnce() -> PartialBlock) -> &mut PartialBlock {
        let position = match self.blocks.iter().position(|(at, _)| *at == index) {
            Some(position) => position,
            None => {
                self.blocks.push((index, create()));
                self.blocks.len() - 1
            }
        };
        &mut self.blocks[position].1
    }
}

fn finish_block(block: &PartialBlock) -> ContentBlock {
    match block {
        PartialBlock::Text(text) => ContentBlock::text(text.clone()),
        PartialBlock::Thinking(thinking) => {
            ContentBlock::Thinking { thinking: thinking.clone(), signature: None, redacted: false }
        }
        PartialBlock::ToolCall { finished: Some(call), .. } => ContentBlock::ToolCall(call.clone()),
        PartialBlock::ToolCall { id, name, raw_arguments, finished: None } => {
            let arguments = serde_json::from_str(raw_arguments)
                .unwrap_or_else(|_| Value::String(raw_arguments.clone()));
            ContentBlock::ToolCall(ToolCall { id: id.clone(), name: name.clone(), arguments })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_protocol::model::Api;
    use serde_json::json;

    fn model() -> ModelInfo {
        ModelInfo {
            provider: "p".into(),
            id: "m".into(),
            name: String::new(),
            api: Api::Anthropic,
            context_window: 1000,
            max_output_tokens: 100,
            images: false,
            reasoning: true,
            cost: Default::default(),
            known: false,
        }
    }

    #[test]
    fn deltas_rebuild_blocks_in_index_order() {
        let mut partial = PartialMessage::default();
        partial.apply(&AssistantDelta::ThinkingDelta { index: 0, delta: "hm".into() });
        partial.apply(&AssistantDelta::TextDelta { index: 1, delta: "Hel".into() });
        partial.apply(&AssistantDelta::ToolCallStart {
            index: 3,
            id: "c2".into(),
            name: "grep".into(),
        });
        partial.apply(&AssistantDelta::ToolCallStart {
            index: 2,
            id: "c1".into(),
            name: "read".into(),
        });
        partial.apply(&AssistantDelta::TextDelta { index: 1, delta: "lo".into() });
        partial.apply(&AssistantDelta::ToolCallDelta { index: 2, delta: "{\"path\":".into() });
        partial.apply(&AssistantDelta::ToolCallDelta { index: 3, delta: "{\"q\":\"x\"}".into() });
        let message = partial.to_message(&model(), StopReason::Aborted, Some("stop".into()), 7);
        assert_eq!(message.content.len(), 4);
        assert!(
            matches!(&message.content[0], ContentBlock::Thinking { thinking, .. } if thinking == "hm")
        );
        assert_eq!(message.content[1], ContentBlock::text("Hello"));
        let calls: Vec<&ToolCall> = message.tool_calls().collect();
        assert_eq!(calls[0].arguments, Value::String("{\"path\":".into()));
        assert_eq!(calls[1].arguments, json!({"q": "x"}));
        assert_eq!(message.stop_reason, StopReason::Aborted);
        assert_eq!(message.api, "anthropic");
        assert_eq!(message.timestamp, 7);
    }

    #[test]
    fn a_finished_call_wins_over_its_fragments() {
        let mut partial = PartialMessage::default();
        partial.apply(&AssistantDelta::ToolCallStart {
            index: 0,
            id: "c".into(),
            name: "ls".into(),
        });
        partial.apply(&AssistantDelta::ToolCallDelta { index: 0, delta: "{\"a\"".into() });
        let call = ToolCall { id: "c".into(), name: "ls".into(), arguments: json!({"a": 1}) };
        partial.apply(&AssistantDelta::ToolCallEnd { index: 0, call: call.clone() });
        let message = partial.to_message(&model(), StopReason::Aborted, None, 0);
        assert_eq!(message.content, vec![ContentBlock::ToolCall(call)]);
    }
}
