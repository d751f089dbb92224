//! The tools of a harness, with each parameter schema compiled once, and the checks a call
//! must pass before it runs.

use crate::tool::{ExecutionMode, Tool};
use jsonschema::Validator;
use rein_protocol::message::{ToolCall, ToolDefinition};
use serde_json::Value;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

/// How many schema violations an error result lists before it stops.
const MAX_REPORTED_VIOLATIONS: usize = 5;

/// A tool set could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ToolSetError {
    /// A tool's parameter schema is not a valid JSON Schema.
    #[error("tool `{name}` has an invalid parameter schema: {reason}")]
    InvalidSchema {
        /// The tool.
        name: String,
        /// What is wrong with the schema.
        reason: String,
    },
    /// Two tools share a name, so the model could not tell them apart.
    #[error("two tools are named `{0}`")]
    DuplicateName(String),
}

struct RegisteredTool {
    tool: Arc<dyn Tool>,
    /// The compiled schema; `None` for a tool that checks its own arguments.
    validator: Option<Arc<Validator>>,
}

/// The tools a model may call, each with its compiled argument validator (tools that check
/// their own arguments have none).
pub struct ToolSet {
    tools: Vec<RegisteredTool>,
    by_name: HashMap<String, usize>,
    definitions: Arc<[ToolDefinition]>,
}

impl std::fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSet").field("tools", &self.names().collect::<Vec<_>>()).finish()
    }
}

impl Default for ToolSet {
    /// A set with no tools.
    fn default() -> Self {
        Self { tools: Vec::new(), by_name: HashMap::new(), definitions: Arc::from([]) }
    }
}

/// A call that passed every check and may run.
pub(crate) struct ValidCall {
    /// The tool to run.
    pub(crate) tool: Arc<dyn Tool>,
    /// The arguments, parsed and valid against the tool's schema.
    pub(crate) arguments: Value,
}

impl ToolSet {
    /// Compiles the schema of every tool that does not check its own arguments; fails on an
    /// invalid schema or a duplicate name.
    pub fn new(tools: Vec<Arc<dyn Tool>>) -> Result<Self, ToolSetError> {
        let mut set = Self::default();
        let mut definitions = Vec::with_capacity(tools.len());
        for tool in tools {
            let name = tool.name().to_string();
            if set.by_name.contains_key(&name) {
                return Err(ToolSetError::DuplicateName(name));
            }
            let definition = tool.definition();
            let validator = if tool.checks_own_arguments() {
                None
            } else {
                let compiled = crate::schema_cache::validator(&definition.parameters)
                    .map_err(|reason| ToolSetError::InvalidSchema { name: name.clone(), reason })?;
                Some(compiled)
            };
            set.by_name.insert(name, set.tools.len());
            definitions.push(definition);
            set.tools.push(RegisteredTool { tool, validator });
        }
        set.definitions = definitions.into();
        Ok(set)
    }

    /// The definitions sent to the provider, in registration order.
    pub fn definitions(&self) -> &[ToolDefinition] {
        &self.definitions
    }

    /// The definitions, shared: every request of every run with this tool set sends the same
    /// list without copying it.
    pub fn shared_definitions(&self) -> Arc<[ToolDefinition]> {
        self.definitions.clone()
    }

    /// The tool with this name.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.by_name.get(name).map(|&index| &self.tools[index].tool)
    }

    /// The tools, in registration order (the coding layer reads their guidance from here to
    /// build the system prompt).
    pub fn tools(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.tools.iter().map(|registered| &registered.tool)
    }

    /// The tool names, in registration order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(|registered| registered.tool.name())
    }

    /// How a call is scheduled. A call of an unknown tool runs nothing, so it counts as
    /// parallel.
    pub fn mode_of(&self, name: &str) -> ExecutionMode {
        self.get(name).map_or(ExecutionMode::Parallel, |tool| tool.mode())
    }

    /// Checks a call: the tool exists, the arguments are JSON and (for a tool that does not
    /// check its own) match the schema. The error is the text the model gets as the call's
    /// result.
    pub(crate) fn validate(&self, call: &ToolCall) -> Result<ValidCall, String> {
        let Some(&index) = self.by_name.get(&call.name) else {
            return Err(self.unknown_tool_message(&call.name));
        };
        let registered = &self.tools[index];
        let arguments = parse_arguments(&call.name, &call.arguments)?;
        if let Some(validator) = &registered.validator
            && !validator.is_valid(&arguments)
        {
            return Err(violation_report(&call.name, validator, &arguments));
        }
        Ok(ValidCall { tool: registered.tool.clone(), arguments })
    }

    fn unknown_tool_message(&self, name: &str) -> String {
        let available: Vec<&str> = self.names().collect();
        if available.is_empty() {
            format!("Unknown tool `{name}`: no tools are available.")
        } else {
            format!("Unknown tool `{name}`. Available tools: {}.", available.join(", "))
        }
    }
}

/// The text the model gets for arguments that break the schema: each violation with where it
/// is, up to a few.
fn violation_report(tool: &str, validator: &Validator, arguments: &Value) -> String {
    let mut text = format!("Invalid arguments for tool `{tool}`:");
    for violation in validator.iter_errors(arguments).take(MAX_REPORTED_VIOLATIONS) {
        let path = violation.instance_path.to_string();
        let path = if path.is_empty() { "(root)".to_string() } else { path };
        let _ = write!(text, "\n- {path}: {violation}");
    }
    text.push_str("\nFix the arguments to match the tool's schema and call it again.");
    text
}

/// The arguments as a JSON value. Providers keep arguments that were not JSON as a string; a
/// string holding valid JSON is accepted, anything else in a string is an error. A missing
/// (null) arguments value means no arguments.
fn parse_arguments(tool: &str, arguments: &Value) -> Result<Value, String> {
    match arguments {
        Value::Null => Ok(Value::Object(Default::default())),
        Value::String(text) => serde_json::from_str(text).map_err(|error| {
            format!(
                "The arguments for tool `{tool}` are not valid JSON ({error}). Send the \
                 arguments as one JSON object matching the tool's schema."
            )
        }),
        other => Ok(other.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::{ToolInvocation, ToolOutput};
    use futures::future::{BoxFuture, FutureExt, ready};
    use serde_json::json;

    /// A test tool: name, schema, mode, and whether it checks its own arguments.
    struct Schema(&'static str, Value, ExecutionMode, bool);

    impl Tool for Schema {
        fn name(&self) -> &str {
            self.0
        }
        fn description(&self) -> &str {
            "test tool"
        }
        fn parameters(&self) -> Value {
            self.1.clone()
        }
        fn mode(&self) -> ExecutionMode {
            self.2
        }
        fn checks_own_arguments(&self) -> bool {
            self.3
        }
        fn execute(&self, _: ToolInvocation) -> BoxFuture<'_, ToolOutput> {
            ready(ToolOutput::text("ok")).boxed()
        }
    }

    fn read_tool() -> Arc<dyn Tool> {
        Arc::new(Schema(
            "read",
            json!({
                "type": "object",
                "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
                "required": ["path"],
                "additionalProperties": false
            }),
            ExecutionMode::Parallel,
            false,
        ))
    }

    fn call(name: &str, arguments: Value) -> ToolCall {
        ToolCall { id: "c1".into(), name: name.into(), arguments }
    }

    #[test]
    fn valid_arguments_pass_and_string_encoded_json_is_accepted() {
        let set = ToolSet::new(vec![read_tool()]).unwrap();
        let valid = set.validate(&call("read", json!({"path": "a"}))).unwrap();
        assert_eq!(valid.arguments, json!({"path": "a"}));
        let valid = set.validate(&call("read", json!("{\"path\":\"b\"}"))).unwrap();
        assert_eq!(valid.arguments, json!({"path": "b"}));
    }

    #[test]
    fn unknown_tools_name_the_available_ones() {
        let set = ToolSet::new(vec![read_tool()]).unwrap();
        let error = set.validate(&call("write", json!({}))).err().unwrap();
        assert!(error.contains("Unknown tool `write`"), "{error}");
        assert!(error.contains("read"), "{error}");
        let empty = ToolSet::default().validate(&call("x", json!({}))).err().unwrap();
        assert!(empty.contains("no tools"), "{empty}");
    }

    #[test]
    fn text_that_is_not_json_is_an_error() {
        let set = ToolSet::new(vec![read_tool()]).unwrap();
        let error = set.validate(&call("read", json!("{path: a"))).err().unwrap();
        assert!(error.contains("not valid JSON"), "{error}");
    }

    #[test]
    fn schema_violations_are_listed_with_their_paths() {
        let set = ToolSet::new(vec![read_tool()]).unwrap();
        let error = set.validate(&call("read", json!({"limit": "ten", "extra": 1}))).err().unwrap();
        assert!(error.contains("Invalid arguments for tool `read`"), "{error}");
        assert!(error.contains("/limit"), "{error}");
        assert!(error.contains("path"), "{error}");
        assert!(error.lines().count() >= 4, "{error}");
    }

    #[test]
    fn a_tool_that_checks_its_own_arguments_is_not_checked_against_its_schema_too() {
        let typed = json!({"type": "object", "properties": {"n": {"type": "integer"}},
            "additionalProperties": false});
        let typed = Arc::new(Schema("typed", typed, ExecutionMode::Parallel, true));
        let set = ToolSet::new(vec![typed as Arc<dyn Tool>, read_tool()]).unwrap();
        // The tool gets them as they are and answers for them itself ...
        let valid = set.validate(&call("typed", json!({"n": "ten", "extra": 1}))).unwrap();
        assert_eq!(valid.arguments, json!({"n": "ten", "extra": 1}));
        // ... but they must still be JSON, and other tools are still checked.
        let error = set.validate(&call("typed", json!("{n:"))).err().unwrap();
        assert!(error.contains("not valid JSON"), "{error}");
        assert!(set.validate(&call("read", json!({"path": 1}))).is_err());
    }

    #[test]
    fn null_arguments_mean_an_empty_object() {
        let set = ToolSet::new(vec![Arc::new(Schema(
            "ls",
            json!({"type": "object"}),
            ExecutionMode::Parallel,
            false,
        )) as Arc<dyn Tool>])
        .unwrap();
        assert_eq!(set.validate(&call("ls", Value::Null)).unwrap().arguments, json!({}));
    }

    #[test]
    fn bad_schemas_and_duplicate_names_are_refused() {
        let bad = Arc::new(Schema("bad", json!({"type": 12}), ExecutionMode::Sequential, false));
        assert!(matches!(
            ToolSet::new(vec![bad]),
            Err(ToolSetError::InvalidSchema { name, .. }) if name == "bad"
        ));
        assert!(matches!(
            ToolSet::new(vec![read_tool(), read_tool()]),
            Err(ToolSetError::DuplicateName(name)) if name == "read"
        ));
    }

    #[test]
    fn modes_come_from_the_tool_and_unknown_tools_count_as_parallel() {
        let write = Arc::new(Schema("write", json!({}), ExecutionMode::Sequential, false));
        let set = ToolSet::new(vec![read_tool(), write]).unwrap();
        assert_eq!(set.mode_of("read"), ExecutionMode::Parallel);
        assert_eq!(set.mode_of("write"), ExecutionMode::Sequential);
        assert_eq!(set.mode_of("nope"), ExecutionMode::Parallel);
        assert_eq!(set.definitions().len(), 2);
    }
}
