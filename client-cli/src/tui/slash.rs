//! The slash commands of the full-screen client: the session commands of the CLI shown in
//! the transcript, plus the ones that switch sessions (`/new`, `/resume`, `/fork`).

use super::Runtime;
use super::app::Picker;
use super::theme::Role;
use crate::client::ClientError;
use crate::commands::checkpoints;
use crate::commands::session::{self as session_cmd, Report};
use crate::interactive::input::{HELP, Slash};
use crate::resolve;
use rein_protocol::method::{
    CreateSessionParams, ForkParams, RenameParams, SessionRef, SessionState,
    SetApprovalPolicyParams, SetModelParams, SetThinkingParams,
};
use rein_protocol::requests as rq;

impl Runtime {
    fn show(&mut self, report: Result<Report, ClientError>) {
        match report {
            Ok(report) => {
                self.app.transcript.notice(report.text.trim_end().to_string(), Role::Plain)
            }
            Err(error) => self.app.transcript.notice(format!("error: {error}"), Role::Bad),
        }
    }

    async fn state(&mut self) -> Result<SessionState, ClientError> {
        let session = SessionRef { session_id: self.app.session.id.clone() };
        self.client.request::<rq::SessionState>(session).await
    }

    /// Opens the session picker on the sessions of this directory that hold a prompt, most
    /// recent first. With `others_only` the current session is left out; otherwise it is
    /// listed and highlighted (Esc keeps it), and the picker opens only when there is a choice.
    pub(super) async fn offer_sessions(&mut self, others_only: bool) {
        let current = self.app.session.id.clone();
        let cwd = self.app.session.cwd.clone();
        match resolve::list_sessions(&mut self.client, Some(&cwd)).await {
            Ok(sessions) => {
                let sessions: Vec<_> = sessions
                    .into_iter()
                    .filter(|s| !resolve::is_empty(s))
                    .filter(|s| !others_only || s.session_id != current)
                    .collect();
                if !others_only && sessions.len() < 2 {
                    return;
                }
                let selected = sessions.iter().position(|s| s.session_id == current).unwrap_or(0);
                self.app.picker = Some(Picker { sessions, selected });
            }
            Err(error) => self.app.transcript.notice(format!("error: {error}"), Role::Bad),
        }
    }

    /// Carries out a slash command.
    pub(super) async fn slash(&mut self, slash: Slash) {
        let session = self.app.session.id.clone();
        let cwd = self.app.session.cwd.clone();
        if let Some(report) =
            session_cmd::slash_report(&mut self.client, &session, &cwd, &slash).await
        {
            self.show(report);
            return;
        }
        match slash {
            // Answered by `slash_report` above.
            Slash::Model(None)
            | Slash::Compact(_)
            | Slash::Branch { .. }
            | Slash::Tree
            | Slash::Label { .. }
            | Slash::Sessions
            | Slash::Trust { .. } => {}
            Slash::Help => {
                let keys = super::keys::help(&self.app.keys);
                self.app.transcript.notice(format!("{HELP}\n\n{keys}"), Role::Plain)
            }
            Slash::Quit => self.quit = true,
            Slash::New => {
                let params = CreateSessionParams {
                    cwd: cwd.display().to_string(),
                    ..CreateSessionParams::default()
                };
                match self.client.request::<rq::SessionCreate>(params).await {
                    Ok(state) => self.switch(state, true).await,
                    Err(error) => self.app.transcript.notice(format!("error: {error}"), Role::Bad),
                }
            }
            Slash::Resume => self.offer_sessions(true).await,
            Slash::Fork => {
                let Some(entry_id) = self.app.session.leaf_id.clone() else {
                    self.app.transcript.notice("nothing to fork yet", Role::Notice);
                    return;
                };
                let params = ForkParams { session_id: session, entry_id };
                match self.client.request::<rq::SessionFork>(params).await {
                    Ok(state) => {
                        let id = state.session_id.clone();
                        self.switch(state, false).await;
                        self.app.transcript.notice(format!("forked into {id}"), Role::Notice);
                    }
                    Err(error) => self.app.transcript.notice(format!("error: {error}"), Role::Bad),
                }
            }
            Slash::Rename(name) => {
                let params = RenameParams { session_id: session, name: name.clone() };
                if self.call::<rq::SessionRename>(params).await {
                    self.app.session.name = Some(name.clone());
                    self.app.transcript.notice(format!("session named \"{name}\""), Role::Notice);
                }
            }
            Slash::Approve(Some(policy)) => {
                let params = SetApprovalPolicyParams { session_id: session, policy };
                self.call::<rq::SessionSetApprovalPolicy>(params).await;
            }
            Slash::Approve(None) | Slash::Status => match self.state().await {
                Ok(state) => {
                    self.app.refresh(&state, std::time::Instant::now());
                    let text = crate::interactive::status_text(&state);
                    self.app.transcript.notice(text, Role::Plain);
                }
                Err(error) => self.app.transcript.notice(format!("error: {error}"), Role::Bad),
            },
            Slash::Clear => {
                self.app.transcript.clear();
                self.app.scroll = 0;
            }
            Slash::Model(Some(model)) => {
                let params = SetModelParams { session_id: session, model };
                self.call::<rq::SessionSetModel>(params).await;
            }
            Slash::Thinking(level) => {
                let params = SetThinkingParams { session_id: session, level };
                self.call::<rq::SessionSetThinking>(params).await;
            }
            Slash::Export { format, file } => {
                let report = session_cmd::export(&mut self.client, &session, format).await;
                match (report, file) {
                    (Ok(report), Some(file)) => match std::fs::write(&file, &report.text) {
                        Ok(()) => self
                            .app
                            .transcript
                            .notice(format!("exported to {}", file.display()), Role::Notice),
                        Err(error) => self.app.transcript.notice(
                            format!("error: cannot write {}: {error}", file.display()),
                            Role::Bad,
                        ),
                    },
                    (report, _) => self.show(report),
                }
            }
            Slash::Mode(Some(mode)) => {
                self.app.mode = mode;
                self.app
                    .transcript
                    .notice(format!("text typed during a run: {}", mode.as_str()), Role::Notice);
            }
            Slash::Mode(None) => {
                let text = format!("text typed during a run: {}", self.app.mode.as_str());
                self.app.transcript.notice(text, Role::Notice);
            }
            Slash::Last | Slash::Expand(_) => {
                let tools: Vec<_> =
                    self.app.transcript.tools().filter(|t| t.end.is_some()).cloned().collect();
                let index = match slash {
                    Slash::Expand(n) => n.checked_sub(1),
                    _ => tools.len().checked_sub(1),
                };
                match index.and_then(|at| tools.get(at)) {
                    Some(tool) => {
                        let summary =
                            crate::render::summarize_arguments(&tool.name, &tool.arguments);
                        let failed = tool.end.as_ref().is_some_and(|end| end.is_error);
                        let status = if failed { "failed" } else { "ok" };
                        let text = format!(
                            "{} {summary} ({status}):\n{}",
                            tool.name,
                            tool.output.trim_end()
                        );
                        self.app.transcript.notice(text, Role::Plain);
                    }
                    None => self.app.transcript.notice(
                        format!("no such tool call ({} so far)", tools.len()),
                        Role::Notice,
                    ),
                }
            }
            Slash::Cancel => {
                let report = session_cmd::cancel(&mut self.client, &session).await;
                self.show(report);
            }
            Slash::Undo { turn, force } => {
                let report =
                    checkpoints::undo(&mut self.client, Some(&session), &cwd, turn, force).await;
                self.show(report);
            }
            Slash::Diff(turn) => {
                let report =
                    checkpoints::diff(&mut self.client, Some(&session), &cwd, turn, None).await;
                self.show(report);
            }
        }
    }
}
