//! The typed tool trait: a tool declares its argument struct once, and the JSON Schema the
//! provider sees, the parsing and the error for bad arguments all come from it.
//!
//! A tool implements [`TypedTool`] (a [`ToolSpec`] with name, description, guidance and mode,
//! `type Args`, one async `run`), or [`BlockingTool`] when all its work blocks; [`Typed`]
//! turns it into the agent's [`Tool`]. The argument struct derives `Deserialize` and
//! `JsonSchema`; its field doc comments become the schema's descriptions, so the schema cannot
//! drift from what the tool parses. Schemas are generated once per process (the first time a
//! tool of that type is built) and shared after that: no session or call pays for schema
//! generation, and no JSON-Schema validator runs, because the typed parse already checks what
//! the schema says (bounds included, see [`super::Limit`]); a mismatch is an error result
//! naming the field.

use std::any::TypeId;
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use futures::future::BoxFuture;
use rein_agent::{ExecutionMode, Tool, ToolInvocation, ToolOutput, ToolUpdateSink};
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::ToolContext;

/// What a tool is, for the model and the agent loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolSpec {
    /// The name the model calls it by.
    pub name: &'static str,
    /// What it does, for the model.
    pub description: &'static str,
    /// When and how to use it, for the system prompt.
    pub guidance: &'static str,
    /// Whether calls may overlap with others in a batch.
    pub mode: ExecutionMode,
}

impl ToolSpec {
    /// A tool whose calls may run beside others (it only looks).
    pub const fn parallel(
        name: &'static str,
        description: &'static str,
        guide: &'static str,
    ) -> Self {
        Self { name, description, guidance: guide, mode: ExecutionMode::Parallel }
    }

    /// A tool whose calls run one at a time (it changes things).
    pub const fn sequential(
        name: &'static str,
        description: &'static str,
        guidance: &'static str,
    ) -> Self {
        Self { name, description, guidance, mode: ExecutionMode::Sequential }
    }
}

/// A coding tool with typed arguments. See the module docs.
pub trait TypedTool: Send + Sync + 'static {
    /// The arguments object the model passes. Its JSON Schema (field doc comments as
    /// descriptions) is the tool's `parameters`; its `Deserialize` impl checks what the schema
    /// states (types, required fields, bounds such as [`super::Limit`]).
    type Args: DeserializeOwned + JsonSchema + Send + 'static;
    /// Name, description, guidance and mode.
    const SPEC: ToolSpec;

    /// Runs one call with its parsed arguments.
    fn run(
        ctx: Arc<ToolContext>,
        args: Self::Args,
        call: ToolCall,
    ) -> impl Future<Output = ToolOutput> + Send;
}

/// A tool whose whole work blocks (walks, reads): it runs off the async threads, once, in the
/// blanket [`TypedTool`] impl.
pub trait BlockingTool: Send + Sync + 'static {
    /// See [`TypedTool::Args`].
    type Args: DeserializeOwned + JsonSchema + Send + 'static;
    /// See [`TypedTool::SPEC`].
    const SPEC: ToolSpec;

    /// Does the call's work; `cancel` fires when the call must stop.
    fn run_blocking(ctx: &ToolContext, args: Self::Args, cancel: &CancellationToken) -> ToolOutput;
}

impl<T: BlockingTool> TypedTool for T {
    type Args = T::Args;
    const SPEC: ToolSpec = T::SPEC;

    async fn run(ctx: Arc<ToolContext>, args: T::Args, call: ToolCall) -> ToolOutput {
        let cancel = call.cancel.clone();
        call.blocking(move || T::run_blocking(&ctx, args, &cancel)).await
    }
}

/// The parts of an invocation a running tool uses besides its arguments.
#[derive(Debug, Clone)]
pub struct ToolCall {
    /// The tool's name, for messages.
    pub tool: &'static str,
    /// The provider's id of this call.
    pub call_id: String,
    /// Cancelled when the call must stop.
    pub cancel: CancellationToken,
    /// Where partial output goes.
    pub updates: ToolUpdateSink,
}

impl ToolCall {
    /// Runs blocking work (file walks, reads, writes) off the async threads. A panic inside
    /// becomes an error result rather than taking the session down.
    pub async fn blocking<F>(&self, work: F) -> ToolOutput
    where
        F: FnOnce() -> ToolOutput + Send + 'static,
    {
        match tokio::task::spawn_blocking(work).await {
            Ok(output) => output,
            Err(err) => {
                tracing::error!(tool = self.tool, error = %err, "tool worker failed");
                ToolOutput::error(format!("{} failed internally: {err}", self.tool))
            }
        }
    }
}

/// A [`TypedTool`] bound to one session's context: the agent's [`Tool`].
pub struct Typed<T: TypedTool> {
    tool: T,
    ctx: Arc<ToolContext>,
    schema: Arc<Value>,
}

impl<T: TypedTool> Typed<T> {
    /// Binds `tool` to a session's context.
    pub fn new(tool: T, ctx: Arc<ToolContext>) -> Self {
        Self { tool, ctx, schema: schema_of::<T::Args>() }
    }

    /// The tool itself.
    pub fn inner(&self) -> &T {
        &self.tool
    }
}

impl<T: TypedTool> Tool for Typed<T> {
    fn name(&self) -> &str {
        T::SPEC.name
    }

    fn description(&self) -> &str {
        T::SPEC.description
    }

    fn parameters(&self) -> Value {
        (*self.schema).clone()
    }

    fn guidance(&self) -> Option<&str> {
        Some(T::SPEC.guidance)
    }

    fn mode(&self) -> ExecutionMode {
        T::SPEC.mode
    }

    /// The typed parse is the validation: the tool set skips its schema check.
    fn checks_own_arguments(&self) -> bool {
        true
    }

    fn execute(&self, invocation: ToolInvocation) -> BoxFuture<'_, ToolOutput> {
        Box::pin(async move {
            let args = match parse_arguments::<T::Args>(T::SPEC.name, invocation.arguments) {
                Ok(args) => args,
                Err(output) => return output,
            };
            let call = ToolCall {
                tool: T::SPEC.name,
                call_id: invocation.call_id,
                cancel: invocation.cancel,
                updates: invocation.updates,
            };
            T::run(self.ctx.clone(), args, call).await
        })
    }
}

/// Parses a tool's arguments. A mismatch becomes an error result naming the tool and the
/// field at fault (`serde_path_to_error` keeps the path serde alone loses).
pub(crate) fn parse_arguments<A: DeserializeOwned>(
    tool: &str,
    arguments: Value,
) -> Result<A, ToolOutput> {
    serde_path_to_error::deserialize(arguments).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        if path == "." || path.is_empty() {
            ToolOutput::error(format!("Invalid arguments for {tool}: {inner}"))
        } else {
            ToolOutput::error(format!("Invalid arguments for {tool}: field `{path}`: {inner}"))
        }
    })
}

/// The JSON Schema of `A`, generated on first use and shared for the life of the process.
pub(crate) fn schema_of<A: JsonSchema + 'static>() -> Arc<Value> {
    static SCHEMAS: OnceLock<Mutex<HashMap<TypeId, Arc<Value>>>> = OnceLock::new();
    let schemas = SCHEMAS.get_or_init(Default::default);
    let mut schemas = schemas.lock().unwrap_or_else(PoisonError::into_inner);
    schemas.entry(TypeId::of::<A>()).or_insert_with(|| Arc::new(generate::<A>())).clone()
}

/// Generates the schema as providers want it: subschemas inlined, no `$schema` or `title`,
/// optional fields plain (not `null`-able), and no `format` or `default` annotations that
/// some providers reject.
fn generate<A: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|settings| {
            settings.meta_schema = None;
            settings.inline_subschemas = true;
        })
        .into_generator();
    let mut schema = generator.into_root_schema_for::<A>().to_value();
    // The struct's own doc comment is for readers of the code; the tool's description is
    // what the model reads about the whole call.
    if let Some(object) = schema.as_object_mut() {
        object.remove("title");
        object.remove("description");
    }
    strip_annotations(&mut schema);
    schema
}

/// Removes `format` and `default` from every (sub)schema in `value`, and the `null` an
/// `Option` adds to a type (a field that may be left out is not one that may be `null`).
fn strip_annotations(value: &mut Value) {
    match value {
        Value::Object(object) => {
            if let Some(Value::Array(types)) = object.get_mut("type") {
                types.retain(|t| t != "null");
                if types.len() == 1 {
                    let only = types.remove(0);
                    object.insert("type".to_string(), only);
                }
            }
            for key in ["format", "default"] {
                if object.get(key).is_some_and(|v| !v.is_object()) {
                    object.remove(key);
                }
            }
            // A property literally named `format` or `default` is an object under
            // `properties`: only its inner annotations go.
            for child in object.values_mut() {
                strip_annotations(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strip_annotations),
        _ => {}
    }
}
