//! JSON Schema (2020-12) generated from this crate's types, one document per revision.
//!
//! `cargo xtask schema` writes these to `schema/`; the tests validate our serialized values
//! against the official schemas in `../shared/spec`.

use schemars::SchemaGenerator;
use schemars::generate::SchemaSettings;
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
    pub const ALL: [Revision; 3] =
        [Revision::Core2026_07_28, Revision::TasksExtension, Revision::Core2025_11_25];

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
            Revision::Core2026_07_28 => "MCP 2026-07-28 (mcp-protocol types)",
            Revision::TasksExtension => "MCP tasks extension io.modelcontextprotocol/tasks (mcp-protocol types)",
            Revision::Core2025_11_25 => "MCP 2025-11-25 with tasks (mcp-protocol types)",
        }
    }
}

/// The schema document of one revision: `{"$schema", "title", "$defs": {TypeName: schema}}`.
///
/// The output is deterministic (types are registered in a fixed order), so the committed
/// files can be checked for staleness byte for byte.
pub fn generate(revision: Revision) -> Value {
    let mut generator = SchemaGenerator::new(SchemaSettings::draft2020_12());
    match revision {
        Revision::Core2026_07_28 => crate::v2026::register_schemas(&mut generator),
        Revision::TasksExtension => crate::tasks::register_schemas(&mut generator),
        Revision::Core2025_11_25 => crate::v2025::register_schemas(&mut generator),
    }
    let defs: serde_json::Map<String, Value> = generator.take_definitions(true).into_iter().collect();
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": revision.title(),
        "$defs": defs,
    })
}
