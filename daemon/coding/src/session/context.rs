//! The session's system prompt: the tools, the project context (AGENTS.md, skills) filtered
//! by trust, and the configured extra sections, rebuilt only when something it depends on
//! changed.

use std::sync::Arc;

use rein_agent::Tool;
use rein_protocol::method::ExcludedFile;

use crate::project::{ContextSources, ProjectContext};
use crate::prompt::{BASE_PROMPT, PromptInputs, system_prompt, today};

/// What the system prompt is built from, with the project context as last loaded.
pub(crate) struct PromptContext {
    sources: ContextSources,
    context: ProjectContext,
    tools: Vec<Arc<dyn Tool>>,
    extra_sections: Vec<String>,
}

impl PromptContext {
    /// The prompt's inputs, with `context` as loaded from `sources`.
    pub(crate) fn new(
        sources: ContextSources,
        context: ProjectContext,
        tools: Vec<Arc<dyn Tool>>,
        extra_sections: Vec<String>,
    ) -> Self {
        Self { sources, context, tools, extra_sections }
    }

    /// The system prompt for the context as loaded.
    pub(crate) fn prompt(&self) -> String {
        system_prompt(&PromptInputs {
            base: BASE_PROMPT,
            tools: &self.tools,
            context: &self.context,
            extra_sections: &self.extra_sections,
            date: today(),
            cwd: &self.sources.cwd,
        })
    }

    /// Loads the project context again when its fingerprint moved (a few `stat` calls when it
    /// did not) and returns the new system prompt; `None` when nothing changed.
    pub(crate) fn refresh(&mut self) -> Option<String> {
        self.sources.refresh(&mut self.context).then(|| self.prompt())
    }

    /// Applies a new trust decision and returns the system prompt it gives.
    pub(crate) fn set_trusted(&mut self, trusted: bool) -> String {
        self.sources.trusted = trusted;
        self.context = self.sources.load();
        self.prompt()
    }

    /// Replaces the tools (the model changed) and returns the new system prompt.
    pub(crate) fn set_tools(&mut self, tools: Vec<Arc<dyn Tool>>) -> String {
        self.tools = tools;
        self.prompt()
    }

    /// Whether the project is trusted.
    pub(crate) fn trusted(&self) -> bool {
        self.sources.trusted
    }

    /// The trusted project's `.rein/config.toml` files, outermost first (none when the
    /// project is not trusted).
    pub(crate) fn project_config_files(&self) -> Vec<std::path::PathBuf> {
        self.context.project_config.clone()
    }

    /// Project files left out of the prompt.
    pub(crate) fn excluded(&self) -> Vec<ExcludedFile> {
        self.context.excluded.clone()
    }
}
