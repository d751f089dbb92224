//! Branching: moving the active leaf to an earlier entry, optionally leaving a summary of the
//! abandoned path so the model knows what was tried there.

use rein_ai::Provider;
use rein_protocol::EntryKind;
use rein_protocol::message::{Message, Usage};
use rein_protocol::model::ModelInfo;
use tokio_util::sync::CancellationToken;

use crate::error::SessionError;
use crate::replay::entry_message;
use crate::session::Session;
use crate::summarize::{SummaryModel, request_summary, transcript};
use crate::tree::leaf_move_kind;

/// Where a branch left the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchOutcome {
    /// The new active leaf (the summary entry when one was written).
    pub leaf_id: Option<String>,
    /// The branch-summary entry, when one was written.
    pub summary_entry_id: Option<String>,
}

/// A summary of an abandoned path, ready to record.
#[derive(Debug, Clone, PartialEq)]
pub struct BranchSummary {
    /// The leaf of the abandoned path.
    pub from_id: String,
    /// What was tried there.
    pub summary: String,
    /// Usage of the summary request.
    pub usage: Option<Usage>,
}

/// The prompt asking the model to summarize an abandoned path.
pub fn branch_summary_prompt(conversation: &str) -> String {
    format!(
        "<conversation>\n{conversation}</conversation>\n\n\
         The user abandoned the part of the conversation above and went back to an earlier \
         point. Summarize it so the next attempt can learn from it, with exactly these \
         sections:\n\n\
         ## Attempt\nWhat was being tried.\n\n\
         ## Outcome\nWhat worked, what failed, and any error messages.\n\n\
         ## Files touched\nEach file read, created or changed, and what changed in it (those \
         changes may still be on disk).\n\n\
         ## Lessons\nWhat to do differently.\n\nBe brief."
    )
}

impl Session {
    /// The messages of the path that moving the leaf to `target` abandons: those after the
    /// last entry the current path shares with the target's path.
    pub fn abandoned_messages(&self, target: Option<&str>) -> Result<Vec<Message>, SessionError> {
        if let Some(id) = target {
            self.require_entry(id)?;
        }
        let current = self.tree().active_path();
        let kept = self.tree().path_to(target);
        let shared = current.iter().zip(&kept).take_while(|(a, b)| a.id == b.id).count();
        Ok(current[shared..].iter().filter_map(|entry| entry_message(entry)).collect())
    }

    /// Moves the active leaf to `target` (`None`: an empty conversation) and, with a summary,
    /// records it as a branch-summary entry after the target, which becomes the leaf.
    pub fn record_branch(
        &mut self,
        target: Option<&str>,
        summary: Option<BranchSummary>,
    ) -> Result<BranchOutcome, SessionError> {
        if let Some(id) = target {
            self.require_entry(id)?;
        }
        let Some(BranchSummary { from_id, summary, usage }) = summary else {
            self.move_leaf(target)?;
            return Ok(BranchOutcome {
                leaf_id: self.leaf_id().map(str::to_string),
                summary_entry_id: None,
            });
        };
        let mut entries = Vec::new();
        if self.leaf_id() != target {
            entries.push((None, leaf_move_kind(target)));
        }
        entries.push((
            None,
            EntryKind::BranchSummary { from_id, summary, usage: usage.map(Box::new) },
        ));
        let written = self.append_entries(entries)?;
        let summary_id = written.last().map(|e| e.id.clone());
        Ok(BranchOutcome { leaf_id: summary_id.clone(), summary_entry_id: summary_id })
    }

    /// Branches to `target`, first asking the model to summarize the abandoned path (when it
    /// holds any messages) and recording that summary after the target.
    pub async fn branch_with_summary(
        &mut self,
        target: Option<&str>,
        provider: &dyn Provider,
        model: &ModelInfo,
        max_tokens: u64,
        cancel: &CancellationToken,
    ) -> Result<BranchOutcome, SessionError> {
        let abandoned = self.abandoned_messages(target)?;
        let from_id = self.leaf_id().map(str::to_string);
        let summary = match (abandoned.is_empty(), from_id) {
            (false, Some(from_id)) => {
                let prompt = branch_summary_prompt(&transcript(&abandoned));
                let summary_model = SummaryModel { provider, model, max_tokens, cancel };
                let (summary, usage) = request_summary(summary_model, prompt).await?;
                Some(BranchSummary { from_id, summary, usage: Some(usage) })
            }
            _ => None,
        };
        self.record_branch(target, summary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repair::tests::{assistant, result, user};
    use crate::replay::BRANCH_SUMMARY_PREFIX;
    use crate::store::SessionStore;
    use crate::summarize::tests::{ScriptedProvider, model_info};
    use futures::executor::block_on;

    #[test]
    fn branch_with_summary_records_what_was_tried_and_survives_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path());
        let mut session = store.create("/p").unwrap();
        let u1 = session.append_message(user("u1").message).unwrap().id;
        session.append_message(assistant("a1", &["c1"]).message).unwrap();
        session.append_message(result("r1", "c1").message).unwrap();
        let old_leaf = session.append_message(user("u2").message).unwrap().id;

        let abandoned = session.abandoned_messages(Some(&u1)).unwrap();
        assert_eq!(abandoned.len(), 3);
        let provider = ScriptedProvider::new(vec![Ok("tried reading c1")]);
        let model = model_info(10_000);
        let cancel = CancellationToken::new();
        let outcome =
            block_on(session.branch_with_summary(Some(&u1), &provider, &model, 500, &cancel))
                .unwrap();
        let summary_id = outcome.summary_entry_id.clone().unwrap();
        assert_eq!(outcome.leaf_id.as_deref(), Some(summary_id.as_str()));
        let entry = session.tree().get(&summary_id).unwrap();
        assert_eq!(entry.parent_id.as_deref(), Some(u1.as_str()));
        assert!(
            matches!(&entry.kind, EntryKind::BranchSummary { from_id, .. } if *from_id == old_leaf)
        );
        let prompt = &provider.prompts()[0];
        assert!(
            prompt.contains("[Assistant tool call]: read({})") && prompt.contains("[User]: u2")
        );
        assert!(!prompt.contains("[User]: u1"));

        let id = session.id().to_string();
        drop(session);
        let (session, _) = store.open(&id).unwrap();
        assert_eq!(session.leaf_id(), Some(summary_id.as_str()));
        let context = session.context_messages();
        assert_eq!(context.len(), 2);
        assert_eq!(context[0], user("u1").message);
        let Message::User(summary) = &context[1] else { panic!() };
        assert_eq!(
            summary.content[0].as_text(),
            Some(&*format!("{BRANCH_SUMMARY_PREFIX}tried reading c1"))
        );
    }

    #[test]
    fn branch_without_summary_or_to_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path());
        let mut session = store.create("/p").unwrap();
        let u1 = session.append_message(user("u1").message).unwrap().id;
        session.append_message(user("u2").message).unwrap();
        let outcome = session.record_branch(Some(&u1), None).unwrap();
        assert_eq!(outcome, BranchOutcome { leaf_id: Some(u1.clone()), summary_entry_id: None });
        let provider = ScriptedProvider::new(vec![]);
        let model = model_info(10_000);
        let cancel = CancellationToken::new();
        // Nothing is abandoned going from u1 to u1: no model call.
        block_on(session.branch_with_summary(Some(&u1), &provider, &model, 500, &cancel)).unwrap();
        assert!(provider.requests.lock().unwrap().is_empty());
        let outcome = session.record_branch(None, None).unwrap();
        assert_eq!(outcome.leaf_id, None);
        assert!(session.context_messages().is_empty());
        assert!(matches!(
            session.record_branch(Some("x"), None),
            Err(SessionError::EntryNotFound(_))
        ));
    }
}
