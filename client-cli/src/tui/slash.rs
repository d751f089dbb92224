//! The full-screen client as a [`Screen`] for the slash commands both interactive clients
//! share ([`crate::interactive::slash`]): messages become transcript notices, `/resume`
//! opens the session picker, a switch resubscribes and redraws.

use super::Runtime;
use super::app::{App, Picker};
use super::theme::Role;
use crate::client::Client;
use crate::interactive::input::BusyMode;
use crate::interactive::slash::{self, Screen, Tone};
use crate::render::ToolOutcome;
use rein_protocol::method::{SessionState, SessionSummary};
use std::path::PathBuf;
use std::time::Instant;

impl Runtime {
    /// On attach without a session: when the directory has other sessions with a prompt, the
    /// picker lists them with the current one highlighted (Esc keeps it).
    pub(super) async fn offer_sessions(&mut self) {
        let current = self.app.session.id.clone();
        let cwd = self.app.session.cwd.clone();
        match slash::resumable(&mut self.client, &cwd, &current, true).await {
            Ok(sessions) if sessions.len() >= 2 => {
                let selected = sessions.iter().position(|s| s.session_id == current).unwrap_or(0);
                self.app.picker = Some(Picker { sessions, selected });
            }
            Ok(_) => {}
            Err(error) => self.app.transcript.notice(format!("error: {error}"), Role::Bad),
        }
    }
}

impl Screen for Runtime {
    fn client(&mut self) -> &mut Client {
        &mut self.client
    }

    fn session_id(&self) -> String {
        self.app.session.id.clone()
    }

    fn cwd(&self) -> PathBuf {
        self.app.session.cwd.clone()
    }

    fn say(&mut self, text: &str, tone: Tone) {
        let role = match tone {
            Tone::Plain => Role::Plain,
            Tone::Notice => Role::Notice,
            Tone::Bad => Role::Bad,
        };
        self.app.transcript.notice(text.to_string(), role);
    }

    fn keys_help(&self) -> Option<String> {
        Some(super::keys::help(&self.app.keys))
    }

    fn mode(&mut self) -> &mut BusyMode {
        &mut self.app.mode
    }

    fn tool_outcomes(&self) -> Vec<ToolOutcome> {
        self.app
            .transcript
            .tools()
            .filter_map(|tool| {
                let end = tool.end.as_ref()?;
                Some(ToolOutcome {
                    tool_name: tool.name.clone(),
                    arguments: tool.arguments.clone(),
                    output: tool.output.clone(),
                    is_error: end.is_error,
                })
            })
            .collect()
    }

    fn quit(&mut self) {
        self.quit = true;
    }

    fn clear(&mut self) {
        self.app.transcript.clear();
        self.app.scroll = 0;
    }

    fn refresh(&mut self, state: &SessionState) {
        self.app.refresh(state, Instant::now());
    }

    async fn switch(&mut self, state: SessionState, created: bool) {
        let old = std::mem::take(&mut self.subscription);
        slash::hand_over(&mut self.client, old, &mut self.created, &state, created).await;
        let now = Instant::now();
        let history = self.app.editor.history().to_vec();
        let (theme, view, mode) = (self.app.theme, self.app.view, self.app.mode);
        let keys = std::mem::take(&mut self.app.keys);
        self.app = App::new(&state, theme, history, now);
        self.app.set_keys(keys);
        self.app.view = view;
        self.app.mode = mode;
        self.stream = state.stream.clone();
        self.follower = slash::follower(&state);
        if let Err(error) = self.start(&state, created).await {
            self.app.transcript.notice(format!("error: {error}"), Role::Bad);
        }
    }

    async fn choose(&mut self, sessions: Vec<SessionSummary>) {
        self.app.picker = Some(Picker { sessions, selected: 0 });
    }
}
