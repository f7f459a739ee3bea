//! `cargo xtask fuzz --seconds N`: the fuzz targets (`tests/tests/fuzz.rs`), N seconds
//! each, in release.

use std::process::Command;

use crate::workspace_root;

pub(crate) fn run(seconds: f64) -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(workspace_root())
        .env("MCP_FUZZ_SECONDS", seconds.to_string())
        .args([
            "test",
            "--release",
            "-p",
            "mcp-tests",
            "--test",
            "fuzz",
            "--",
            "--test-threads=1",
            "--nocapture",
        ])
        .status()
        .map_err(|e| format!("cannot run the fuzz targets: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err("a fuzz target failed".into())
    }
}
