//! `rein rpc METHOD [PARAMS]`: one raw call, the result printed as JSON.

use crate::client::{Client, ClientError};
use crate::commands::exit;
use serde_json::Value;
use std::path::Path;

/// Sends one call. Params must be a JSON object (or absent). The result goes to stdout as
/// pretty JSON; an error goes to stderr with exit code 1.
pub async fn run(socket: &Path, method: &str, params: Option<&str>) -> Result<u8, ClientError> {
    let params = match params {
        None => Value::Object(Default::default()),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(value @ Value::Object(_)) => value,
            Ok(_) => {
                eprintln!("rein: params must be a JSON object, e.g. '{{\"session_id\":\"...\"}}'");
                return Ok(exit::USAGE);
            }
            Err(error) => {
                eprintln!("rein: params are not valid JSON: {error}");
                return Ok(exit::USAGE);
            }
        },
    };
    let mut client = Client::connect_or_start(socket).await?;
    match client.call(method, params).await {
        Ok(result) => {
            let text = serde_json::to_string_pretty(&result).unwrap_or_else(|_| result.to_string());
            println!("{text}");
            Ok(exit::OK)
        }
        Err(ClientError::Rpc(failure)) => {
            eprintln!("rein: error {failure}");
            if !failure.data.is_null() {
                eprintln!("{}", failure.data);
            }
            Ok(exit::FAILURE)
        }
        Err(other) => Err(other),
    }
}
