//! Compiled parameter schemas, shared by every tool set of the process.
//!
//! Each session builds its own [`crate::ToolSet`] (its tools hold its directory), but the
//! built-in tools' schemas are the same for every session. Compiling a JSON Schema costs tens
//! of milliseconds and megabytes, so the first `session/create` used to pay it for every tool,
//! and every later one again. Validators are kept here by the schema's JSON text, compiled the
//! first time a schema is seen and shared from then on.

use jsonschema::Validator;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// Most distinct schemas kept; past it the cache starts over (tools whose schemas change,
/// such as an MCP server's, cannot make it grow without bound).
const MAX_SCHEMAS: usize = 1024;

fn cache() -> &'static Mutex<HashMap<String, Arc<Validator>>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<Validator>>>> = OnceLock::new();
    CACHE.get_or_init(Mutex::default)
}

/// The compiled validator of `schema`, compiled now only if no tool set of this process
/// compiled the same schema before.
pub(crate) fn validator(schema: &Value) -> Result<Arc<Validator>, String> {
    let key = schema.to_string();
    if let Some(found) = cache().lock().unwrap_or_else(PoisonError::into_inner).get(&key) {
        return Ok(found.clone());
    }
    // Compiled outside the lock: another tool set may compile the same schema meanwhile, and
    // either result serves.
    let compiled = Arc::new(jsonschema::validator_for(schema).map_err(|e| e.to_string())?);
    let mut cache = cache().lock().unwrap_or_else(PoisonError::into_inner);
    if cache.len() >= MAX_SCHEMAS {
        cache.clear();
    }
    Ok(cache.entry(key).or_insert(compiled).clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_schema_is_compiled_once_and_shared() {
        let schema =
            json!({"type": "object", "properties": {"cache_test_only": {"type": "string"}}});
        let first = validator(&schema).unwrap();
        let second = validator(&schema).unwrap();
        assert!(Arc::ptr_eq(&first, &second));
        assert!(first.is_valid(&json!({"cache_test_only": "x"})));
        assert!(!first.is_valid(&json!({"cache_test_only": 1})));
        assert!(validator(&json!({"type": 12})).is_err());
    }
}
