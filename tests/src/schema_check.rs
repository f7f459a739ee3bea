//! Results on the wire checked against the official JSON Schemas of both revisions.
//!
//! The official schemas are read from `$MCP_SPEC_DIR`, else from the repository's own copy
//! in `spec/` (see `spec/README.md`). Without them (`MCP_SPEC_DIR` naming a folder that
//! lacks them) [`spec_dir`] says so and tests skip, except under `CI=true`.

use std::collections::HashMap;
use std::path::PathBuf;

use jsonschema::Validator;
use serde_json::{Value, json};

/// The official spec folder, or `None` (said on stderr) when it is not there.
pub fn spec_dir(test: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("MCP_SPEC_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../spec"));
    if dir.join("core-2026-07-28/schema.json").is_file() {
        return Some(dir);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "CI=true but the official schemas are not at {} (set MCP_SPEC_DIR)",
        dir.display()
    );
    mcp_tasks::conformance::report_skip(&format!(
        "{test}: the official MCP schemas are not at {} (the repository ships them in \
         spec/; MCP_SPEC_DIR must name a folder holding core-2026-07-28/, \
         core-2025-11-25/ and ext-tasks/ as spec/ does)",
        dir.display()
    ));
    None
}

/// Validators for `#/$defs/<Type>` of one schema document.
#[derive(Debug)]
pub struct Schema {
    document: Value,
    cache: HashMap<String, Validator>,
}

impl Schema {
    /// The schema document at `path`; panics when it cannot be read.
    pub fn load(path: PathBuf) -> Schema {
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        Schema {
            document: serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display())),
            cache: HashMap::new(),
        }
    }

    /// Panics, naming the method and every violation, unless `value` is a `type_name`.
    pub fn check(&mut self, what: &str, type_name: &str, value: &Value) {
        assert!(
            self.document["$defs"].get(type_name).is_some(),
            "{type_name} is not in the official schema"
        );
        let validator = self.cache.entry(type_name.to_owned()).or_insert_with(|| {
            let mut doc = self.document.clone();
            doc["$ref"] = json!(format!("#/$defs/{type_name}"));
            jsonschema::validator_for(&doc)
                .unwrap_or_else(|e| panic!("the schema of {type_name} does not compile: {e}"))
        });
        let errors: Vec<String> = validator
            .iter_errors(value)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "{what}: not a valid {type_name}: {errors:?}\n{value:#}"
        );
    }
}
