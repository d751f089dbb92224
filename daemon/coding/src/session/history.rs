//! Operations on the session's history: labels and names, branching, compaction, forking and
//! export.

use rein_protocol::event::{CompactionReason, SessionEvent};
use rein_protocol::method::{BranchResult, CompactResult, ExportFormat};
use rein_session::Session;
use rein_session::branch::{BranchSummary, branch_summary_prompt};
use rein_session::summarize::{SummaryModel, request_summary, transcript};

use super::error::CodingError;
use super::model::ModelSlot;
use super::{CodingSession, Operation};

impl CodingSession {
    /// Labels an entry (`None` removes its label); recorded as a label entry.
    pub async fn label(&self, entry_id: &str, label: Option<String>) -> Result<(), CodingError> {
        let entry_id = entry_id.to_string();
        self.journal.write(move |file| file.label(&entry_id, label)).await?;
        Ok(())
    }

    /// Names the session; recorded as a session-info entry.
    pub async fn rename(&self, name: String) -> Result<(), CodingError> {
        self.journal.write(move |file| file.set_name(Some(name))).await?;
        Ok(())
    }

    /// Moves the active leaf to `entry_id` (`None`: an empty conversation). With `summarize`,
    /// the abandoned path is first summarized by the session's model and the summary becomes
    /// the new leaf. Refused during a run. The model and thinking level the new path records
    /// are put in force.
    pub async fn branch(
        &self,
        entry_id: Option<&str>,
        summarize: bool,
    ) -> Result<BranchResult, CodingError> {
        let operation = self.begin(Operation::Branch)?;
        let (abandoned, from_id) = self.journal.read(|file| {
            file.abandoned_messages(entry_id).map(|m| (m, file.leaf_id().map(str::to_string)))
        })??;
        let summary = match (summarize, abandoned.is_empty(), from_id) {
            (true, false, Some(from_id)) => {
                let (provider, model) = self.live().model.usable()?;
                let prompt = branch_summary_prompt(&transcript(&abandoned));
                let summary_model = SummaryModel {
                    provider: provider.as_ref(),
                    model: &model,
                    max_tokens: self.env().defaults.compaction.summary_max_tokens,
                    cancel: &operation.cancel,
                };
                let (summary, usage) = request_summary(summary_model, prompt).await?;
                Some(BranchSummary { from_id, summary, usage: Some(usage) })
            }
            _ => None,
        };
        let target = entry_id.map(str::to_string);
        let outcome =
            self.journal.write(move |file| file.record_branch(target.as_deref(), summary)).await?;
        self.reload_history()?;
        self.emit(SessionEvent::LeafChanged { leaf_id: outcome.leaf_id.clone() });
        Ok(BranchResult { leaf_id: outcome.leaf_id, summary_entry_id: outcome.summary_entry_id })
    }

    /// Gives the harness the active path's messages again and puts the model and thinking
    /// level it records in force (after a branch).
    fn reload_history(&self) -> Result<(), CodingError> {
        let (messages, replay) =
            self.journal.read(|file| (file.request_messages(), file.settings()))?;
        self.harness.set_messages(messages)?;
        let current = self.live().model.reference.clone();
        if let Some(reference) = replay.model
            && reference != current
        {
            let slot = ModelSlot::resolve(&self.env().registry, Some(&reference.to_string()));
            self.apply_model(slot);
            self.emit(SessionEvent::ModelChanged { model: reference });
        }
        if let Some(level) = replay.thinking_level
            && level != self.harness.thinking_level()
        {
            self.harness.set_thinking_level(level);
            self.emit(SessionEvent::ThinkingLevelChanged { level });
        }
        Ok(())
    }

    /// Summarizes older context into a compaction entry (`compaction_start`/`compaction_end`
    /// with reason `manual`) and waits until it is written. Refused during a run
    /// (`session_busy`) and while another compaction runs (`compaction_in_progress`).
    pub async fn compact(
        &self,
        instructions: Option<String>,
    ) -> Result<CompactResult, CodingError> {
        let operation = self.begin(Operation::Compaction)?;
        let (provider, model) = self.live().model.usable()?;
        let keep = self.env().defaults.compaction.keep_recent(model.context_window);
        let compacted = self
            .run_compaction(
                CompactionReason::Manual,
                instructions,
                keep,
                provider,
                &model,
                &operation.cancel,
            )
            .await?;
        self.harness.set_messages(self.journal.read(Session::request_messages)?)?;
        let summary = match &compacted.entry.kind {
            rein_protocol::EntryKind::Compaction { summary, .. } => summary.clone(),
            _ => String::new(),
        };
        Ok(CompactResult {
            entry_id: compacted.entry.id,
            tokens_before: compacted.tokens_before,
            tokens_after: compacted.tokens_after,
            summary,
        })
    }

    /// Copies the root-to-entry path ending at `entry_id` into a new session file (same
    /// project) and returns its id; the daemon opens it like any other.
    pub async fn fork(&self, entry_id: &str) -> Result<String, CodingError> {
        // Writing the new file (and its fsyncs) is blocking work.
        let store = self.env().store.clone();
        let entry_id = entry_id.to_string();
        let fork = self.journal.read_blocking(move |file| store.fork(file, &entry_id)).await??;
        Ok(fork.id().to_string())
    }

    /// The active path as a Markdown transcript or a JSONL trajectory.
    pub fn export(&self, format: ExportFormat) -> Result<String, CodingError> {
        match format {
            ExportFormat::Markdown => self.journal.read(Session::export_markdown),
            ExportFormat::Jsonl => Ok(self.journal.read(|file| file.export_jsonl(None))??),
        }
    }
}
