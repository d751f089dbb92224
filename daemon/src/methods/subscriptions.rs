//! Event streams: `daemon/subscribe` and `session/subscribe`.
//!
//! A session subscription first replays what the client missed (from `after_seq`), then
//! forwards live events. The session never waits for a subscriber: each has a bounded queue in
//! the session's event log, and one that falls behind gets a `lagged` item and its
//! subscription ends (the client resyncs from `session/state`). A client that disconnects has
//! its subscriptions dropped and nothing else changes.
//!
//! Approval requests still waiting when a client subscribes are sent to it before anything
//! else (see `hub::pending`); a subscriber whose client answers approvals counts as an
//! approver exactly as long as its subscription lasts. While a request waits, each approver's
//! subscription is sent a `keepalive` item every second: a client that went away is only
//! noticed when a write to it fails, and it must stop counting as an approver at once.

use super::{connection, session};
use crate::hub::events::Delivery;
use crate::rpc_error::parse_params;
use crate::sync::lock;
use jsonrpsee::{Extensions, PendingSubscriptionSink, SubscriptionMessage};
use jsonrpsee_types::Params;
use rein_protocol::event::SubscriptionItem;
use rein_protocol::method::{Empty, SubscribeParams, names};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;

/// How often an approver's subscription is probed while an approval request waits.
const KEEPALIVE_PERIOD: Duration = Duration::from_secs(1);

/// `daemon/subscribe`: sessions created, deleted, running and idle; shutdown.
pub(super) async fn daemon_events(
    params: Params<'static>,
    pending: PendingSubscriptionSink,
    _: Arc<()>,
    extensions: Extensions,
) {
    let connection = match connection(&extensions) {
        Ok(connection) => connection,
        Err(error) => return pending.reject(error).await,
    };
    if let Err(error) = parse_params::<Empty>(params.as_str()) {
        return pending.reject(error).await;
    }
    let mut events = connection.daemon.events.subscribe();
    let guard =
        connection.track_subscription(&pending.subscription_id(), names::DAEMON_UNSUBSCRIBE);
    let Ok(sink) = pending.accept().await else { return };
    loop {
        let event = tokio::select! {
            () = sink.closed() => break,
            () = guard.cancelled() => break,
            event = events.recv() => event,
        };
        let event = match event {
            Ok(event) => event,
            Err(RecvError::Lagged(skipped)) => {
                tracing::debug!(skipped, "daemon event subscriber lagged");
                continue;
            }
            Err(RecvError::Closed) => break,
        };
        let Ok(message) = serde_json::value::to_raw_value(&event) else { continue };
        let sent = tokio::select! {
            () = guard.cancelled() => break,
            sent = sink.send(SubscriptionMessage::from(message)) => sent,
        };
        if sent.is_err() {
            break;
        }
    }
}

/// `session/subscribe`: the session's numbered events, from `after_seq` on.
pub(super) async fn session_events(
    params: Params<'static>,
    pending: PendingSubscriptionSink,
    _: Arc<()>,
    extensions: Extensions,
) {
    let connection = match connection(&extensions) {
        Ok(connection) => connection,
        Err(error) => return pending.reject(error).await,
    };
    let params = match parse_params::<SubscribeParams>(params.as_str()) {
        Ok(params) => params,
        Err(error) => return pending.reject(error).await,
    };
    let loaded = match session(&connection, &params.session_id).await {
        Ok(loaded) => loaded,
        Err(error) => return pending.reject(error).await,
    };
    let can_approve = lock(&connection.client).capabilities.approvals;
    let (mut items, waiting) =
        loaded.pending.subscribe(&loaded.events, params.after_seq, params.stream.as_deref());
    let guard =
        connection.track_subscription(&pending.subscription_id(), names::SESSION_UNSUBSCRIBE);
    let Ok(sink) = pending.accept().await else { return };
    let _approver = can_approve.then(|| loaded.add_approver());
    // Approval requests still waiting are session state: a client attaching now is shown them
    // first, with their original seq (behind its cursor; its replay will not repeat them).
    for envelope in waiting {
        let item = SubscriptionItem::Event(envelope);
        let Ok(message) = serde_json::value::to_raw_value(&item) else { continue };
        if sink.send(SubscriptionMessage::from(message)).await.is_err() {
            return;
        }
    }
    let mut probe = tokio::time::interval(KEEPALIVE_PERIOD);
    probe.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        let delivery = tokio::select! {
            () = sink.closed() => break,
            () = guard.cancelled() => break,
            _ = probe.tick(), if can_approve => {
                // A vanished client is only noticed when a write to it fails; while a request
                // waits for approvers nothing else may be written for a long time.
                if loaded.pending.any() {
                    let item = SubscriptionItem::Keepalive { session_id: params.session_id.clone() };
                    let Ok(message) = serde_json::value::to_raw_value(&item) else { continue };
                    let sent = tokio::select! {
                        () = guard.cancelled() => break,
                        sent = sink.send(SubscriptionMessage::from(message)) => sent,
                    };
                    if sent.is_err() {
                        break;
                    }
                }
                continue;
            }
            delivery = items.next() => delivery,
        };
        let Some(delivery) = delivery else { break };
        let last = matches!(delivery, Delivery::Final(_));
        let Ok(message) = delivery.to_json() else { continue };
        // A client that stops reading holds this send; ending the subscription (unsubscribe
        // or hangup) must not wait for it.
        let sent = tokio::select! {
            () = guard.cancelled() => break,
            sent = sink.send(SubscriptionMessage::from(message)) => sent,
        };
        if sent.is_err() || last {
            break;
        }
    }
    drop(items);
    loaded.touch();
}
