//! `rein run`: one prompt, streamed, with an exit code a script can act on.
//!
//! The flow is the protocol's own: `initialize`, `session/create` (or `session/open`),
//! `session/subscribe` from the state's `last_seq`, `session/prompt`, then events until the
//! run's `agent_end` and the `settled` after it. Ctrl-C sends `session/cancel`, so the run stops
//! in the daemon too; a second Ctrl-C leaves without waiting.

use crate::client::{Client, ClientError};
use crate::commands::exit;
use crate::follow::{Followed, Follower};
use crate::gap::{Gap, StreamCursor};
use crate::interrupt::Interrupts;
use crate::render::{Chunk, RenderOptions, Renderer, Stream};
use crate::resolve;
use crate::session::{self, ApproveArg, SessionRequest, Target};
use crate::style::Style;
use clap::Args;
use rein_protocol::error::ErrorKind;
use rein_protocol::event::{ApprovalDecision, EndReason, SessionEvent};
use rein_protocol::method::{
    ApprovalRespondParams, BusyBehavior, PromptDisposition, PromptParams, PromptResult, RunLimits,
    SandboxMode, SessionRef,
};
use rein_protocol::requests as rq;
use rein_protocol::verify::{RunOutcome, VerifyRequest};
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
    /// Where the new session's tools run: read-only, workspace-write, container or off (default: the
    /// configured `sandbox`). Fails when the sandbox cannot be had.
    #[arg(long, value_name = "MODE", value_parser = session::parse_sandbox)]
    pub sandbox: Option<SandboxMode>,
    /// The most turns (model requests) the run may take.
    #[arg(long, value_name = "N")]
    pub max_turns: Option<u32>,
    /// The most the run may cost, in US dollars.
    #[arg(long, value_name = "USD", value_parser = parse_cost)]
    pub max_cost: Option<f64>,
    /// The most wall time the run may take, in seconds.
    #[arg(long, value_name = "SECONDS")]
    pub max_seconds: Option<u64>,
    /// A check to run when the model stops (repeatable; replaces the configured `[verify]`
    /// commands). A failing check is fed back to the model, up to `max_rounds` rounds.
    #[arg(long = "verify", value_name = "CMD")]
    pub verify: Vec<String>,
    /// Print every event as one JSON line on stdout instead of text.
    #[arg(long)]
    pub json: bool,
    /// The prompt; read from stdin when absent or `-`. Options may follow it; `--` ends the
    /// options, so everything after it is prompt text even when it starts with `-`.
    #[arg(value_name = "PROMPT")]
    pub prompt: Vec<String>,
}

/// The exit code for a run that ended with `reason` and `outcome`: a run the model ended
/// whose checks still failed is `VERIFY_FAILED`; otherwise the reason decides.
pub fn exit_code(reason: EndReason, outcome: RunOutcome) -> u8 {
    match reason {
        EndReason::Completed if outcome == RunOutcome::VerifyFailed => exit::VERIFY_FAILED,
        EndReason::Completed => exit::OK,
        EndReason::Cancelled => exit::CANCELLED,
        EndReason::MaxTurns => exit::MAX_TURNS,
        EndReason::CostLimit => exit::COST_LIMIT,
        EndReason::TimeLimit => exit::TIME_LIMIT,
        EndReason::ToolFailureLimit => exit::OTHER_LIMIT,
        EndReason::Error => exit::FAILURE,
    }
}

/// A cost limit: a finite, non-negative number of US dollars.
fn parse_cost(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(cost) if cost.is_finite() && cost >= 0.0 => Ok(cost),
        _ => Err(format!("`{text}` is not a cost in US dollars (e.g. 0.50)")),
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

/// Runs one prompt and returns the exit code. `ahead` is a connection to `socket` made
/// before the arguments were parsed (see [`crate::ahead`]); without one, it connects here.
pub async fn run(socket: &Path, args: RunArgs, ahead: Option<Client>) -> Result<u8, ClientError> {
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
    let mut client = match ahead {
        Some(client) => client,
        None => Client::connect_or_start(socket).await?,
    };
    client.initialize(approvals).await?;
    let daemon_info = crate::commands::daemon::warn(&mut client).await;
    let target = match (&args.session, args.continue_) {
        (Some(id), _) => Target::Named(id.clone()),
        (None, true) => Target::Latest,
        (None, false) => Target::New,
    };
    if args.sandbox.is_some() && target != Target::New {
        eprintln!("rein: --sandbox applies to a new session; it cannot change an existing one");
        return Ok(exit::USAGE);
    }
    let request = SessionRequest {
        target,
        cwd,
        model: args.model.clone(),
        approval: args.approve.map(Into::into),
        sandbox: args.sandbox,
    };
    let (state, created) = session::prepare(&mut client, &request).await?;
    if created
        && args.model.is_none()
        && let Some(note) =
            daemon_info.as_ref().and_then(|info| session::local_server_note(info, &state))
    {
        eprintln!("{note}");
    }
    let session_id = state.session_id.clone();
    eprintln!("session: {session_id}");
    client.subscribe(&session_id, state.last_seq).await?;
    let cursor = StreamCursor::new(&session_id, state.last_seq, state.leaf_id.clone());
    let params = PromptParams {
        session_id: session_id.clone(),
        text: prompt,
        images: Vec::new(),
        when_busy: Some(BusyBehavior::FollowUp),
        limits: RunLimits {
            max_turns: args.max_turns,
            max_cost: args.max_cost,
            max_seconds: args.max_seconds,
            max_failed_turns: None,
        },
        verify: (!args.verify.is_empty()).then(|| VerifyRequest::Commands(args.verify.clone())),
    };
    let started: PromptResult = match client.request::<rq::SessionPrompt>(params).await {
        Ok(started) => started,
        Err(error) => {
            if created {
                session::discard_if_unanswered(&mut client, &session_id).await;
            }
            return Err(error);
        }
    };
    let mut follower = RunFollower {
        client,
        session_id,
        run_id: started.run_id,
        queued: started.disposition == PromptDisposition::Queued,
        json: args.json,
        approvals,
        follower: Follower::new(cursor),
        end_check: None,
        storage_failed: false,
        renderer: Renderer::new(RenderOptions { style: Style::for_stderr(), interactive: false }),
    };
    let code = follower.follow(&mut interrupts).await;
    // A first prompt that failed leaves no session behind (`rein run -c` would pick it),
    // unless it failed on storage: then what was written is kept for `--session` to resume.
    if created && !follower.storage_failed && matches!(code, Ok(exit::FAILURE) | Err(_)) {
        let session_id = follower.session_id.clone();
        if session::discard_if_unanswered(&mut follower.client, &session_id).await {
            eprintln!("rein: the session was removed, since nothing was answered in it");
        }
    }
    code
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
    /// Follows the session's events, filling gaps.
    follower: Follower,
    /// Set when a gap was filled after the run may have ended: the gap, and the seq by which
    /// the run's end must have been seen if it was not lost in the gap.
    end_check: Option<(Gap, u64)>,
    /// The run reported a storage (`io`) failure: its session may hold acknowledged entries
    /// worth resuming once there is room again, so it is never removed.
    storage_failed: bool,
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
                    self.client.request::<rq::SessionCancel>(params).await?;
                    continue;
                }
                notice = self.client.next_session_item() => notice?,
            };
            let (envelope, raw) = match self.follower.accept(&mut self.client, notice).await? {
                Some(Followed::Event { envelope, raw }) => (envelope, raw),
                Some(Followed::Gap(gap)) => {
                    self.after_gap(&gap, ended.is_some());
                    // The run's start may have been lost in the gap.
                    ours = ours || gap.running.as_deref() == Some(self.run_id.as_str());
                    if ended.is_none()
                        && let Some(code) = self.check_lost_end(self.follower.cursor().last_seq())
                    {
                        return Ok(code);
                    }
                    continue;
                }
                None => continue,
            };
            if ended.is_none()
                && !matches!(&envelope.event, SessionEvent::AgentEnd { run_id, .. } if *run_id == self.run_id)
                && let Some(code) = self.check_lost_end(envelope.seq)
            {
                return Ok(code);
            }
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
                println!("{raw}");
            } else {
                print_chunks(self.renderer.render_envelope(&envelope));
            }
            match &envelope.event {
                SessionEvent::Error { error_kind: ErrorKind::Io, .. } => self.storage_failed = true,
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
            if ended.is_some() {
                self.end_check = None;
            }
        }
        let (reason, outcome) = ended.unwrap_or((EndReason::Error, RunOutcome::Unverified));
        Ok(if cancel_sent { exit::CANCELLED } else { exit_code(reason, outcome) })
    }

    /// After a gap was filled (see [`Follower`]): reports the hole with the entries that fill
    /// it. When the run may have ended inside it, its end is looked for in what follows
    /// ([`RunFollower::check_lost_end`]).
    fn after_gap(&mut self, gap: &Gap, ended: bool) {
        self.report_gap(gap, None);
        let ours_running = gap.running.as_deref() == Some(self.run_id.as_str());
        let waiting_behind_another = self.queued && gap.running.is_some();
        if !ended && !ours_running && !waiting_behind_another {
            // The run is over: its end must be among the buffered events up to the session's
            // last seq at the filling, or it was lost with the gap.
            self.end_check = Some((gap.clone(), gap.last_seq_then));
        }
    }

    /// With a gap pending its check: once everything up to the seq the session had reached
    /// at the filling was seen without the run's end, the end was lost in the gap.
    fn check_lost_end(&mut self, seen_seq: u64) -> Option<u8> {
        let (gap, by_seq) = self.end_check.as_ref()?;
        if seen_seq < *by_seq {
            return None;
        }
        // The entries went out with the first record; this one says what they cannot tell.
        let gap = Gap { entries: Vec::new(), ..gap.clone() };
        self.end_check = None;
        self.report_gap(&gap, Some("the run ended inside the gap, so its outcome is not known"));
        Some(exit::GAP)
    }

    /// Prints the gap: one JSON record with `--json`, else the recovered entries as text.
    fn report_gap(&mut self, gap: &Gap, lost: Option<&str>) {
        if self.json {
            println!("{}", gap.record(lost));
            return;
        }
        print_chunks(self.renderer.finish());
        print!("{}", gap.text());
        if let Some(lost) = lost {
            eprintln!("rein: {lost}; the session holds what happened");
        }
        let _ = std::io::stdout().flush();
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
        match self.client.request::<rq::ApprovalRespond>(params).await {
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
        assert_eq!(exit_code(EndReason::CostLimit, none), 4);
        assert_eq!(exit_code(EndReason::TimeLimit, none), 5);
        assert_eq!(exit_code(EndReason::ToolFailureLimit, none), 6);
        assert_eq!(exit_code(EndReason::Cancelled, none), 130);
    }

    #[derive(Debug, clap::Parser)]
    struct Line {
        #[command(flatten)]
        args: RunArgs,
    }

    fn parse(words: &[&str]) -> RunArgs {
        use clap::Parser;
        let line = Line::try_parse_from(std::iter::once("run").chain(words.iter().copied()));
        match line {
            Ok(line) => line.args,
            Err(error) => panic!("{words:?}: {error}"),
        }
    }

    #[test]
    fn options_after_the_prompt_are_options_and_a_double_dash_ends_them() {
        let args = parse(&["hello there", "--approve", "yolo", "--json"]);
        assert_eq!(args.prompt, ["hello there"]);
        assert!(args.json);
        assert_eq!(args.approve, Some(ApproveArg::Yolo));
        let args = parse(&["fix", "it", "--max-turns", "3"]);
        assert_eq!(args.prompt, ["fix", "it"]);
        assert_eq!(args.max_turns, Some(3));
        let args = parse(&["--json", "--", "explain", "--json", "-c"]);
        assert!(args.json);
        assert!(!args.continue_);
        assert_eq!(args.prompt, ["explain", "--json", "-c"]);
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
