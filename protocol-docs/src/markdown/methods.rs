//! The methods section: a summary table, then each method with its params, result, errors,
//! notes and example exchange.

use super::wire::{notification_line, request_line, response_line, serialize_error};
use super::{Markdown, method_anchor, method_link, payload, table};
use crate::DocsError;
use crate::catalog::{MethodDoc, NotificationDoc};
use crate::reference::Reference;

pub(super) fn methods(doc: &mut Markdown, reference: &Reference) -> Result<(), DocsError> {
    doc.heading(2, "Methods", Some("methods"));
    let rows: Vec<Vec<String>> = reference
        .methods
        .iter()
        .map(|method| vec![method_link(method.name), method.summary.to_string()])
        .collect();
    doc.block(&table(&["Method", "Summary"], &rows));
    for (index, method) in reference.methods.iter().enumerate() {
        let notification = reference.notifications.iter().find(|n| n.subscribe == method.name);
        self::method(doc, reference, method, notification, index as u32 + 1)?;
    }
    Ok(())
}

fn method(
    doc: &mut Markdown,
    reference: &Reference,
    method: &MethodDoc,
    notification: Option<&NotificationDoc>,
    id: u32,
) -> Result<(), DocsError> {
    let (params, result) = reference.method_schemas(method.name);
    doc.heading(3, &format!("`{}`", method.name), Some(&method_anchor(method.name)));
    doc.block(method.summary);
    payload(doc, "Params", params);
    payload(doc, "Result", result);
    let kinds: Vec<String> =
        method.errors.iter().map(|kind| format!("[`{kind}`](#errors)")).collect();
    doc.block(&format!("**Errors:** {}.", kinds.join(", ")));
    for note in &method.notes {
        doc.block(note);
    }
    let what = format!("{} example", method.name);
    let params_line = method.params.example_line().map_err(serialize_error(what.clone()))?;
    let result_line = method.result.example_line().map_err(serialize_error(what))?;
    let mut lines =
        vec![request_line(id, method.name, &params_line), response_line(id, &result_line)];
    if let Some(notification) = notification {
        let params =
            notification.params.example_line().map_err(serialize_error(notification.name))?;
        lines.push(notification_line(notification.name, &params));
    }
    doc.block(if notification.is_some() {
        "**Example** (request, response, then a notification):"
    } else {
        "**Example** (request, response):"
    });
    doc.code("json", &lines);
    Ok(())
}
