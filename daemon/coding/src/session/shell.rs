//! User shell commands (the `!cmd` of other agents): run in the project directory with the
//! `bash` tool's runner (own process group, output streamed as `shell_output`), cancellable,
//! and, with `add_to_context`, recorded as a user message so the model sees what the user
//! saw.
//!
//! One user shell command runs at a time. A command that adds to the context needs the
//! session idle and keeps it busy until it ends, because its message must land between runs;
//! a cancelled command is not added.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rein_protocol::EntryKind;
use rein_protocol::clock::now_ms;
use rein_protocol::event::SessionEvent;
use rein_protocol::message::{ContentBlock, Message, UserMessage};
use rein_protocol::method::ShellResult;
use rein_session::Session;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::error::CodingError;
use super::{ActiveOperation, CodingSession, Operation};
use crate::tools::{CommandOutcome, CommandRequest, run_command};

/// The user shell command running now, if any.
#[derive(Default)]
pub(crate) struct ShellSlot {
    running: Mutex<Option<CancellationToken>>,
    finished: Mutex<Option<watch::Receiver<bool>>>,
}

impl ShellSlot {
    fn lock(&self) -> MutexGuard<'_, Option<CancellationToken>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Cancels the running command; false when none runs.
    pub(crate) fn cancel(&self) -> bool {
        match self.lock().as_ref() {
            Some(cancel) => {
                cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// Whether a command runs.
    pub(crate) fn is_running(&self) -> bool {
        self.lock().is_some()
    }

    /// Waits until no command runs.
    pub(crate) async fn wait(&self) {
        let finished = self.finished.lock().unwrap_or_else(PoisonError::into_inner).clone();
        if let Some(mut finished) = finished {
            let _ = finished.wait_for(|done| *done).await;
        }
    }
}

/// The user message recording a command and what it printed.
pub(crate) fn shell_message(command: &str, outcome: &CommandOutcome) -> Message {
    let mut text = format!("I ran this shell command:\n$ {command}\n");
    if outcome.truncated {
        text.push_str(&format!(
            "[only the last {} lines of output are shown]\n",
            outcome.shown_lines
        ));
    }
    text.push_str(&outcome.output);
    if !outcome.output.is_empty() && !outcome.output.ends_with('\n') {
        text.push('\n');
    }
    match (outcome.exit_code, outcome.signal, outcome.timed_out) {
        (_, _, true) => text.push_str("[timed out]"),
        (Some(code), _, _) => text.push_str(&format!("[exit code {code}]")),
        (None, Some(signal), _) => text.push_str(&format!("[killed by signal {signal}]")),
        (None, None, false) => text.push_str("[ended]"),
    }
    if let Some(note) = &outcome.full_output_note {
        text.push_str(&format!("\n[{note}]"));
    }
    Message::User(UserMessage { content: vec![ContentBlock::text(text)], timestamp: now_ms() })
}

impl CodingSession {
    /// Runs a user shell command in the project directory and returns its id at once; its
    /// output arrives as `shell_start`, `shell_output` and `shell_end` events. With
    /// `add_to_context`, the command and its (cut) output become a user message of the
    /// history before `shell_end`; that needs the session idle (`session_busy` otherwise).
    pub async fn shell(
        &self,
        command: String,
        add_to_context: bool,
    ) -> Result<ShellResult, CodingError> {
        if command.trim().is_empty() {
            return Err(CodingError::InvalidParams("the command is empty".into()));
        }
        let session = self.me.upgrade().ok_or(CodingError::Closed)?;
        let cancel = CancellationToken::new();
        // The slot is claimed before the operation, and both under their locks, so two
        // commands never start together.
        {
            let mut running = self.shell.lock();
            if running.is_some() {
                return Err(CodingError::Busy("a shell command is running"));
            }
            if add_to_context {
                let mut operation = self.operation();
                if let Some(active) = operation.as_ref() {
                    return Err(active.kind.busy_error());
                }
                if self.harness.is_running() {
                    return Err(CodingError::Busy(
                        "a run is active; a shell command that adds to the context must wait",
                    ));
                }
                *operation = Some(ActiveOperation {
                    kind: Operation::ShellIntoContext,
                    cancel: cancel.clone(),
                });
            }
            *running = Some(cancel.clone());
        }
        let (done, finished) = watch::channel(false);
        *self.shell.finished.lock().unwrap_or_else(PoisonError::into_inner) = Some(finished);
        let shell_id = format!("sh-{}", uuid::Uuid::now_v7());
        let env = self.env();
        let request = CommandRequest {
            command,
            cwd: PathBuf::from(&self.cwd),
            shell: env.defaults.bash.shell.clone(),
            timeout: env.defaults.bash.default_timeout,
            output_dir: crate::tools::spill::session_dir(&env.output_dir, &self.id),
            spill: env.defaults.bash.spill,
            hidden_env: env.defaults.bash.hidden_env.clone(),
        };
        let id = shell_id.clone();
        tokio::spawn(async move {
            session.run_shell(&id, &request, add_to_context, &cancel).await;
            *session.shell.lock() = None;
            if add_to_context {
                *session.operation() = None;
            }
            done.send_replace(true);
        });
        Ok(ShellResult { shell_id })
    }

    async fn run_shell(
        self: &Arc<Self>,
        shell_id: &str,
        request: &CommandRequest,
        add_to_context: bool,
        cancel: &CancellationToken,
    ) {
        self.emit(SessionEvent::ShellStart {
            shell_id: shell_id.to_string(),
            command: request.command.clone(),
        });
        let on_output = |chunk: &str| {
            self.emit(SessionEvent::ShellOutput {
                shell_id: shell_id.to_string(),
                chunk: chunk.to_string(),
            });
        };
        let outcome = match run_command(request, on_output, cancel).await {
            Ok(outcome) => outcome,
            Err(error) => {
                tracing::warn!(%error, "user shell command did not start");
                self.emit(SessionEvent::ShellOutput {
                    shell_id: shell_id.to_string(),
                    chunk: format!("could not run the command: {error}\n"),
                });
                self.emit(SessionEvent::ShellEnd {
                    shell_id: shell_id.to_string(),
                    exit_code: None,
                    cancelled: false,
                });
                return;
            }
        };
        if add_to_context
            && !outcome.cancelled
            && let Err(error) = self.add_to_history(shell_message(&request.command, &outcome)).await
        {
            tracing::error!(%error, "could not add the shell command to the history");
        }
        self.emit(SessionEvent::ShellEnd {
            shell_id: shell_id.to_string(),
            exit_code: outcome.exit_code,
            cancelled: outcome.cancelled,
        });
    }

    /// Appends a message between runs: to the session file (announced), then to the
    /// harness's history.
    async fn add_to_history(&self, message: Message) -> Result<(), CodingError> {
        self.journal.append(vec![EntryKind::Message { message: message.into() }]).await?;
        self.harness.set_messages(self.journal.read(Session::request_messages)?)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn outcome(output: &str, exit_code: Option<i32>) -> CommandOutcome {
        CommandOutcome {
            output: output.into(),
            truncated: false,
            shown_lines: output.lines().count(),
            total_bytes: output.len() as u64,
            total_lines: output.lines().count() as u64,
            full_output_path: None,
            full_output_note: None,
            exit_code,
            signal: None,
            duration: Duration::ZERO,
            timed_out: false,
            cancelled: false,
        }
    }

    fn text(message: &Message) -> String {
        match message {
            Message::User(user) => user.content.iter().filter_map(ContentBlock::as_text).collect(),
            _ => String::new(),
        }
    }

    #[test]
    fn the_message_holds_command_output_and_status() {
        let message = shell_message("ls", &outcome("a\nb", Some(2)));
        assert_eq!(text(&message), "I ran this shell command:\n$ ls\na\nb\n[exit code 2]");
        let mut cut = outcome("tail\n", Some(0));
        cut.truncated = true;
        cut.full_output_path = Some(PathBuf::from("/tmp/out.txt"));
        cut.full_output_note = Some("Full output: /tmp/out.txt".into());
        let text = text(&shell_message("make", &cut));
        assert!(text.contains("[only the last 1 lines of output are shown]"), "{text}");
        assert!(text.ends_with("[exit code 0]\n[Full output: /tmp/out.txt]"), "{text}");
    }
}
