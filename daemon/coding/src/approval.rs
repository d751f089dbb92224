//! Approvals: which tool calls need a person's yes, and the requests waiting for one.
//!
//! The per-session [`ApprovalPolicy`] decides ([`approval_reason`]):
//!
//! - `ask`: every call of a tool that can change something (`write`, `edit`, `bash`, and any
//!   tool rein does not know to be read-only) asks.
//! - `auto-edit`: `write` and `edit` of a path inside the project directory pass; so does
//!   `bash` when the session's commands run in a sandbox without network (docs/sandbox.md).
//!   Other changing tools, `bash` on the host and any path outside the project ask. Paths are
//!   compared after resolving symlinks, so a link inside the project pointing out of it still
//!   asks. A sandboxed command that failed for lack of permission runs again outside the
//!   sandbox only after a person allowed it, whatever the policy.
//! - `yolo`: nothing asks.
//!
//! Read-only tools (`read`, `grep`, `find`, `ls`) never ask. A tool the user allowed "for the
//! session" does not ask again in that session.
//!
//! [`Approvals`] holds the requests waiting for an answer. The first answer wins: it removes
//! the request, so a second answer (from another client) finds nothing and is refused.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};

use rein_protocol::event::ApprovalDecision;
use rein_protocol::method::ApprovalPolicy;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::paths;

/// Tools that only look and never change anything; no policy asks for them.
pub const READ_ONLY_TOOLS: [&str; 4] = ["read", "grep", "find", "ls"];

/// Tools that change one file named by their `path` argument; `auto-edit` lets them through
/// inside the project directory.
pub const FILE_EDIT_TOOLS: [&str; 2] = ["write", "edit"];

/// Tools whose commands a sandbox confines; `auto-edit` lets them through when it does.
pub const COMMAND_TOOLS: [&str; 1] = ["bash"];

/// Why this call needs approval under `policy`, or `None` when it may run at once, for a
/// session whose commands run on the host. The reason is shown to the person asked.
pub fn approval_reason(
    policy: ApprovalPolicy,
    tool_name: &str,
    arguments: &Value,
    cwd: &Path,
) -> Option<String> {
    approval_reason_in(policy, tool_name, arguments, cwd, false)
}

/// [`approval_reason`] for a session whose commands run confined (a sandbox without network)
/// when `confined` is true.
pub fn approval_reason_in(
    policy: ApprovalPolicy,
    tool_name: &str,
    arguments: &Value,
    cwd: &Path,
    confined: bool,
) -> Option<String> {
    if READ_ONLY_TOOLS.contains(&tool_name) {
        return None;
    }
    match policy {
        ApprovalPolicy::Yolo => None,
        ApprovalPolicy::Ask => Some(format!("{tool_name} always asks under the ask policy")),
        ApprovalPolicy::AutoEdit if FILE_EDIT_TOOLS.contains(&tool_name) => {
            match arguments.get("path").and_then(Value::as_str) {
                Some(raw) if is_inside(cwd, raw) => None,
                Some(raw) => Some(format!(
                    "{tool_name} of {raw} is outside the project directory, which asks under \
                     the auto-edit policy"
                )),
                None => Some(format!("{tool_name} without a path asks under the auto-edit policy")),
            }
        }
        ApprovalPolicy::AutoEdit if confined && COMMAND_TOOLS.contains(&tool_name) => None,
        ApprovalPolicy::AutoEdit => {
            Some(format!("{tool_name} always asks under the auto-edit policy"))
        }
    }
}

/// Whether `raw` (as a tool would resolve it against `cwd`) names something inside `cwd`,
/// following symlinks of the parts that exist.
fn is_inside(cwd: &Path, raw: &str) -> bool {
    let target = paths::canonical_key(&paths::resolve(cwd, raw));
    let root = paths::canonical_key(cwd);
    target.starts_with(&root)
}

/// A person's answer to an approval request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalAnswer {
    /// Allow once, allow for the session, or deny.
    pub decision: ApprovalDecision,
    /// Why, when denied; the model sees it.
    pub reason: Option<String>,
    /// The answering client's name.
    pub resolved_by: String,
}

/// An answer arrived for a request nobody waits for (already answered, expired, or never
/// made).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no pending approval request {0}")]
pub struct ApprovalNotFound(pub String);

#[derive(Debug, Default)]
struct Pending {
    /// Request id to the tool it is for and the waiter.
    waiting: HashMap<String, (String, oneshot::Sender<ApprovalAnswer>)>,
    allowed_tools: HashSet<String>,
}

/// The approval requests of one session that wait for an answer, and the tools allowed for
/// the rest of the session.
#[derive(Debug, Default)]
pub struct Approvals {
    pending: Mutex<Pending>,
}

impl Approvals {
    /// No pending requests, no tool allowed.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the user allowed `tool_name` for the rest of the session.
    pub fn is_allowed_for_session(&self, tool_name: &str) -> bool {
        self.lock().allowed_tools.contains(tool_name)
    }

    /// Registers a new request for a call of `tool_name`; the receiver gets the first answer.
    pub fn open(&self, tool_name: &str) -> (String, oneshot::Receiver<ApprovalAnswer>) {
        let id = format!("ap-{}", uuid::Uuid::now_v7());
        let (sender, receiver) = oneshot::channel();
        self.lock().waiting.insert(id.clone(), (tool_name.to_string(), sender));
        (id, receiver)
    }

    /// Answers a request. The first answer wins; a request that was already answered or
    /// withdrawn is `ApprovalNotFound`. `AllowSession` also allows the tool from now on.
    /// `announce` runs once the answer is accepted and before the waiter gets it, so the
    /// announcement precedes anything the answer lets happen.
    pub fn answer(
        &self,
        request_id: &str,
        answer: ApprovalAnswer,
        announce: impl FnOnce(&ApprovalAnswer),
    ) -> Result<(), ApprovalNotFound> {
        let mut pending = self.lock();
        let (tool_name, sender) = pending
            .waiting
            .remove(request_id)
            .ok_or_else(|| ApprovalNotFound(request_id.to_string()))?;
        if answer.decision == ApprovalDecision::AllowSession {
            pending.allowed_tools.insert(tool_name);
        }
        drop(pending);
        announce(&answer);
        // The waiter may have gone (its run was cancelled) between the removal and now; the
        // answer then has nobody to reach, which is fine.
        let _ = sender.send(answer);
        Ok(())
    }

    /// Withdraws a request nobody answered (its run stopped). Returns true when it was still
    /// pending, so exactly one party reports how it ended.
    pub fn withdraw(&self, request_id: &str) -> bool {
        self.lock().waiting.remove(request_id).is_some()
    }

    /// Whether a request is still waiting.
    pub fn is_pending(&self, request_id: &str) -> bool {
        self.lock().waiting.contains_key(request_id)
    }

    fn lock(&self) -> MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn project() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        dir
    }

    #[test]
    fn read_only_tools_never_ask() {
        let dir = project();
        for policy in [ApprovalPolicy::Ask, ApprovalPolicy::AutoEdit, ApprovalPolicy::Yolo] {
            for tool in READ_ONLY_TOOLS {
                assert_eq!(
                    approval_reason(policy, tool, &json!({"path": "/etc"}), dir.path()),
                    None
                );
            }
        }
    }

    #[test]
    fn ask_asks_for_every_changing_call() {
        let dir = project();
        for tool in ["write", "edit", "bash", "some_extension_tool"] {
            let reason =
                approval_reason(ApprovalPolicy::Ask, tool, &json!({"path": "a"}), dir.path());
            assert!(reason.is_some_and(|r| r.contains(tool)), "{tool}");
        }
    }

    #[test]
    fn yolo_never_asks() {
        let dir = project();
        let args = json!({"path": "/etc/passwd", "command": "rm -rf /"});
        for tool in ["write", "edit", "bash"] {
            assert_eq!(approval_reason(ApprovalPolicy::Yolo, tool, &args, dir.path()), None);
        }
    }

    #[test]
    fn auto_edit_passes_edits_inside_the_project_only() {
        let dir = project();
        let cwd = dir.path();
        let policy = ApprovalPolicy::AutoEdit;
        assert_eq!(approval_reason(policy, "write", &json!({"path": "src/new.rs"}), cwd), None);
        let inside = cwd.join("src/lib.rs").display().to_string();
        assert_eq!(approval_reason(policy, "edit", &json!({"path": inside}), cwd), None);
        assert!(approval_reason(policy, "write", &json!({"path": "../escape.rs"}), cwd).is_some());
        assert!(approval_reason(policy, "edit", &json!({"path": "/etc/hosts"}), cwd).is_some());
        assert!(approval_reason(policy, "bash", &json!({"command": "ls"}), cwd).is_some());
        assert!(approval_reason(policy, "write", &json!({}), cwd).is_some());
    }

    #[test]
    fn auto_edit_lets_confined_commands_through_but_not_under_ask() {
        let dir = project();
        let cwd = dir.path();
        let bash = json!({"command": "cargo test"});
        assert_eq!(approval_reason_in(ApprovalPolicy::AutoEdit, "bash", &bash, cwd, true), None);
        assert!(approval_reason_in(ApprovalPolicy::AutoEdit, "bash", &bash, cwd, false).is_some());
        assert!(approval_reason_in(ApprovalPolicy::Ask, "bash", &bash, cwd, true).is_some());
        // Confinement is about commands: a write outside the project still asks.
        let outside = json!({"path": "/etc/hosts"});
        assert!(
            approval_reason_in(ApprovalPolicy::AutoEdit, "write", &outside, cwd, true).is_some()
        );
    }

    #[test]
    fn auto_edit_asks_for_a_symlink_leading_out_of_the_project() {
        let outside = tempfile::tempdir().unwrap();
        let dir = project();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
        let reason = approval_reason(
            ApprovalPolicy::AutoEdit,
            "write",
            &json!({"path": "out/file.txt"}),
            dir.path(),
        );
        assert!(reason.is_some());
    }

    fn answer(decision: ApprovalDecision, by: &str) -> ApprovalAnswer {
        ApprovalAnswer { decision, reason: None, resolved_by: by.into() }
    }

    #[test]
    fn first_answer_wins_and_the_second_is_not_found() {
        let approvals = Approvals::new();
        let (id, mut receiver) = approvals.open("bash");
        assert!(approvals.is_pending(&id));
        let mut announced = Vec::new();
        approvals
            .answer(&id, answer(ApprovalDecision::Deny, "one"), |a| announced.push(a.clone()))
            .unwrap();
        let second = approvals
            .answer(&id, answer(ApprovalDecision::AllowOnce, "two"), |a| announced.push(a.clone()));
        assert_eq!(second, Err(ApprovalNotFound(id.clone())));
        assert_eq!(receiver.try_recv().unwrap().resolved_by, "one");
        assert_eq!(announced.len(), 1);
        assert_eq!(announced[0].resolved_by, "one");
        assert!(!approvals.is_allowed_for_session("bash"));
    }

    #[test]
    fn allow_session_remembers_the_tool() {
        let approvals = Approvals::new();
        let (id, _receiver) = approvals.open("bash");
        approvals.answer(&id, answer(ApprovalDecision::AllowSession, "c"), |_| {}).unwrap();
        assert!(approvals.is_allowed_for_session("bash"));
        assert!(!approvals.is_allowed_for_session("write"));
    }

    #[test]
    fn a_withdrawn_request_cannot_be_answered() {
        let approvals = Approvals::new();
        let (id, _receiver) = approvals.open("write");
        assert!(approvals.withdraw(&id));
        assert!(!approvals.withdraw(&id));
        assert!(approvals.answer(&id, answer(ApprovalDecision::AllowOnce, "c"), |_| {}).is_err());
    }
}
