//! The slash commands of both interactive clients, carried out once: the full-screen client
//! and the line-mode client each implement [`Screen`] (how to say something, how to switch to
//! another session, how to offer sessions to pick from) and hand every typed command to
//! [`run`].

use crate::client::{Client, ClientError};
use crate::commands::checkpoints;
use crate::commands::session::{self as session_cmd, Report};
use crate::follow::Follower;
use crate::gap::StreamCursor;
use crate::interactive::input::{BusyMode, Slash};
use crate::render::{ToolOutcome, summarize_arguments};
use crate::resolve;
use rein_protocol::method::{
    CreateSessionParams, ForkParams, RenameParams, SessionRef, SessionState, SessionSummary,
    SetApprovalPolicyParams, SetModelParams, SetThinkingParams, UnsubscribeParams,
};
use rein_protocol::requests::{self as rq, Method};
use std::path::PathBuf;

/// How a message of a slash command reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tone {
    /// A command's output.
    Plain,
    /// Something rein says about what it did.
    Notice,
    /// An error.
    Bad,
}

/// What a client offers the slash commands.
pub(crate) trait Screen {
    /// The connection to the daemon.
    fn client(&mut self) -> &mut Client;
    /// The session shown.
    fn session_id(&self) -> String;
    /// Its project directory.
    fn cwd(&self) -> PathBuf;
    /// Shows a message (without a trailing newline).
    fn say(&mut self, text: &str, tone: Tone);
    /// The keys to list after the commands in `/help`, when the client has its own.
    fn keys_help(&self) -> Option<String> {
        None
    }
    /// What text typed during a run does.
    fn mode(&mut self) -> &mut BusyMode;
    /// The tool calls finished since attaching, oldest first.
    fn tool_outcomes(&self) -> Vec<ToolOutcome>;
    /// Leaves.
    fn quit(&mut self);
    /// Clears the screen (`/clear`).
    fn clear(&mut self);
    /// A fresh `session/state` arrived (`/status`, `/rename`).
    fn refresh(&mut self, _state: &SessionState) {}
    /// Makes `state` the session shown; `created` when this client just made it.
    async fn switch(&mut self, state: SessionState, created: bool);
    /// Lets the person choose among `sessions` (`/resume` without an argument).
    async fn choose(&mut self, sessions: Vec<SessionSummary>);
}

/// A follower of `state`'s events from where its state leaves off.
pub(crate) fn follower(state: &SessionState) -> Follower {
    Follower::new(StreamCursor::new(&state.session_id, state.last_seq, state.leaf_id.clone()))
}

/// The first half of switching to `state`'s session: ends the old `subscription` and removes
/// the session this client had `created` when nothing was answered in it; `created` then
/// names the new session when this client just made it (`created_now`).
pub(crate) async fn hand_over(
    client: &mut Client,
    subscription: String,
    created: &mut Option<String>,
    state: &SessionState,
    created_now: bool,
) {
    let _ = client.request::<rq::SessionUnsubscribe>(UnsubscribeParams { subscription }).await;
    if let Some(previous) = created.take()
        && previous != state.session_id
    {
        crate::session::discard_if_unanswered(client, &previous).await;
    }
    if created_now {
        *created = Some(state.session_id.clone());
    }
}

/// Shows a command's report or its error.
fn show<S: Screen>(screen: &mut S, report: Result<Report, ClientError>) {
    match report {
        Ok(report) => screen.say(report.text.trim_end(), Tone::Plain),
        Err(error) => screen.say(&format!("error: {error}"), Tone::Bad),
    }
}

/// Makes a call whose result needs no showing; shows its error. True when it worked.
pub(crate) async fn call<S: Screen, M: Method>(screen: &mut S, params: M::Params) -> bool {
    match screen.client().request::<M>(params).await {
        Ok(_) => true,
        Err(error) => {
            screen.say(&format!("error: {error}"), Tone::Bad);
            false
        }
    }
}

/// The other sessions of the directory that hold a prompt, most recent first (`current`
/// included when given, for the picker shown on attach).
pub(crate) async fn resumable(
    client: &mut Client,
    cwd: &std::path::Path,
    current: &str,
    include_current: bool,
) -> Result<Vec<SessionSummary>, ClientError> {
    let sessions = resolve::list_sessions(client, Some(cwd)).await?;
    Ok(sessions
        .into_iter()
        .filter(|s| !resolve::is_empty(s))
        .filter(|s| include_current || s.session_id != current)
        .collect())
}

/// Opens `session_id` and switches to it.
pub(crate) async fn open<S: Screen>(screen: &mut S, session_id: &str) {
    let params = SessionRef { session_id: session_id.to_string() };
    match screen.client().request::<rq::SessionOpen>(params).await {
        Ok(state) => screen.switch(state, false).await,
        Err(error) => screen.say(&format!("error: {error}"), Tone::Bad),
    }
}

/// The numbered list line mode shows for `/resume`.
pub(crate) fn session_list(sessions: &[SessionSummary]) -> String {
    if sessions.is_empty() {
        return "no other session with a prompt in this directory".to_string();
    }
    let mut text = String::from("sessions of this directory (/resume N opens one):");
    for (at, session) in sessions.iter().enumerate() {
        let what = session
            .name
            .as_deref()
            .or(session.first_prompt.as_deref())
            .unwrap_or_default()
            .lines()
            .next()
            .unwrap_or_default()
            .chars()
            .take(60)
            .collect::<String>();
        text.push_str(&format!("\n  {:>2}  {}  {what}", at + 1, session.session_id));
    }
    text
}

/// Carries out a slash command.
pub(crate) async fn run<S: Screen>(screen: &mut S, slash: Slash) {
    let session = screen.session_id();
    let cwd = screen.cwd();
    if matches!(slash, Slash::Compact(_)) {
        screen.say("compacting…", Tone::Notice);
    }
    if let Some(report) = session_cmd::slash_report(screen.client(), &session, &cwd, &slash).await {
        show(screen, report);
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
            let text = match screen.keys_help() {
                Some(keys) => format!("{}\n\n{keys}", super::input::HELP),
                None => super::input::HELP.to_string(),
            };
            screen.say(&text, Tone::Plain);
        }
        Slash::Quit => screen.quit(),
        Slash::New => {
            let params = CreateSessionParams {
                cwd: cwd.display().to_string(),
                ..CreateSessionParams::default()
            };
            match screen.client().request::<rq::SessionCreate>(params).await {
                Ok(state) => screen.switch(state, true).await,
                Err(error) => screen.say(&format!("error: {error}"), Tone::Bad),
            }
        }
        Slash::Resume(which) => {
            let client = screen.client();
            let sessions = match resumable(client, &cwd, &session, false).await {
                Ok(sessions) => sessions,
                Err(error) => return screen.say(&format!("error: {error}"), Tone::Bad),
            };
            let Some(which) = which else { return screen.choose(sessions).await };
            let chosen = match which.parse::<usize>() {
                Ok(n) => {
                    n.checked_sub(1).and_then(|at| sessions.get(at)).map(|s| s.session_id.clone())
                }
                Err(_) => resolve::match_session(&sessions, &which).map(str::to_string),
            };
            match chosen {
                Some(id) => open(screen, &id).await,
                None => screen.say(
                    &format!("no session {which} among the {} listed by /resume", sessions.len()),
                    Tone::Bad,
                ),
            }
        }
        Slash::Fork => {
            let state = match current_state(screen).await {
                Some(state) => state,
                None => return,
            };
            let Some(entry_id) = state.leaf_id else {
                return screen.say("nothing to fork yet", Tone::Notice);
            };
            let params = ForkParams { session_id: session, entry_id };
            match screen.client().request::<rq::SessionFork>(params).await {
                Ok(state) => {
                    let id = state.session_id.clone();
                    screen.switch(state, false).await;
                    screen.say(&format!("forked into {id}"), Tone::Notice);
                }
                Err(error) => screen.say(&format!("error: {error}"), Tone::Bad),
            }
        }
        Slash::Rename(name) => {
            let params = RenameParams { session_id: session, name: name.clone() };
            if call::<S, rq::SessionRename>(screen, params).await {
                if let Some(state) = current_state(screen).await {
                    screen.refresh(&state);
                }
                screen.say(&format!("session named \"{name}\""), Tone::Notice);
            }
        }
        Slash::Approve(Some(policy)) => {
            let params = SetApprovalPolicyParams { session_id: session, policy };
            call::<S, rq::SessionSetApprovalPolicy>(screen, params).await;
        }
        Slash::Approve(None) | Slash::Status => {
            if let Some(state) = current_state(screen).await {
                screen.refresh(&state);
                screen.say(&status_text(&state), Tone::Plain);
            }
        }
        Slash::Clear => screen.clear(),
        Slash::Model(Some(model)) => {
            let params = SetModelParams { session_id: session, model };
            call::<S, rq::SessionSetModel>(screen, params).await;
        }
        Slash::Thinking(level) => {
            let params = SetThinkingParams { session_id: session, level };
            call::<S, rq::SessionSetThinking>(screen, params).await;
        }
        Slash::Export { format, file } => {
            let report = session_cmd::export(screen.client(), &session, format).await;
            match (report, file) {
                (Ok(report), Some(file)) => match std::fs::write(&file, &report.text) {
                    Ok(()) => screen.say(&format!("exported to {}", file.display()), Tone::Notice),
                    Err(error) => screen.say(
                        &format!("error: cannot write {}: {error}", file.display()),
                        Tone::Bad,
                    ),
                },
                (report, _) => show(screen, report),
            }
        }
        Slash::Mode(Some(mode)) => {
            *screen.mode() = mode;
            screen.say(&format!("text typed during a run: {}", mode.as_str()), Tone::Notice);
        }
        Slash::Mode(None) => {
            let mode = *screen.mode();
            screen.say(&format!("text typed during a run: {}", mode.as_str()), Tone::Notice);
        }
        Slash::Last => {
            let text = expand(&screen.tool_outcomes(), None);
            screen.say(&text, Tone::Plain);
        }
        Slash::Expand(n) => {
            let text = expand(&screen.tool_outcomes(), Some(n));
            screen.say(&text, Tone::Plain);
        }
        Slash::Cancel => {
            let report = session_cmd::cancel(screen.client(), &session).await;
            show(screen, report);
        }
        Slash::Undo { turn, force } => {
            let client = screen.client();
            let report = checkpoints::undo(client, Some(&session), &cwd, turn, force).await;
            show(screen, report);
        }
        Slash::Diff(turn) => {
            let client = screen.client();
            let report = checkpoints::diff(client, Some(&session), &cwd, turn, None).await;
            show(screen, report);
        }
    }
}

/// The session's state now; an error is shown.
async fn current_state<S: Screen>(screen: &mut S) -> Option<SessionState> {
    let session = SessionRef { session_id: screen.session_id() };
    match screen.client().request::<rq::SessionState>(session).await {
        Ok(state) => Some(state),
        Err(error) => {
            screen.say(&format!("error: {error}"), Tone::Bad);
            None
        }
    }
}

/// What `/status` says about a session: where it is, its model and policy, how full its
/// context is, what it used and cost, and what is queued.
fn status_text(state: &SessionState) -> String {
    let percent = match state.context_window {
        0 => 0,
        window => state.context_tokens.saturating_mul(100) / window,
    };
    let mut text = format!(
        "session {}{}\n  directory {}\n  model {} (thinking {})\n  approval policy {}\n  context {} of {} tokens ({percent}%)\n  used {} tokens, ${:.4}\n  queue {} steering, {} follow-up\n  {}",
        state.session_id,
        state.name.as_deref().map(|name| format!(" \"{name}\"")).unwrap_or_default(),
        state.cwd,
        state.model,
        state.thinking_level.as_str(),
        state.approval_policy.as_str(),
        state.context_tokens,
        state.context_window,
        state.usage.total_tokens,
        state.usage.cost.total,
        state.queues.steering.len(),
        state.queues.follow_up.len(),
        if state.running { "a run is active" } else { "idle" },
    );
    if !state.trusted {
        text.push_str("\n  project not trusted (/trust reads its AGENTS.md and settings)");
    }
    text
}

/// The full output of the `n`-th (1-based) tool call, or of the last one.
fn expand(outcomes: &[ToolOutcome], n: Option<usize>) -> String {
    let index = match n {
        Some(n) => n.checked_sub(1),
        None => outcomes.len().checked_sub(1),
    };
    let Some(outcome) = index.and_then(|index| outcomes.get(index)) else {
        return format!("no such tool call ({} so far)", outcomes.len());
    };
    let status = if outcome.is_error { "failed" } else { "ok" };
    format!(
        "{} {} ({status}):\n{}",
        outcome.tool_name,
        summarize_arguments(&outcome.tool_name, &outcome.arguments),
        outcome.output.trim_end()
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    /// A listed session with this id and first prompt, made at 20:00 and last changed at
    /// 20:01 on 2026-12-01.
    pub(crate) fn summary(id: &str, prompt: &str) -> SessionSummary {
        let value = json!({
            "session_id": id, "cwd": "/p", "first_prompt": prompt, "entry_count": 2,
            "size_bytes": 10, "created": "2026-12-01T20:00:00Z",
            "updated": "2026-12-01T20:01:00Z", "path": "/p/s.jsonl"
        });
        serde_json::from_value::<SessionSummary>(value).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn expand_shows_the_full_output_of_a_tool_call() {
        let outcomes = vec![
            ToolOutcome {
                tool_name: "bash".into(),
                arguments: json!({"command": "ls"}),
                output: "a\nb".into(),
                is_error: false,
            },
            ToolOutcome {
                tool_name: "read".into(),
                arguments: json!({"path": "x"}),
                output: "nope\n".into(),
                is_error: true,
            },
        ];
        assert_eq!(expand(&outcomes, Some(1)), "bash ls (ok):\na\nb");
        assert_eq!(expand(&outcomes, None), "read x (failed):\nnope");
        assert!(expand(&outcomes, Some(3)).starts_with("no such tool call (2 so far)"));
        assert!(expand(&[], None).starts_with("no such tool call"));
    }

    #[test]
    fn the_resume_list_numbers_the_sessions() {
        let text = session_list(&[summary("s-1", "fix the parser\nand more"), summary("s-2", "x")]);
        assert_eq!(
            text,
            "sessions of this directory (/resume N opens one):\n   1  s-1  fix the parser\n   2  s-2  x"
        );
        assert!(session_list(&[]).starts_with("no other session"));
    }
}
