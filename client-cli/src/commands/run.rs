//! `rein run`: one prompt, streamed, with an exit code a script can act on.
//!
//! The flow is the protocol's own: `initialize`, `session/create` (or `session/open`),
//! `session/subscribe` from the state's `last_seq`, `session/prompt`, then events until the
//! run's `agent_end` and the `settled` after it. Ctrl-C sends `session/cancel`, so the run stops
//! in the daemon too; a second Ctrl-C leaves without waiting.

use crate::client::{Client, ClientError};
use crate::commands::exit;
use crate::interrupt::Interrupts;
use crate::render::{Chunk, RenderOptions, Renderer, Stream};
use crate::resolve;
use crate::session::{self, ApproveArg, SessionRequest, Target};
use crate::style::Style;
use clap::Args;
use rein_protocol::event::{ApprovalDecision, EndReason, SessionEvent, SubscriptionItem};
use rein_protocol::method::{
    ApprovalRespondParams, BusyBehavior, PromptDisposition, PromptParams, PromptResult, RunLimits,
    SessionRef, SessionState, names,
};
use rein_protocol::verify::{RunOutcome, VerifyRequest};
use serde_json::Value;
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

/// `rein run` arguments.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// The model, as PROVIDER/MODEL (default: the configured one, or the session's).
    #[arg(long, value_name = "PROVIDER/MODEL")]
    pub model: Option<String>,
    /// The project directory (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Continue this session (an id or a unique id prefix).
    #[arg(long, value_name = "ID", conflicts_with = "continue_")]
    pub session: Option<String>,
    /// Continue the most recent session of the directory.
    #[arg(long = "continue", short = 'c')]
    pub continue_: bool,
    /// The approval policy for tool calls.
    #[arg(long, value_enum, value_name = "POLICY")]
    pub approve: Option<ApproveArg>,
    /// The most turns (model requests) the run may take.
    #[arg(long, value_name = "N")]
    pub max_turns: Option<u32>,
    /// A check to run when the model stops (repeatable; replaces the configured `[verify]`
    /// commands). A failing check is fed back to the model, up to `max_rounds` rounds.
    #[arg(long = "verify", value_name = "CMD")]
    pub verify: Vec<String>,
    /// Print every event as one JSON line on stdout instead of text.
    #[arg(long)]
    pub json: bool,
    /// The prompt; read from stdin when absent or `-`.
    #[arg(value_name = "PROMPT", trailing_var_arg = true)]
    pub prompt: Vec<String>,
}

/// The exit code for a run that ended with `reason` and `outcome`: a run the model ended
/// whose checks still failed is `VERIFY_FAILED`; otherwise the reason decides.
pub fn exit_code(reason: EndReason, outcome: RunOutcome) -> u8 {
    match reason {
        EndReason::Completed if outcome == RunOutcome::VerifyFailed => exit::VERIFY_FAILED,
        EndReason::Completed => exit::OK,
        EndReason::Cancelled => exit::CANCELLED,
        EndReason::MaxTurns
        | EndReason::CostLimit
        | EndReason::TimeLimit
        | EndReason::ToolFailureLimit => exit::LIMIT,
        EndReason::Error => exit::FAILURE,
    }
}

/// Where the prompt comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum PromptSource {
    Arguments(String),
    Stdin,
}

fn prompt_source(words: &[String]) -> PromptSource {
    if words.is_empty() || words == ["-"] {
        PromptSource::Stdin
    } else {
        PromptSource::Arguments(words.join(" "))
    }
}

/// Runs one prompt and returns the exit code.
pub async fn run(socket: &Path, args: RunArgs) -> Result<u8, ClientError> {
    let source = prompt_source(&args.prompt);
    let from_stdin = source == PromptSource::Stdin;
    let prompt = match source {
        PromptSource::Arguments(text) => text,
        PromptSource::Stdin if std::io::stdin().is_terminal() => {
            eprintln!("rein: no prompt given (pass it as an argument or on stdin)");
            return Ok(exit::USAGE);
        }
        PromptSource::Stdin => {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text)?;
            text
        }
    };
    if prompt.trim().is_empty() {
        eprintln!("rein: the prompt is empty");
        return Ok(exit::USAGE);
    }
    let cwd = match resolve::absolute_dir(args.cwd.as_deref()) {
        Ok(cwd) => cwd,
        Err(error) => {
            let shown = args.cwd.as_deref().unwrap_or(Path::new(".")).display().to_string();
            eprintln!("rein: cannot use {shown} as the project directory: {error}");
            return Ok(exit::USAGE);
        }
    };
    // A person can answer approvals only when both the keyboard and the messages are theirs.
    let approvals =
        !from_stdin && std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let mut interrupts = Interrupts::catch()?;
    let mut client = Client::connect_or_start(socket).await?;
    client.initialize(approvals).await?;
    let target = match (&args.session, args.continue_) {
        (Some(id), _) => Target::Named(id.clone()),
        (None, true) => Target::Latest,
        (None, false) => Target::New,
    };
    let request = SessionRequest {
        target,
        cwd,
        model: args.model.clone(),
        approval: args.approve.map(Into::into),
    };
    let (state, _) = session::prepare(&mut client, &request).await?;
    let session_id = state.session_id.clone();
    eprintln!("session: {session_id}");
    client.subscribe(&session_id, state.last_seq).await?;
    let params = PromptParams {
        session_id: session_id.clone(),
        text: prompt,
        images: Vec::new(),
        when_busy: Some(BusyBehavior::FollowUp),
        limits: RunLimits { max_turns: args.max_turns, ..RunLimits::default() },
        verify: (!args.verify.is_empty()).then(|| VerifyRequest::Commands(args.verify.clone())),
    };
    let started: PromptResult = client.call_as(names::SESSION_PROMPT, params).await?;
    let mut follower = RunFollower {
        client,
        session_id,
        run_id: started.run_id,
        queued: started.disposition == PromptDisposition::Queued,
        json: args.json,
        approvals,
        renderer: Renderer::new(RenderOptions { style: Style::for_stderr(), interactive: false }),
    };
    follower.follow(&mut interrupts).await
}

/// Reads a run's events until it is over.
struct RunFollower {
    client: Client,
    session_id: String,
    run_id: String,
    /// The prompt waits behind another client's run.
    queued: bool,
    json: bool,
    approvals: bool,
    renderer: Renderer,
}

impl RunFollower {
    async fn follow(&mut self, interrupts: &mut Interrupts) -> Result<u8, ClientError> {
        let mut ended: Option<(EndReason, RunOutcome)> = None;
        let mut ours = false;
        let mut cancel_sent = false;
        loop {
            let notice = tokio::select! {
                () = interrupts.next() => {
                    if cancel_sent {
                        eprintln!("rein: interrupted again; leaving without waiting");
                        return Ok(exit::CANCELLED);
                    }
                    if self.queued && !ours {
                        // Cancelling now would stop another client's run, not ours.
                        eprintln!("rein: interrupted before the queued prompt started; it stays queued (rein cancel {} cancels the session's run)", self.session_id);
                        return Ok(exit::CANCELLED);
                    }
                    cancel_sent = true;
                    eprintln!("rein: cancelling the run (Ctrl-C again to leave at once)");
                    let params = SessionRef { session_id: self.session_id.clone() };
                    self.client.call_as::<Value>(names::SESSION_CANCEL, params).await?;
                    continue;
                }
                notice = self.client.next_session_item() => notice?,
            };
            let envelope = match notice.item {
                SubscriptionItem::Event(envelope) => envelope,
                SubscriptionItem::Lagged { .. } | SubscriptionItem::ResyncRequired { .. } => {
                    match self.resync().await? {
                        Some(code) => return Ok(code),
                        None => continue,
                    }
                }
                SubscriptionItem::Unknown => continue,
            };
            match &envelope.event {
                SessionEvent::AgentStart { run_id } if *run_id == self.run_id => ours = true,
                // Someone else's follow-up starts after ours: ours is over.
                SessionEvent::AgentStart { .. } if ended.is_some() => break,
                _ => {}
            }
            // Another client's run that was going when we queued ours is not ours to show.
            if !ours {
                continue;
            }
            if self.json {
                println!("{}", notice.raw);
            } else {
                print_chunks(self.renderer.render(&envelope.event));
            }
            match &envelope.event {
                SessionEvent::AgentEnd { run_id, reason, outcome, .. }
                    if *run_id == self.run_id =>
                {
                    ended = Some((*reason, *outcome));
                }
                SessionEvent::Settled if ended.is_some() => break,
                SessionEvent::ApprovalRequested { request_id, .. } if self.approvals => {
                    self.ask_approval(request_id).await?;
                }
                _ => {}
            }
        }
        let (reason, outcome) = ended.unwrap_or((EndReason::Error, RunOutcome::Unverified));
        Ok(if cancel_sent { exit::CANCELLED } else { exit_code(reason, outcome) })
    }

    /// After a gap in the events: when the run is still going, follow it from the current
    /// state; when it is over, its ending was lost, so say so.
    async fn resync(&mut self) -> Result<Option<u8>, ClientError> {
        let params = SessionRef { session_id: self.session_id.clone() };
        let state: SessionState = self.client.call_as(names::SESSION_STATE, params).await?;
        if state.running {
            self.client.subscribe(&self.session_id, state.last_seq).await?;
            return Ok(None);
        }
        eprintln!(
            "rein: fell behind the event stream and the run has ended; its outcome is in the session"
        );
        Ok(Some(exit::FAILURE))
    }

    /// Asks on the terminal and answers the daemon.
    async fn ask_approval(&mut self, request_id: &str) -> Result<(), ClientError> {
        print_chunks(self.renderer.finish());
        eprint!("allow? [y]es once, [a]lways this session, [n]o (reason after n): ");
        let _ = std::io::stderr().flush();
        let line = tokio::task::spawn_blocking(|| {
            let mut line = String::new();
            std::io::stdin().read_line(&mut line).map(|_| line)
        })
        .await
        .map_err(|error| ClientError::Io(std::io::Error::other(error)))??;
        let (decision, reason) = crate::interactive::input::parse_approval(&line)
            .unwrap_or((ApprovalDecision::Deny, None));
        let params = ApprovalRespondParams {
            session_id: self.session_id.clone(),
            request_id: request_id.to_string(),
            decision,
            reason,
        };
        match self.client.call_as::<Value>(names::APPROVAL_RESPOND, params).await {
            Ok(_) | Err(ClientError::Rpc(_)) => Ok(()),
            Err(other) => Err(other),
        }
    }
}

/// Writes rendered chunks to their streams, flushing so text appears as it arrives.
pub fn print_chunks(chunks: Vec<Chunk>) {
    if chunks.is_empty() {
        return;
    }
    let mut stdout = std::io::stdout().lock();
    let mut stderr = std::io::stderr().lock();
    for chunk in chunks {
        let _ = match chunk.stream {
            Stream::Out => stdout.write_all(chunk.text.as_bytes()),
            Stream::Err => {
                let _ = stdout.flush();
                stderr.write_all(chunk.text.as_bytes())
            }
        };
    }
    let _ = stdout.flush();
    let _ = stderr.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_the_end_reason() {
        let none = RunOutcome::Unverified;
        assert_eq!(exit_code(EndReason::Completed, none), 0);
        assert_eq!(exit_code(EndReason::Completed, RunOutcome::Verified), 0);
        assert_eq!(exit_code(EndReason::Completed, RunOutcome::VerifyFailed), 7);
        assert_eq!(exit_code(EndReason::Error, none), 1);
        assert_eq!(exit_code(EndReason::MaxTurns, none), 3);
        assert_eq!(exit_code(EndReason::MaxTurns, RunOutcome::VerifyFailed), 3);
        assert_eq!(exit_code(EndReason::CostLimit, none), 3);
        assert_eq!(exit_code(EndReason::TimeLimit, none), 3);
        assert_eq!(exit_code(EndReason::ToolFailureLimit, none), 3);
        assert_eq!(exit_code(EndReason::Cancelled, none), 130);
    }

    #[test]
    fn the_prompt_comes_from_arguments_or_stdin() {
        assert_eq!(prompt_source(&[]), PromptSource::Stdin);
        assert_eq!(prompt_source(&["-".into()]), PromptSource::Stdin);
        assert_eq!(
            prompt_source(&["fix".into(), "it".into()]),
            PromptSource::Arguments("fix it".into())
        );
    }
}
