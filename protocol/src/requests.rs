//! The method table: every method declared once, with its wire name, params, result and the
//! order it keeps among a connection's other requests.
//!
//! Each method is a type implementing [`Method`] (say [`SessionPrompt`]), so the daemon
//! registers a handler whose signature the compiler checks against the table, a client calls
//! `client.request::<SessionPrompt>(params)` and gets the result type back, and the reference
//! documents every entry of [`MethodId::ALL`]. [`names`] and its `METHODS` list are derived from
//! the same table. Adding a method is one line here plus its handler: the exhaustive `match`es
//! over [`MethodId`] in the daemon's registration and the docs catalog point at the rest.

use crate::checkpoint::{DiffParams, DiffResult, UndoParams, UndoResult};
use crate::event::{DaemonEvent, QueueState, SubscriptionItem};
use crate::mcp::{McpListParams, McpListResult};
use crate::method::*;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// How a request is ordered against the other requests of its connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Changes a session: runs after every earlier request of the connection naming the same
    /// `session_id` (requests without one run at once).
    Session,
    /// Never waits behind a session's commands: reads, and control calls that must be able to
    /// overtake (cancel, clearing queues, answering approvals).
    Unordered,
    /// Keeps its order among `initialize` and the subscribe and unsubscribe calls (what a
    /// subscription may do depends on `initialize`), and also among the commands of the session
    /// it names, if any.
    Subscriptions,
}

/// One method of the protocol: its wire name, the params it takes, the result it answers with
/// and its ordering [`Scope`].
pub trait Method {
    /// The wire name (`family/verb`).
    const NAME: &'static str;
    /// How it is ordered against the connection's other requests.
    const SCOPE: Scope;
    /// Which entry of the table it is.
    const ID: MethodId;
    /// The params object.
    type Params: Serialize + DeserializeOwned + JsonSchema + Send + Sync + 'static;
    /// The result.
    type Result: Serialize + DeserializeOwned + JsonSchema + Clone + Send + 'static;
}

/// A notification the daemon sends: its wire name and params.
pub trait Notification {
    /// The wire name.
    const NAME: &'static str;
    /// The params object.
    type Params: Serialize + DeserializeOwned + JsonSchema + Send + 'static;
}

/// A method that opens a stream of notifications, ended by another method.
pub trait Subscription: Method {
    /// The notification carrying the stream's items.
    type Notification: Notification;
    /// The method that ends the stream.
    type Unsubscribe: Method;
}

/// Declares the table: one type per method and notification, the [`MethodId`] enum, and the
/// [`names`] constants and lists.
macro_rules! method_table {
    (
        methods {
            $(
                $(#[doc = $doc:literal])*
                $method:ident ($constant:ident) = $name:literal, $scope:ident,
                    $params:ty => $result:ty;
            )*
        }
        notifications {
            $(
                $(#[doc = $ndoc:literal])*
                $notification:ident ($nconstant:ident) = $nname:literal, $nparams:ty;
            )*
        }
    ) => {
        $(
            #[doc = concat!("`", $name, "`:")]
            $(#[doc = $doc])*
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
            pub enum $method {}

            impl Method for $method {
                const NAME: &'static str = $name;
                const SCOPE: Scope = Scope::$scope;
                const ID: MethodId = MethodId::$method;
                type Params = $params;
                type Result = $result;
            }
        )*

        $(
            #[doc = concat!("`", $nname, "`:")]
            $(#[doc = $ndoc])*
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
            pub enum $notification {}

            impl Notification for $notification {
                const NAME: &'static str = $nname;
                type Params = $nparams;
            }
        )*

        /// Every method as a value, in the order the reference documents them. A `match` on
        /// it is how the daemon and the docs make sure no method is left out.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum MethodId {
            $(
                $(#[doc = $doc])*
                $method,
            )*
        }

        impl MethodId {
            /// Every method, in table order.
            pub const ALL: &'static [MethodId] = &[$(MethodId::$method),*];

            /// The wire name.
            pub const fn name(self) -> &'static str {
                match self {
                    $(MethodId::$method => $name,)*
                }
            }

            /// How it is ordered against the connection's other requests.
            pub const fn scope(self) -> Scope {
                match self {
                    $(MethodId::$method => Scope::$scope,)*
                }
            }

            /// The method with this wire name, if there is one.
            pub fn from_name(name: &str) -> Option<Self> {
                match name {
                    $($name => Some(MethodId::$method),)*
                    _ => None,
                }
            }
        }

        /// Method and notification names, one constant each.
        pub mod names {
            $(
                $(#[doc = $doc])*
                pub const $constant: &str = $name;
            )*
            $(
                $(#[doc = $ndoc])*
                pub const $nconstant: &str = $nname;
            )*

            /// Every method a client may call, in the order the reference documents them.
            pub const METHODS: &[&str] = &[$($name),*];

            /// Every notification the daemon sends (the subscriptions' event streams).
            pub const NOTIFICATIONS: &[&str] = &[$($nname),*];
        }
    };
}

method_table! {
    methods {
        /// Handshake: versions and capabilities.
        Initialize (INITIALIZE) = "initialize", Subscriptions,
            InitializeParams => InitializeResult;
        /// Daemon version, pid, uptime, socket.
        DaemonInfo (DAEMON_INFO) = "daemon/info", Session, Empty => crate::method::DaemonInfo;
        /// Graceful shutdown.
        DaemonShutdown (DAEMON_SHUTDOWN) = "daemon/shutdown", Session, Empty => Ack;
        /// Daemon-wide lifecycle events.
        DaemonSubscribe (DAEMON_SUBSCRIBE) = "daemon/subscribe", Subscriptions,
            Empty => SubscriptionId;
        /// Ends a daemon subscription.
        DaemonUnsubscribe (DAEMON_UNSUBSCRIBE) = "daemon/unsubscribe", Subscriptions,
            UnsubscribeParams => bool;
        /// New session.
        SessionCreate (SESSION_CREATE) = "session/create", Session,
            CreateSessionParams => crate::method::SessionState;
        /// Sessions on disk.
        SessionList (SESSION_LIST) = "session/list", Unordered,
            ListSessionsParams => ListSessionsResult;
        /// Load a session.
        SessionOpen (SESSION_OPEN) = "session/open", Unordered, SessionRef => crate::method::SessionState;
        /// Unload a session.
        SessionClose (SESSION_CLOSE) = "session/close", Session, SessionRef => Ack;
        /// Delete a session file.
        SessionDelete (SESSION_DELETE) = "session/delete", Session, SessionRef => Ack;
        /// Copy an entry's path into a new session.
        SessionFork (SESSION_FORK) = "session/fork", Session, ForkParams => crate::method::SessionState;
        /// A session's state.
        SessionState (SESSION_STATE) = "session/state", Unordered,
            SessionRef => crate::method::SessionState;
        /// The messages on the active path.
        SessionMessages (SESSION_MESSAGES) = "session/messages", Unordered,
            HistoryPageParams => MessagesResult;
        /// Every entry, for navigation.
        SessionTree (SESSION_TREE) = "session/tree", Unordered, HistoryPageParams => TreeResult;
        /// Label an entry.
        SessionLabel (SESSION_LABEL) = "session/label", Session, LabelParams => Ack;
        /// Rename a session.
        SessionRename (SESSION_RENAME) = "session/rename", Session, RenameParams => Ack;
        /// Start a run.
        SessionPrompt (SESSION_PROMPT) = "session/prompt", Session, PromptParams => PromptResult;
        /// Steer the current run.
        SessionSteer (SESSION_STEER) = "session/steer", Session,
            QueueMessageParams => QueueMessageResult;
        /// Queue a follow-up run.
        SessionFollowUp (SESSION_FOLLOW_UP) = "session/follow_up", Session,
            QueueMessageParams => QueueMessageResult;
        /// Cancel the run and any user shell command.
        SessionCancel (SESSION_CANCEL) = "session/cancel", Unordered, SessionRef => CancelResult;
        /// The queues.
        SessionQueue (SESSION_QUEUE) = "session/queue", Unordered, SessionRef => QueueState;
        /// Clear the queues.
        SessionClearQueue (SESSION_CLEAR_QUEUE) = "session/clear_queue", Unordered,
            ClearQueueParams => QueueState;
        /// Change the model.
        SessionSetModel (SESSION_SET_MODEL) = "session/set_model", Session, SetModelParams => Ack;
        /// Change the thinking level.
        SessionSetThinking (SESSION_SET_THINKING) = "session/set_thinking", Session,
            SetThinkingParams => Ack;
        /// Change the approval policy.
        SessionSetApprovalPolicy (SESSION_SET_APPROVAL_POLICY) = "session/set_approval_policy",
            Session, SetApprovalPolicyParams => Ack;
        /// Move the active leaf.
        SessionBranch (SESSION_BRANCH) = "session/branch", Session, BranchParams => BranchResult;
        /// Summarize older context.
        SessionCompact (SESSION_COMPACT) = "session/compact", Session,
            CompactParams => CompactResult;
        /// Export the active path.
        SessionExport (SESSION_EXPORT) = "session/export", Unordered,
            ExportParams => ExportResult;
        /// Run a user shell command.
        SessionShell (SESSION_SHELL) = "session/shell", Session, ShellParams => ShellResult;
        /// Restore the files of a session's project to before a checkpointed turn.
        SessionUndo (SESSION_UNDO) = "session/undo", Session, UndoParams => UndoResult;
        /// The file changes of a checkpointed turn or run.
        SessionDiff (SESSION_DIFF) = "session/diff", Unordered, DiffParams => DiffResult;
        /// Subscribe to a session's events.
        SessionSubscribe (SESSION_SUBSCRIBE) = "session/subscribe", Subscriptions,
            SubscribeParams => SubscriptionId;
        /// End a session subscription.
        SessionUnsubscribe (SESSION_UNSUBSCRIBE) = "session/unsubscribe", Subscriptions,
            UnsubscribeParams => bool;
        /// Answer an approval request.
        ApprovalRespond (APPROVAL_RESPOND) = "approval/respond", Unordered,
            ApprovalRespondParams => Ack;
        /// Trust or revoke a project directory.
        TrustSet (TRUST_SET) = "trust/set", Session, TrustParams => Ack;
        /// Trusted directories.
        TrustList (TRUST_LIST) = "trust/list", Session, Empty => TrustListResult;
        /// Configured providers' models.
        ModelsList (MODELS_LIST) = "models/list", Session, Empty => ModelsResult;
        /// Each provider's key source, optionally checked with a models request (`rein doctor`).
        ProvidersCheck (PROVIDERS_CHECK) = "providers/check", Session,
            ProvidersCheckParams => ProvidersCheckResult;
        /// MCP servers and their state.
        McpList (MCP_LIST) = "mcp/list", Session, McpListParams => McpListResult;
    }
    notifications {
        /// Notification method of session subscriptions.
        SessionEvent (SESSION_EVENT) = "session/event",
            SubscriptionNotification<SubscriptionItem>;
        /// Notification method of daemon subscriptions.
        DaemonEventNotice (DAEMON_EVENT) = "daemon/event", SubscriptionNotification<DaemonEvent>;
    }
}

impl Subscription for SessionSubscribe {
    type Notification = SessionEvent;
    type Unsubscribe = SessionUnsubscribe;
}

impl Subscription for DaemonSubscribe {
    type Notification = DaemonEventNotice;
    type Unsubscribe = DaemonUnsubscribe;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_ids_and_types_agree() {
        assert_eq!(MethodId::ALL.len(), names::METHODS.len());
        for (id, name) in MethodId::ALL.iter().zip(names::METHODS) {
            assert_eq!(id.name(), *name);
            assert_eq!(MethodId::from_name(name), Some(*id));
        }
        assert_eq!(SessionPrompt::NAME, names::SESSION_PROMPT);
        assert_eq!(SessionPrompt::ID.name(), "session/prompt");
        assert_eq!(MethodId::from_name("session/teleport"), None);
        assert_eq!(<SessionSubscribe as Subscription>::Notification::NAME, names::SESSION_EVENT);
    }

    #[test]
    fn reads_and_control_calls_are_unordered() {
        let unordered: Vec<_> = MethodId::ALL
            .iter()
            .filter(|id| id.scope() == Scope::Unordered)
            .map(|id| id.name())
            .collect();
        assert!(unordered.contains(&names::SESSION_CANCEL));
        assert!(unordered.contains(&names::APPROVAL_RESPOND));
        assert!(!unordered.contains(&names::SESSION_PROMPT));
        assert_eq!(SessionSubscribe::SCOPE, Scope::Subscriptions);
    }
}
