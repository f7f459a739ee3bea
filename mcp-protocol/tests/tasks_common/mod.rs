//! Helpers shared by the tasks and 2025-11-25 schema tests: validators for the official
//! schemas and ours, built once per (document, type) and cached.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use mcp_tasks_protocol::schema::{Revision, generate};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// Which schema document to validate against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Doc {
    /// The official MCP 2025-11-25 schema.
    Official2025,
    /// The official tasks extension schema.
    OfficialExt,
    /// Our generated schema for 2025-11-25.
    Ours2025,
    /// Our generated schema for the tasks extension.
    OursExt,
}

#[path = "../spec_files/mod.rs"]
mod spec_files;

use spec_files::{available, spec_dir};

fn official(doc: Doc) -> bool {
    matches!(doc, Doc::Official2025 | Doc::OfficialExt)
}

fn load(doc: Doc) -> Value {
    let read = |p: &str| -> Value {
        let path = spec_dir().join(p);
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        serde_json::from_str(&text).unwrap()
    };
    match doc {
        Doc::Official2025 => read("core-2025-11-25/schema.json"),
        Doc::OfficialExt => read("ext-tasks/schema.json"),
        Doc::Ours2025 => generate(Revision::Core2025_11_25),
        Doc::OursExt => generate(Revision::TasksExtension),
    }
}

fn documents() -> &'static Mutex<HashMap<Doc, Arc<Value>>> {
    static DOCS: OnceLock<Mutex<HashMap<Doc, Arc<Value>>>> = OnceLock::new();
    DOCS.get_or_init(Default::default)
}

type Validators = Mutex<HashMap<(Doc, String), Arc<jsonschema::Validator>>>;

fn validators() -> &'static Validators {
    static V: OnceLock<Validators> = OnceLock::new();
    V.get_or_init(Default::default)
}

/// The document, loaded once.
pub fn document(doc: Doc) -> Arc<Value> {
    let mut docs = documents().lock().unwrap();
    docs.entry(doc)
        .or_insert_with(|| Arc::new(load(doc)))
        .clone()
}

/// A validator for `$defs/<def>` of `doc`.
pub fn validator(doc: Doc, def: &str) -> Arc<jsonschema::Validator> {
    let key = (doc, def.to_owned());
    if let Some(v) = validators().lock().unwrap().get(&key) {
        return v.clone();
    }
    let mut root = (*document(doc)).clone();
    let defs = root.get("$defs").and_then(Value::as_object).expect("$defs");
    assert!(defs.contains_key(def), "{doc:?} has no $defs/{def}");
    root.as_object_mut()
        .unwrap()
        .insert("$ref".into(), json!(format!("#/$defs/{def}")));
    let v =
        Arc::new(jsonschema::validator_for(&root).unwrap_or_else(|e| panic!("{doc:?} {def}: {e}")));
    validators().lock().unwrap().insert(key, v.clone());
    v
}

/// Validation errors of `value` against `$defs/<def>` of `doc` (empty when valid).
pub fn errors(doc: Doc, def: &str, value: &Value) -> Vec<String> {
    validator(doc, def)
        .iter_errors(value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

/// Panics unless `value` validates against `$defs/<def>` of `doc` (an official document
/// that is not there is skipped, said once).
pub fn assert_valid(doc: Doc, def: &str, value: &Value) {
    if official(doc) && !available("validation against the official schemas") {
        return;
    }
    let errs = errors(doc, def, value);
    assert!(
        errs.is_empty(),
        "{doc:?} $defs/{def} rejects {value}:\n{}",
        errs.join("\n")
    );
}

/// Panics unless `value` is rejected by `$defs/<def>` of `doc` (an official document
/// that is not there is skipped, said once).
pub fn assert_invalid(doc: Doc, def: &str, value: &Value) {
    if official(doc) && !available("validation against the official schemas") {
        return;
    }
    assert!(
        !errors(doc, def, value).is_empty(),
        "{doc:?} $defs/{def} accepts {value}"
    );
}

/// The official and our document of one revision.
pub fn docs_of(ext: bool) -> (Doc, Doc) {
    if ext {
        (Doc::OfficialExt, Doc::OursExt)
    } else {
        (Doc::Official2025, Doc::Ours2025)
    }
}

/// Reads `value` as `T`, checks that it serializes back to the same JSON, and validates
/// it against the official `$defs/<official_def>` and our schema of `T`. Returns the
/// typed value.
pub fn check<T>(ext: bool, official_def: &str, value: Value) -> T
where
    T: Serialize + DeserializeOwned + JsonSchema + PartialEq + std::fmt::Debug,
{
    let typed: T = serde_json::from_value(value.clone())
        .unwrap_or_else(|e| panic!("{official_def}: cannot read {value}: {e}"));
    let back = serde_json::to_value(&typed).unwrap();
    assert_eq!(back, value, "{official_def}: round trip changed the value");
    let (official, ours) = docs_of(ext);
    assert_valid(official, official_def, &back);
    assert_valid(ours, &T::schema_name(), &back);
    typed
}

/// Like [`check`], starting from a typed value: serializes it, validates, reads it back.
pub fn check_typed<T>(ext: bool, official_def: &str, typed: &T) -> Value
where
    T: Serialize + DeserializeOwned + JsonSchema + PartialEq + std::fmt::Debug,
{
    let value = serde_json::to_value(typed).unwrap();
    let (official, ours) = docs_of(ext);
    assert_valid(official, official_def, &value);
    assert_valid(ours, &T::schema_name(), &value);
    let back: T = serde_json::from_value(value.clone())
        .unwrap_or_else(|e| panic!("{official_def}: cannot read back {value}: {e}"));
    assert_eq!(&back, typed, "{official_def}: round trip changed the value");
    value
}
