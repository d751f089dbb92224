//! Asking a person whether a command the sandbox refused may run again outside it.

use std::sync::{Arc, OnceLock, Weak};

use futures::future::BoxFuture;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::CodingSession;
use crate::tools::Escalation;

/// What an "allow for the session" answer to such a request allows from then on: commands
/// running outside the sandbox, not `bash` as such.
pub(crate) const UNCONFINED_KEY: &str = "bash (outside the sandbox)";

/// The session's [`Escalation`]: an approval request like any other, under the same rules
/// (first answer wins, nobody to ask means no).
#[derive(Debug, Default, Clone)]
pub(crate) struct SessionEscalation {
    session: Arc<OnceLock<Weak<CodingSession>>>,
}

impl SessionEscalation {
    /// Names the session once it exists (the tools are built before it).
    pub(crate) fn bind(&self, session: Weak<CodingSession>) {
        let _ = self.session.set(session);
    }
}

impl Escalation for SessionEscalation {
    fn allow_unconfined<'a>(
        &'a self,
        call_id: &'a str,
        command: &'a str,
        why: String,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let Some(session) = self.session.get().and_then(Weak::upgrade) else {
                return Err("the session is closed".to_string());
            };
            if session.approvals.is_allowed_for_session(UNCONFINED_KEY) {
                return Ok(());
            }
            let arguments = json!({ "command": command, "sandbox": "off" });
            session.ask_person(call_id, "bash", UNCONFINED_KEY, &arguments, why, cancel).await
        })
    }
}
