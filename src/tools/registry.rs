//! The tool registry: lookup by name and schema validation (schemas compiled once).

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock, RwLock};

use jsonschema::error::ValidationErrorKind;
use serde_json::Value;

use super::Tool;
use crate::provider::{ToolDefinition, ToolSet};

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("tool {name}: its input schema does not compile: {message}")]
    BadSchema { name: String, message: String },
    #[error("tool {0} is registered twice")]
    Duplicate(String),
}

pub struct RegisteredTool {
    pub tool: Arc<dyn Tool>,
    /// Compiled at registration for a foreign schema, on the first call otherwise
    /// ([`Tool::schema_is_foreign`]); the error says why a schema did not compile.
    validator: OnceLock<Result<jsonschema::Validator, String>>,
}

/// The tools of a session. Tools may be added while the session runs (MCP servers connect,
/// SDK servers register) and deferred tools may be activated by ToolSearch; what is offered to
/// the model only ever grows at its end, so the tool prefix of every request stays byte-stable
/// for the prompt cache.
pub struct ToolRegistry {
    inner: RwLock<Inner>,
}

/// More to say about a name no tool has (the MCP server it belongs to failed to start).
pub type UnknownHint = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

#[derive(Default)]
struct Inner {
    /// Consulted for calls to names no tool has.
    hint: Option<UnknownHint>,
    tools: BTreeMap<String, Arc<RegisteredTool>>,
    /// Registration order.
    order: Vec<String>,
    /// What is offered to the model, in the order sent: tools registered as offered, then
    /// deferred tools in the order they were activated.
    offered: Vec<String>,
    /// Tools registered as deferred (activated or not), in registration order: the listing the
    /// model sees in the description of the tool that loads them.
    deferred: Vec<String>,
    definitions: ToolSet,
    /// Bumped whenever `definitions` changes.
    generation: u64,
}

impl ToolRegistry {
    pub fn new(tools: Vec<Arc<dyn Tool>>) -> Result<Self, RegistryError> {
        let registry = ToolRegistry {
            inner: RwLock::new(Inner::default()),
        };
        registry.add(tools, false)?;
        Ok(registry)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        // The registry holds plain data that stays consistent per operation.
        self.inner.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers more tools at the end. Deferred tools are not offered until activated; their
    /// names are listed in the description of the tool that loads them ([`Tool::lists_deferred`]).
    /// Either all tools are added or none (a bad foreign schema or a duplicate name refuses the
    /// lot).
    pub fn add(&self, tools: Vec<Arc<dyn Tool>>, deferred: bool) -> Result<Vec<String>, RegistryError> {
        let mut compiled = Vec::with_capacity(tools.len());
        {
            let inner = self.read();
            let mut seen = std::collections::BTreeSet::new();
            for tool in tools {
                let name = tool.name().to_string();
                if inner.tools.contains_key(&name) || !seen.insert(name.clone()) {
                    return Err(RegistryError::Duplicate(name));
                }
                let validator = OnceLock::new();
                if tool.schema_is_foreign() {
                    let compiled =
                        jsonschema::validator_for(&tool.input_schema()).map_err(|e| RegistryError::BadSchema {
                            name: name.clone(),
                            message: e.to_string(),
                        })?;
                    let _ = validator.set(Ok(compiled));
                }
                compiled.push((name, RegisteredTool { tool, validator }));
            }
        }
        let mut inner = self.write();
        let mut names = Vec::with_capacity(compiled.len());
        for (name, registered) in compiled {
            if inner.tools.contains_key(&name) {
                return Err(RegistryError::Duplicate(name));
            }
            inner.tools.insert(name.clone(), Arc::new(registered));
            inner.order.push(name.clone());
            if deferred {
                inner.deferred.push(name.clone());
            } else {
                inner.offered.push(name.clone());
            }
            names.push(name);
        }
        if !names.is_empty() {
            inner.rebuild_definitions();
        }
        Ok(names)
    }

    /// Offers deferred tools from now on (appended, in the given order). Returns the names that
    /// were activated by this call; unknown and already offered names are skipped.
    pub fn activate(&self, names: &[String]) -> Vec<String> {
        let mut inner = self.write();
        let mut done = Vec::new();
        for name in names {
            if inner.deferred.contains(name) && !inner.offered.contains(name) {
                inner.offered.push(name.clone());
                done.push(name.clone());
            }
        }
        if !done.is_empty() {
            inner.rebuild_definitions();
        }
        done
    }

    pub fn get(&self, name: &str) -> Option<Arc<RegisteredTool>> {
        self.read().tools.get(name).cloned()
    }

    /// Every registered tool, offered or deferred, in registration order.
    pub fn names(&self) -> Vec<String> {
        self.read().order.clone()
    }

    /// Tools registered as deferred that are not offered yet.
    pub fn deferred_pending(&self) -> Vec<String> {
        let inner = self.read();
        inner
            .deferred
            .iter()
            .filter(|n| !inner.offered.contains(n))
            .cloned()
            .collect()
    }

    /// Whether a tool was registered as deferred (activated since or not).
    pub fn is_deferred(&self, name: &str) -> bool {
        self.read().deferred.iter().any(|n| n == name)
    }

    /// Whether a tool is offered to the model now.
    pub fn is_offered(&self, name: &str) -> bool {
        self.read().offered.iter().any(|n| n == name)
    }

    /// Every registered tool with its registration entry, in registration order.
    pub fn all(&self) -> Vec<Arc<RegisteredTool>> {
        let inner = self.read();
        inner.order.iter().filter_map(|n| inner.tools.get(n).cloned()).collect()
    }

    /// A registry of the tools `keep` accepts, in the same order (a sub-agent's tool set: the
    /// filter is enforced here, where calls are looked up, not by the prompt). Deferred tools
    /// stay deferred; the tool that loads them is bound to this registry and is left out (see
    /// `mcp::add_loader`).
    pub fn subset(&self, mut keep: impl FnMut(&str) -> bool) -> Result<ToolRegistry, RegistryError> {
        let (offered, deferred) = {
            let inner = self.read();
            let offered: Vec<Arc<dyn Tool>> = inner
                .offered
                .iter()
                .filter_map(|n| inner.tools.get(n))
                .filter(|t| !t.tool.lists_deferred())
                .map(|t| t.tool.clone())
                .collect();
            let deferred: Vec<Arc<dyn Tool>> = inner
                .deferred
                .iter()
                .filter(|n| !inner.offered.contains(n))
                .filter_map(|n| inner.tools.get(n))
                .map(|t| t.tool.clone())
                .collect();
            (offered, deferred)
        };
        let offered: Vec<Arc<dyn Tool>> = offered.into_iter().filter(|t| keep(t.name())).collect();
        let deferred: Vec<Arc<dyn Tool>> = deferred.into_iter().filter(|t| keep(t.name())).collect();
        let child = ToolRegistry::new(offered)?;
        child.add(deferred, true)?;
        if let Some(hint) = self.read().hint.clone() {
            child.explain_unknown(hint);
        }
        Ok(child)
    }

    /// Adds a tool after the others (session-specific tools such as Skill).
    pub fn with(self, tool: Arc<dyn Tool>) -> Result<ToolRegistry, RegistryError> {
        self.add(vec![tool], false)?;
        Ok(self)
    }

    /// Removes tools the model must not be offered (e.g. bare-name deny rules).
    pub fn retain(&mut self, mut keep: impl FnMut(&str) -> bool) {
        let inner = self.inner.get_mut().unwrap_or_else(|p| p.into_inner());
        inner.order.retain(|n| keep(n));
        let order = inner.order.clone();
        inner.tools.retain(|n, _| order.contains(n));
        inner.offered.retain(|n| order.contains(n));
        inner.deferred.retain(|n| order.contains(n));
        inner.rebuild_definitions();
    }

    /// The definitions as sent with the next request (shared, encoded once per change).
    pub fn tool_set(&self) -> ToolSet {
        self.read().definitions.clone()
    }

    /// Changes whenever the offered definitions change (tools added or activated).
    pub fn generation(&self) -> u64 {
        self.read().generation
    }

    /// Lets the owner of a family of tools (MCP servers) say why one of them is missing.
    pub fn explain_unknown(&self, hint: UnknownHint) {
        self.write().hint = Some(hint);
    }

    /// The message for a call to a tool that does not exist.
    pub fn unknown_tool_message(&self, name: &str) -> String {
        let (offered, hint) = {
            let inner = self.read();
            if inner.deferred.iter().any(|n| n == name) {
                return format!(
                    "`{name}` is a deferred tool: load its definition first with ToolSearch (query `select:{name}`), then call it."
                );
            }
            (inner.offered.join(", "), inner.hint.clone())
        };
        // Asked without the registry's lock held: the hint reads its owner's state.
        let why = hint.and_then(|h| h(name)).map(|w| format!(" {w}")).unwrap_or_default();
        format!("No tool named `{name}` exists.{why} Available tools: {offered}. Call one of these by its exact name.")
    }
}

impl Inner {
    fn rebuild_definitions(&mut self) {
        let listing = deferred_listing(&self.deferred);
        self.definitions = ToolSet::new(
            self.offered
                .iter()
                .filter_map(|n| self.tools.get(n))
                .map(|t| {
                    let mut description = t.tool.description().to_string();
                    if t.tool.lists_deferred() && !listing.is_empty() {
                        description.push_str(&listing);
                    }
                    ToolDefinition {
                        name: t.tool.name().to_string(),
                        description,
                        input_schema: t.tool.input_schema(),
                        cache_control: None,
                    }
                })
                .collect(),
        );
        self.generation += 1;
    }
}

/// The names of the deferred tools, appended to the loader's description. It lists every tool
/// registered as deferred, activated or not, so activating one does not change it.
fn deferred_listing(deferred: &[String]) -> String {
    if deferred.is_empty() {
        return String::new();
    }
    let mut out = String::from("\n\nDeferred tools (load before calling):");
    for name in deferred {
        out.push_str("\n- ");
        out.push_str(name);
    }
    out
}

impl RegisteredTool {
    /// Validates an input; on failure returns one line per offending field.
    pub fn validate(&self, input: &Value) -> Result<(), Vec<String>> {
        if !input.is_object() {
            return Err(vec![format!(
                "the input must be a JSON object, got {}",
                type_name(input)
            )]);
        }
        let validator = self
            .validator
            .get_or_init(|| jsonschema::validator_for(&self.tool.input_schema()).map_err(|e| e.to_string()));
        let validator = match validator {
            Ok(v) => v,
            Err(why) => {
                return Err(vec![format!(
                    "keel cannot check this call: the tool's input schema does not compile ({why})"
                )]);
            }
        };
        let problems: Vec<String> = validator.iter_errors(input).map(|e| describe(&e)).collect();
        if problems.is_empty() { Ok(()) } else { Err(problems) }
    }
}

fn describe(e: &jsonschema::ValidationError<'_>) -> String {
    let path = e.instance_path().as_str().to_string();
    let field = path.trim_start_matches('/').replace('/', ".");
    match e.kind() {
        ValidationErrorKind::Required { property } => {
            let name = property
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| property.to_string());
            if field.is_empty() {
                format!("`{name}` is required but missing")
            } else {
                format!("`{field}.{name}` is required but missing")
            }
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            let list = unexpected
                .iter()
                .map(|u| format!("`{u}`"))
                .collect::<Vec<_>>()
                .join(", ");
            if field.is_empty() {
                format!("unexpected parameter(s) {list}; remove them or check their spelling")
            } else {
                format!("`{field}` has unexpected field(s) {list}")
            }
        }
        _ => {
            let at = if field.is_empty() {
                "input".to_string()
            } else {
                format!("`{field}`")
            };
            format!("{at}: {e}")
        }
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::builtin_tools;
    use serde_json::json;

    #[test]
    fn field_level_messages() {
        let reg = ToolRegistry::new(builtin_tools()).unwrap();
        let read = reg.get("Read").unwrap();
        let errs = read.validate(&json!({"offset": "ten", "path": "x"})).unwrap_err();
        let all = errs.join("\n");
        assert!(all.contains("`file_path` is required"), "{all}");
        assert!(all.contains("`offset`"), "{all}");
        assert!(all.contains("`path`"), "{all}");
        assert!(read.validate(&json!({"file_path": "/x", "limit": 3})).is_ok());
    }

    #[test]
    fn every_builtin_schema_compiles() {
        // They are compiled on first use, so this is where a broken one shows.
        for tool in builtin_tools() {
            let schema = tool.input_schema();
            assert!(jsonschema::validator_for(&schema).is_ok(), "{}: {schema}", tool.name());
            assert!(!tool.schema_is_foreign(), "{}", tool.name());
        }
    }

    /// A tool whose schema comes from elsewhere.
    struct Foreign(Value);

    #[async_trait::async_trait]
    impl Tool for Foreign {
        fn name(&self) -> &str {
            "Foreign"
        }
        fn description(&self) -> &str {
            "a tool with a schema from outside"
        }
        fn input_schema(&self) -> Value {
            self.0.clone()
        }
        fn schema_is_foreign(&self) -> bool {
            true
        }
        async fn call(
            &self,
            _input: Value,
            _ctx: &crate::tools::ToolContext,
        ) -> Result<crate::types::tool::ToolOutput, crate::tools::ToolError> {
            Err(crate::tools::ToolError::invalid("not called"))
        }
    }

    #[test]
    fn a_foreign_schema_is_checked_when_registered() {
        let reg = ToolRegistry::new(builtin_tools()).unwrap();
        let bad = json!({"type": "object", "properties": {"a": {"type": "no-such-type"}}});
        let err = reg.add(vec![Arc::new(Foreign(bad))], false).unwrap_err();
        assert!(
            matches!(err, RegistryError::BadSchema { ref name, .. } if name == "Foreign"),
            "{err}"
        );
        assert!(reg.get("Foreign").is_none(), "nothing was added");
        let good = json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]});
        reg.add(vec![Arc::new(Foreign(good))], false).unwrap();
        let errs = reg.get("Foreign").unwrap().validate(&json!({})).unwrap_err();
        assert!(errs.join("\n").contains("`a` is required"), "{errs:?}");
    }

    #[test]
    fn unknown_tool_lists_names() {
        let reg = ToolRegistry::new(builtin_tools()).unwrap();
        let msg = reg.unknown_tool_message("ReadFile");
        assert!(msg.contains("Read, Glob, Grep"), "{msg}");
    }
}
