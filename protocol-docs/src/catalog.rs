//! The method catalog: every method and notification with its params and result types, the
//! errors it may return, notes, and typed example values.
//!
//! Examples are built from the real param and result structs, so they type-check; the schema of
//! each payload comes from the same Rust type as its example, so the two cannot disagree.

use super::examples;
use rein_protocol::error::ErrorKind;
use rein_protocol::method::{self, names};
use rein_protocol::requests::{self as rq, Method, MethodId};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::fmt::Debug;

/// A typed example value whose JSON form can be produced and checked.
trait TypedExample {
    fn to_json(&self) -> Result<Value, serde_json::Error>;
    fn to_line(&self) -> Result<String, serde_json::Error>;
    fn check_round_trip(&self) -> Result<(), RoundTripError>;
}

/// An example value of type `T`.
struct Example<T>(T);

impl<T> TypedExample for Example<T>
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
{
    fn to_json(&self) -> Result<Value, serde_json::Error> {
        serde_json::to_value(&self.0)
    }

    fn to_line(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string(&self.0)
    }

    fn check_round_trip(&self) -> Result<(), RoundTripError> {
        let line = serde_json::to_string(&self.0).map_err(RoundTripError::Serialize)?;
        if line.contains('\n') {
            return Err(RoundTripError::Newline { line });
        }
        let back: T = serde_json::from_str(&line)
            .map_err(|source| RoundTripError::Parse { line: line.clone(), source })?;
        if back != self.0 {
            return Err(RoundTripError::Changed {
                original: format!("{:?}", self.0),
                parsed: format!("{back:?}"),
            });
        }
        Ok(())
    }
}

/// Why an example did not survive serialize-then-parse unchanged.
#[derive(Debug, thiserror::Error)]
pub enum RoundTripError {
    /// The value could not be serialized.
    #[error("cannot serialize: {0}")]
    Serialize(serde_json::Error),
    /// Compact JSON of the value contained a newline, which would break line framing.
    #[error("compact JSON contains a newline: {line}")]
    Newline {
        /// The serialized value.
        line: String,
    },
    /// The serialized value could not be parsed back into its type.
    #[error("cannot parse {line}: {source}")]
    Parse {
        /// The serialized value.
        line: String,
        /// The parser's error.
        source: serde_json::Error,
    },
    /// Parsing gave a different value.
    #[error("parsed value differs: {original} became {parsed}")]
    Changed {
        /// The value before serializing.
        original: String,
        /// The value parsed back.
        parsed: String,
    },
}

/// One side of a method (its params or its result) or a notification's params: a Rust type,
/// its JSON Schema, and an example value of it.
pub struct Payload {
    type_name: String,
    schema: fn(&mut SchemaGenerator) -> Schema,
    example: Box<dyn TypedExample>,
}

impl Payload {
    /// A payload of type `T`, illustrated by `example`.
    pub fn of<T>(example: T) -> Self
    where
        T: Serialize + DeserializeOwned + PartialEq + Debug + JsonSchema + 'static,
    {
        Self {
            type_name: T::schema_name().into_owned(),
            schema: |generator| generator.subschema_for::<T>(),
            example: Box::new(Example(example)),
        }
    }

    /// The type's schema name (the key of its `$defs` entry when it has one).
    pub fn type_name(&self) -> &str {
        &self.type_name
    }

    /// The type's schema: a `$ref` into the generator's definitions for named types, an inline
    /// schema for primitives.
    pub fn schema(&self, generator: &mut SchemaGenerator) -> Schema {
        (self.schema)(generator)
    }

    /// The example as JSON.
    pub fn example_json(&self) -> Result<Value, serde_json::Error> {
        self.example.to_json()
    }

    /// The example as compact JSON, members in the type's declaration order.
    pub fn example_line(&self) -> Result<String, serde_json::Error> {
        self.example.to_line()
    }

    /// Serializes the example to a compact line, parses it back into its type and checks that
    /// nothing changed.
    pub fn check_round_trip(&self) -> Result<(), RoundTripError> {
        self.example.check_round_trip()
    }
}

impl Debug for Payload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Payload").field("type_name", &self.type_name).finish_non_exhaustive()
    }
}

/// One method as the reference documents it.
#[derive(Debug)]
pub struct MethodDoc {
    /// The method name (`family/verb`).
    pub name: &'static str,
    /// One sentence saying what it does.
    pub summary: &'static str,
    /// Its params object.
    pub params: Payload,
    /// Its result.
    pub result: Payload,
    /// Every error kind it may return, common ones included.
    pub errors: Vec<ErrorKind>,
    /// Behaviour a client must know beyond the types, one paragraph each.
    pub notes: Vec<&'static str>,
}

/// One notification (a subscription's stream) as the reference documents it.
#[derive(Debug)]
pub struct NotificationDoc {
    /// The notification's method name.
    pub name: &'static str,
    /// What it delivers.
    pub summary: &'static str,
    /// The method that starts the stream.
    pub subscribe: &'static str,
    /// The method that ends it.
    pub unsubscribe: &'static str,
    /// Its params object, `{"subscription": id, "result": item}`.
    pub params: Payload,
}

/// Errors every method may return.
const COMMON_ERRORS: [ErrorKind; 4] = [
    ErrorKind::InvalidRequest,
    ErrorKind::InvalidParams,
    ErrorKind::Internal,
    ErrorKind::ShuttingDown,
];

/// The common errors followed by `extra`.
fn errors(extra: &[ErrorKind]) -> Vec<ErrorKind> {
    COMMON_ERRORS.iter().chain(extra).copied().collect()
}

/// The common errors, `session_not_found`, then `extra`.
fn session_errors(extra: &[ErrorKind]) -> Vec<ErrorKind> {
    let mut kinds = errors(&[ErrorKind::SessionNotFound]);
    kinds.extend_from_slice(extra);
    kinds
}

/// A method entry; the example values must have the table's params and result types.
fn method<M>(
    summary: &'static str,
    params: M::Params,
    result: M::Result,
    errors: Vec<ErrorKind>,
    notes: Vec<&'static str>,
) -> MethodDoc
where
    M: Method,
    M::Params: PartialEq + Debug,
    M::Result: PartialEq + Debug,
{
    MethodDoc {
        name: M::NAME,
        summary,
        params: Payload::of(params),
        result: Payload::of(result),
        errors,
        notes,
    }
}

/// Every method, in the order of the method table ([`MethodId::ALL`]).
pub fn methods() -> Vec<MethodDoc> {
    MethodId::ALL.iter().map(|id| method_doc(*id)).collect()
}

/// The reference entry of one method: a new method in the table fails to compile here until
/// it is documented.
fn method_doc(id: MethodId) -> MethodDoc {
    use ErrorKind as E;
    use examples as ex;
    match id {
        MethodId::Initialize => method::<rq::Initialize>(
            "Handshake: the client names itself, its protocol version and capabilities; the \
             daemon answers with its own.",
            ex::initialize_params(),
            ex::initialize_result(),
            errors(&[E::IncompatibleProtocol]),
            vec![
                "Send it first on a connection. It is optional for simple scripts: a connection \
                 that skips it gets the default capabilities (no approvals).",
                "The daemon refuses a client whose protocol major version differs from its own \
                 with `incompatible_protocol`.",
                "`pid` and `tty` are optional: an event that this client's request causes (an \
                 answered approval, a model, thinking-level or policy change, a label, the \
                 `agent_end` of a run it cancelled) carries `client` in its envelope with the name, pid and tty, so several terminals can \
                 tell who did what.",
            ],
        ),
        MethodId::DaemonInfo => method::<rq::DaemonInfo>(
            "The daemon's version, process, socket and load, its configuration file (and why a \
             reload failed), its default model and the names of the provider key variables it \
             sees.",
            method::Empty {},
            ex::daemon_info(),
            errors(&[]),
            vec![],
        ),
        MethodId::DaemonShutdown => method::<rq::DaemonShutdown>(
            "Asks the daemon to shut down gracefully.",
            method::Empty {},
            method::Ack::ok(),
            errors(&[]),
            vec![
                "The daemon answers first, sends `shutting_down` to daemon subscribers, cancels \
                 running work and then exits. Calls arriving meanwhile fail with \
                 `shutting_down`.",
            ],
        ),
        MethodId::DaemonSubscribe => method::<rq::DaemonSubscribe>(
            "Subscribes to daemon-wide lifecycle events.",
            method::Empty {},
            ex::DAEMON_SUBSCRIPTION.to_string(),
            errors(&[]),
            vec![
                "The result is a subscription id. Events then arrive as `daemon/event` \
                 notifications carrying that id, until `daemon/unsubscribe` or the connection \
                 closes.",
            ],
        ),
        MethodId::DaemonUnsubscribe => method::<rq::DaemonUnsubscribe>(
            "Ends a daemon subscription.",
            method::UnsubscribeParams { subscription: ex::DAEMON_SUBSCRIPTION.into() },
            true,
            errors(&[]),
            vec!["The result is false when no subscription of this connection had that id."],
        ),
        MethodId::SessionCreate => method::<rq::SessionCreate>(
            "Creates a session for a project directory and loads it.",
            ex::create_session_params(),
            ex::created_state(),
            errors(&[E::ModelNotFound, E::Io, E::SandboxUnavailable]),
            vec![
                "`sandbox` (`read-only`, `workspace-write` or `off`; the configured `sandbox` \
                 when absent) chooses where the session's tools run (docs/sandbox.md). A sandbox \
                 that cannot be had fails the call with `sandbox_unavailable`; rein never falls \
                 back to running without one.",
                "Unset options take the configured defaults. When the project is not trusted, \
                 its instruction files are left out of the prompt and listed in \
                 `excluded_files`.",
                "`cwd` must be an absolute path to an existing directory; the session records \
                 its canonical form (symlinks, `.` and `..` resolved), which `cwd` in the \
                 result shows. `model` must read `PROVIDER/MODEL` with no empty, `.` or `..` \
                 part (`invalid_params` otherwise).",
            ],
        ),
        MethodId::SessionList => method::<rq::SessionList>(
            "Lists the sessions on disk, most recently updated first.",
            ex::list_sessions_params(),
            ex::list_sessions_result(),
            errors(&[E::Io]),
            vec![],
        ),
        MethodId::SessionOpen => method::<rq::SessionOpen>(
            "Loads a session from disk (or finds it loaded) and returns its state.",
            ex::session_ref(),
            ex::session_state(),
            session_errors(&[E::SessionLocked, E::Io]),
            vec![
                "Loading repairs an interrupted tool history and records the repair as an \
                 entry. `session_locked` means another process holds the session file.",
            ],
        ),
        MethodId::SessionClose => method::<rq::SessionClose>(
            "Unloads a session from the daemon; its file stays on disk.",
            ex::session_ref(),
            method::Ack::ok(),
            session_errors(&[E::SessionBusy]),
            vec![],
        ),
        MethodId::SessionDelete => method::<rq::SessionDelete>(
            "Deletes a session's file.",
            ex::session_ref(),
            method::Ack::ok(),
            session_errors(&[E::SessionBusy, E::Io]),
            vec![],
        ),
        MethodId::SessionFork => method::<rq::SessionFork>(
            "Starts a new session whose history is the root-to-entry path of an existing one.",
            ex::fork_params(),
            ex::forked_state(),
            session_errors(&[E::EntryNotFound, E::Io]),
            vec!["The result is the new session's state; the original is left unchanged."],
        ),
        MethodId::SessionState => method::<rq::SessionState>(
            "A session's state: model, thinking level, run, queues, usage, context and leaf.",
            ex::session_ref(),
            ex::session_state(),
            session_errors(&[]),
            vec![
                "Together with `session/messages` this is how a client (re)builds its view; \
                 then it subscribes with `after_seq` set to `last_seq`.",
            ],
        ),
        MethodId::SessionMessages => method::<rq::SessionMessages>(
            "The messages on the active path, as the model will see them next, a page at a time.",
            ex::history_page_params(),
            ex::messages_result(),
            session_errors(&[]),
            vec![
                "Pages go backwards: without `cursor` the page ends with the newest message; \
                 `next_cursor` fetches the messages before it. A page never outgrows the line \
                 limit, so a client that wants everything follows `next_cursor` until it is \
                 absent; one that shows the last few asks for `limit` of them.",
            ],
        ),
        MethodId::SessionTree => method::<rq::SessionTree>(
            "The entries of the session file in file order, for navigating branches, a page at a time.",
            ex::history_page_params(),
            ex::tree_result(),
            session_errors(&[]),
            vec![
                "Pages go forwards: without `cursor` the page starts with the first entry; \
                 `next_cursor` fetches the entries after it, until it is absent.",
            ],
        ),
        MethodId::SessionLabel => method::<rq::SessionLabel>(
            "Sets or removes a label on an entry.",
            ex::label_params(),
            method::Ack::ok(),
            session_errors(&[E::EntryNotFound, E::Io]),
            vec!["The label is stored as a `label` entry, announced by `entry_appended`."],
        ),
        MethodId::SessionRename => method::<rq::SessionRename>(
            "Sets a session's display name.",
            ex::rename_params(),
            method::Ack::ok(),
            session_errors(&[E::Io]),
            vec![],
        ),
        MethodId::SessionPrompt => method::<rq::SessionPrompt>(
            "Sends a user prompt, starting a run.",
            ex::prompt_params(),
            ex::prompt_result(),
            session_errors(&[
                E::SessionBusy,
                E::ModelNotFound,
                E::ProviderError,
                E::CompactionInProgress,
            ]),
            vec![
                "Returns at once with the run id; progress arrives as events on `session/event` \
                 (`agent_start` ... `agent_end`, then `settled`).",
                "When the session is already running the call fails with `session_busy`, \
                 unless `when_busy` asks to steer or queue the prompt instead; `disposition` \
                 says which happened.",
            ],
        ),
        MethodId::SessionSteer => method::<rq::SessionSteer>(
            "Queues a message for the current run, delivered after the current tool batch.",
            ex::steer_params(),
            ex::steer_result(),
            session_errors(&[E::ModelNotFound, E::ProviderError]),
            vec![
                "When the session is idle the message starts a run instead (`started_run`). The \
                 queue change is announced by `queue_changed`.",
            ],
        ),
        MethodId::SessionFollowUp => method::<rq::SessionFollowUp>(
            "Queues a message that starts a new run when the current one ends.",
            ex::follow_up_params(),
            ex::follow_up_result(),
            session_errors(&[E::ModelNotFound, E::ProviderError]),
            vec!["When the session is idle the message starts a run at once (`started_run`)."],
        ),
        MethodId::SessionCancel => method::<rq::SessionCancel>(
            "Cancels the running run and any user shell command.",
            ex::session_ref(),
            method::CancelResult { cancelled: true },
            session_errors(&[]),
            vec![
                "Cancellation kills running tool processes. The run ends with an `agent_end` \
                 event whose reason is `cancelled`.",
            ],
        ),
        MethodId::SessionQueue => method::<rq::SessionQueue>(
            "The steering and follow-up queues.",
            ex::session_ref(),
            ex::queue_state(),
            session_errors(&[]),
            vec![],
        ),
        MethodId::SessionClearQueue => method::<rq::SessionClearQueue>(
            "Empties one or both queues and returns them as they are now.",
            ex::clear_queue_params(),
            rein_protocol::event::QueueState::default(),
            session_errors(&[]),
            vec!["The change is announced by `queue_changed`."],
        ),
        MethodId::SessionSetModel => method::<rq::SessionSetModel>(
            "Changes the session's model for the following requests.",
            ex::set_model_params(),
            method::Ack::ok(),
            session_errors(&[E::ModelNotFound, E::Io]),
            vec!["Announced by `model_changed`, and recorded as a `model_change` entry."],
        ),
        MethodId::SessionSetThinking => method::<rq::SessionSetThinking>(
            "Changes the session's thinking level for the following requests.",
            ex::set_thinking_params(),
            method::Ack::ok(),
            session_errors(&[E::Io]),
            vec!["Announced by `thinking_level_changed`."],
        ),
        MethodId::SessionSetApprovalPolicy => method::<rq::SessionSetApprovalPolicy>(
            "Changes how the session's tool calls are approved; the session file records it, so \
             the session keeps it when loaded again.",
            ex::set_approval_policy_params(),
            method::Ack::ok(),
            session_errors(&[E::Io]),
            vec![],
        ),
        MethodId::SessionBranch => method::<rq::SessionBranch>(
            "Moves the active leaf to another entry, optionally summarizing the abandoned path.",
            ex::branch_params(),
            ex::branch_result(),
            session_errors(&[
                E::EntryNotFound,
                E::SessionBusy,
                E::ModelNotFound,
                E::ProviderError,
                E::Io,
            ]),
            vec![
                "With `summarize`, the call waits for the model's summary and writes it as a \
                 `branch_summary` entry, which becomes the new leaf. Announced by \
                 `leaf_changed`.",
            ],
        ),
        MethodId::SessionCompact => method::<rq::SessionCompact>(
            "Summarizes older context into a compaction entry.",
            ex::compact_params(),
            ex::compact_result(),
            session_errors(&[
                E::SessionBusy,
                E::CompactionInProgress,
                E::ModelNotFound,
                E::ProviderError,
                E::Io,
            ]),
            vec![
                "Waits until the summary is written. Subscribers also see `compaction_start` \
                 and `compaction_end` with reason `manual`. The full history stays on disk.",
            ],
        ),
        MethodId::SessionExport => method::<rq::SessionExport>(
            "Exports the active path as a markdown transcript or a JSONL trajectory.",
            ex::export_params(),
            ex::export_result(),
            session_errors(&[E::Io]),
            vec![],
        ),
        MethodId::SessionShell => method::<rq::SessionShell>(
            "Runs a user shell command in the session's directory.",
            ex::shell_params(),
            method::ShellResult { shell_id: ex::SHELL_ID.into() },
            session_errors(&[E::SessionBusy]),
            vec![
                "Returns at once; output arrives as `shell_start`, `shell_output` and \
                 `shell_end` events carrying the returned `shell_id`. `session/cancel` stops \
                 it.",
            ],
        ),
        MethodId::SessionUndo => method::<rq::SessionUndo>(
            "Restores the project's files to before a checkpointed turn's tools ran.",
            ex::undo_params(),
            ex::undo_result(),
            session_errors(&[E::SessionBusy, E::UndoConflict, E::Io]),
            vec![
                "Before each turn's tools run, and again after, the daemon snapshots the \
                 project tree into a private git store under `REIN_HOME` (never the user's \
                 repository). Undo writes back every file that differs from the snapshot taken \
                 before `turn` (or the first checkpointed turn at or after `entry_id`; default: \
                 the latest turn not undone yet), including files that shell commands created \
                 or deleted. It needs the session idle.",
                "A file that changed outside rein since the snapshot is not overwritten: the \
                 call fails with `undo_conflict` naming the files, unless `force` is true. \
                 Every subscriber sees `undo_applied` and the `entry_appended` of the undo's \
                 record.",
            ],
        ),
        MethodId::SessionDiff => method::<rq::SessionDiff>(
            "Shows the file changes of a checkpointed turn or a run.",
            ex::diff_params(),
            ex::diff_result(),
            session_errors(&[E::Io]),
            vec![
                "With `turn`: what that turn's tools changed; with `run_id`: from before the \
                 run's first checkpointed turn to after its last; with neither: the latest run \
                 that has checkpoints.",
            ],
        ),
        MethodId::SessionSubscribe => method::<rq::SessionSubscribe>(
            "Subscribes to a session's events, optionally replaying those after a seq.",
            ex::subscribe_params(),
            ex::SESSION_SUBSCRIPTION.to_string(),
            session_errors(&[]),
            vec![
                "The result is a subscription id. Events then arrive as `session/event` \
                 notifications carrying that id, until `session/unsubscribe`, the connection \
                 closes, or the subscription ends with `lagged` or `resync_required`.",
                "With `after_seq`, buffered events after it are delivered first; when the \
                 buffer no longer reaches back that far the first item is `resync_required`.",
                "Approval requests still waiting are part of the session's state: a new \
                 subscription is sent each waiting `approval_requested` first, with its \
                 original seq (it may lie at or before `after_seq`), unless its replay \
                 delivers it anyway.",
                "A subscription of a client that declared the `approvals` capability counts as \
                 an approver exactly while it lasts (an unsubscribe or a closed connection ends \
                 it at once; while a request waits, such subscriptions get a `keepalive` item \
                 each second so a vanished client is noticed). A call needing approval with no \
                 approver attached is denied at once; when the last approver leaves while a \
                 request waits, the request is denied after `approvals.grace_secs` (default \
                 30) unless one comes back. Either way the model is told why in the tool \
                 result.",
            ],
        ),
        MethodId::SessionUnsubscribe => method::<rq::SessionUnsubscribe>(
            "Ends a session subscription.",
            method::UnsubscribeParams { subscription: ex::SESSION_SUBSCRIPTION.into() },
            true,
            errors(&[]),
            vec!["The result is false when no subscription of this connection had that id."],
        ),
        MethodId::ApprovalRespond => method::<rq::ApprovalRespond>(
            "Answers a tool call's approval request.",
            ex::approval_respond_params(),
            method::Ack::ok(),
            session_errors(&[E::ApprovalNotFound]),
            vec![
                "The first answer wins; every subscriber sees `approval_resolved`. A later \
                 answer fails with `approval_not_found`.",
            ],
        ),
        MethodId::TrustSet => method::<rq::TrustSet>(
            "Trusts or revokes trust in a project directory.",
            ex::trust_params(),
            method::Ack::ok(),
            errors(&[E::Io]),
            vec![
                "Only a trusted project's instruction files and configuration are read into \
                 the prompt. The change applies to sessions created or opened afterwards.",
                "`path` must be absolute and is recorded canonical. Trusting `/` or the \
                 daemon's home directory would trust every project below it and is refused \
                 with `invalid_params` unless `force` is true; revoking needs no force.",
            ],
        ),
        MethodId::TrustList => method::<rq::TrustList>(
            "The trusted project directories.",
            method::Empty {},
            ex::trust_list_result(),
            errors(&[E::Io]),
            vec![],
        ),
        MethodId::ModelsList => method::<rq::ModelsList>(
            "The known models of the built-in and configured providers, every model a provider \
             on this machine (a detected local server, Ollama, a configured loopback URL) lists \
             at the time of the call, and the default model.",
            method::Empty {},
            ex::models_result(),
            errors(&[]),
            vec![],
        ),
        MethodId::ProvidersCheck => method::<rq::ProvidersCheck>(
            "Every provider with where its API key comes from (never the key); with `probe`, \
             each provider in use is asked for its model list to see that it answers and \
             accepts its key.",
            ex::providers_check_params(),
            ex::providers_check_result(),
            errors(&[]),
            vec![
                "A key in the daemon's environment wins over one stored by `rein login` in \
                 `REIN_HOME/auth.toml`.",
            ],
        ),
        MethodId::McpList => method::<rq::McpList>(
            "The MCP servers and their state: the daemon's, and a loaded session's own.",
            ex::mcp_list_params(),
            ex::mcp_list_result(),
            errors(&[E::SessionNotFound]),
            vec![
                "Each change of a server's state is also a `mcp_server_status` daemon event. \
                 A server that died is restarted with a growing delay (1 s doubling to 60 s); \
                 its state is `failed` with the error until then. See \
                 [extensions.md](extensions.md).",
            ],
        ),
    }
}

/// Every notification, in the order of [`names::NOTIFICATIONS`].
pub fn notifications() -> Vec<NotificationDoc> {
    vec![
        NotificationDoc {
            name: names::SESSION_EVENT,
            summary: "One item of a session subscription: an event in its envelope, or a \
                      notice that the subscription ended and the client must resync.",
            subscribe: names::SESSION_SUBSCRIBE,
            unsubscribe: names::SESSION_UNSUBSCRIBE,
            params: Payload::of(examples::session_notification()),
        },
        NotificationDoc {
            name: names::DAEMON_EVENT,
            summary: "One daemon-wide lifecycle event.",
            subscribe: names::DAEMON_SUBSCRIBE,
            unsubscribe: names::DAEMON_UNSUBSCRIBE,
            params: Payload::of(examples::daemon_notification()),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_follows_the_name_lists() {
        let documented: Vec<&str> = methods().iter().map(|m| m.name).collect();
        assert_eq!(documented, names::METHODS);
        let documented: Vec<&str> = notifications().iter().map(|n| n.name).collect();
        assert_eq!(documented, names::NOTIFICATIONS);
    }

    #[test]
    fn every_method_lists_the_common_errors_once() {
        for doc in methods() {
            for kind in COMMON_ERRORS {
                assert!(doc.errors.contains(&kind), "{} lacks {kind}", doc.name);
            }
            let mut unique = doc.errors.clone();
            unique.sort_by_key(|kind| kind.code());
            unique.dedup();
            assert_eq!(unique.len(), doc.errors.len(), "{} repeats an error", doc.name);
        }
    }

    #[test]
    fn session_methods_can_report_a_missing_session() {
        for doc in methods() {
            let takes_session = doc
                .params
                .example_json()
                .map(|params| params.get("session_id").is_some())
                .unwrap_or(false);
            if takes_session {
                assert!(doc.errors.contains(&ErrorKind::SessionNotFound), "{}", doc.name);
            }
        }
    }

    #[test]
    fn a_changed_value_is_reported() {
        /// Serializes as a constant, so parsing back loses the value.
        #[derive(Debug, PartialEq, serde::Deserialize)]
        struct Lossy(u8);
        impl Serialize for Lossy {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_u8(0)
            }
        }
        assert!(Example(Lossy(0)).check_round_trip().is_ok());
        assert!(matches!(
            Example(Lossy(3)).check_round_trip(),
            Err(RoundTripError::Changed { .. })
        ));
    }
}
