//! JSON Schema (2020-12) generated from this crate's types, one document per revision.
//!
//! `cargo xtask schema` writes these to `schema/`; the tests validate our serialized values
//! against the official schemas in `spec/` (shipped with the repository).

use schemars::generate::SchemaSettings;
use schemars::transform::transform_subschemas;
use schemars::{Schema, SchemaGenerator};
use serde_json::{Value, json};

/// A wire revision whose types this crate describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Revision {
    /// MCP 2026-07-28 core.
    Core2026_07_28,
    /// The `io.modelcontextprotocol/tasks` extension to 2026-07-28.
    TasksExtension,
    /// MCP 2025-11-25 core, tasks included.
    Core2025_11_25,
}

impl Revision {
    /// Every revision, in the order the schema files are written.
    pub const ALL: [Revision; 3] = [
        Revision::Core2026_07_28,
        Revision::TasksExtension,
        Revision::Core2025_11_25,
    ];

    /// The file name under `schema/`.
    pub fn file_name(self) -> &'static str {
        match self {
            Revision::Core2026_07_28 => "mcp-2026-07-28.schema.json",
            Revision::TasksExtension => "mcp-tasks-extension.schema.json",
            Revision::Core2025_11_25 => "mcp-2025-11-25.schema.json",
        }
    }

    fn title(self) -> &'static str {
        match self {
            Revision::Core2026_07_28 => "MCP 2026-07-28 (mcp-tasks-protocol types)",
            Revision::TasksExtension => {
                "MCP tasks extension io.modelcontextprotocol/tasks (mcp-tasks-protocol types)"
            }
            Revision::Core2025_11_25 => "MCP 2025-11-25 with tasks (mcp-tasks-protocol types)",
        }
    }
}

/// The schema document of one revision: `{"$schema", "title", "$defs": {TypeName: schema}}`.
///
/// The output is deterministic (types are registered in a fixed order), so the committed
/// files can be checked for staleness byte for byte.
pub fn generate(revision: Revision) -> Value {
    // An absent optional member is expressed by leaving it out of `required`; the official
    // schemas never allow `null` there, so neither do ours.
    let settings = SchemaSettings::draft2020_12().with_transform(strip_null_from_optional);
    let mut generator = SchemaGenerator::new(settings);
    match revision {
        Revision::Core2026_07_28 => crate::v2026::register_schemas(&mut generator),
        Revision::TasksExtension => crate::tasks::register_schemas(&mut generator),
        Revision::Core2025_11_25 => crate::v2025::register_schemas(&mut generator),
    }
    let defs: serde_json::Map<String, Value> =
        generator.take_definitions(true).into_iter().collect();
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": revision.title(),
        "$defs": defs,
    })
}

/// Removes the `null` that schemars adds to an `Option` member that is not required:
/// absence is how MCP says "none", and the official schemas never accept `null` there.
/// Required members that are nullable on purpose (`ttl`, `ttlMs`) keep their `null`.
fn strip_null_from_optional(schema: &mut Schema) {
    transform_subschemas(&mut strip_null_from_optional, schema);
    let Some(obj) = schema.as_object_mut() else {
        return;
    };
    let required: Vec<String> = obj
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        for (name, prop) in props.iter_mut() {
            if !required.contains(name) {
                strip_null(prop);
            }
        }
    }
}

fn strip_null(prop: &mut Value) {
    let Some(obj) = prop.as_object_mut() else {
        return;
    };
    if let Some(Value::Array(types)) = obj.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            obj.insert("type".into(), only);
        }
    }
    let any_of = obj.get("anyOf").and_then(Value::as_array).cloned();
    if let Some(branches) = any_of {
        let kept: Vec<Value> = branches
            .into_iter()
            .filter(|b| b.get("type").and_then(Value::as_str) != Some("null"))
            .collect();
        if kept.len() == 1 {
            obj.remove("anyOf");
            if let Some(Value::Object(branch)) = kept.into_iter().next() {
                for (k, v) in branch {
                    obj.entry(k).or_insert(v);
                }
            }
        } else {
            obj.insert("anyOf".into(), Value::Array(kept));
        }
    }
}
