//! Where the official MCP schema files are (`$MCP_SPEC_DIR`, else the repository's own
//! copy in `spec/`), and what a test does when they are not there (`MCP_SPEC_DIR` naming
//! a folder without them): it says so (on stderr and in the file `$MCP_SKIP_LOG` names,
//! which `cargo xtask test` counts and names) and skips what needs them; under `CI=true`
//! their absence is a failure.

#![allow(dead_code)]

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

/// The spec folder (`$MCP_SPEC_DIR`, else `spec/` at the repository root), whether or
/// not it exists.
pub fn spec_dir() -> PathBuf {
    match std::env::var_os("MCP_SPEC_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../spec"),
    }
}

/// Whether the official files are there. When they are not, says once per test binary
/// that `what` is skipped (panics instead under `CI=true`).
pub fn available(what: &str) -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    let present = *PRESENT.get_or_init(|| spec_dir().join("core-2026-07-28/schema.json").is_file());
    if present {
        return true;
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "CI=true but the official schemas are not at {} (set MCP_SPEC_DIR)",
        spec_dir().display()
    );
    static SAID: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    let first = SAID
        .get_or_init(Mutex::default)
        .lock()
        .map(|mut said| said.insert(what.to_owned()))
        .unwrap_or(true);
    if !first {
        return false;
    }
    let line = format!(
        "{what}: the official MCP schemas are not at {} (the repository ships them in \
         spec/; MCP_SPEC_DIR must name a folder holding core-2026-07-28/, \
         core-2025-11-25/ and ext-tasks/ as spec/ does)",
        spec_dir().display()
    );
    eprintln!("skipped: {line}");
    if let Some(path) = std::env::var_os("MCP_SKIP_LOG") {
        use std::io::Write;
        let _ = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            // One write of the whole line: appends from parallel tests do not interleave.
            .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()));
    }
    false
}
