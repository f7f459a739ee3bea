//! `cargo xtask schema [--check]`: the JSON Schemas generated from `mcp-tasks-protocol`'s
//! types, written into `schema/` or checked against it.

use mcp_tasks_protocol::schema::{Revision, generate};

use crate::workspace_root;

pub(crate) fn run(check: bool) -> Result<(), String> {
    let dir = workspace_root().join("schema");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut stale = Vec::new();
    for revision in Revision::ALL {
        let path = dir.join(revision.file_name());
        let mut text =
            serde_json::to_string_pretty(&generate(revision)).map_err(|e| e.to_string())?;
        text.push('\n');
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        if current == text {
            println!("schema/{}: up to date", revision.file_name());
        } else if check {
            stale.push(revision.file_name());
        } else {
            std::fs::write(&path, text)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            println!("schema/{}: written", revision.file_name());
        }
    }
    if stale.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "stale generated schemas: {} (run `cargo xtask schema`)",
            stale.join(", ")
        ))
    }
}
