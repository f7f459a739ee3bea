//! `cargo xtask chaos --seconds N`: the fault tests in their long form, N seconds of load
//! for each durability scenario (`tests/tests/durability.rs`, `DURABILITY_SECONDS`), then
//! the chaos test (`tests/tests/chaos.rs`, its own 40 s per store), with the backend
//! services found as `cargo xtask test` finds them. `cargo xtask test` runs both short.

use std::process::Command;

use crate::{services, workspace_root};

pub(crate) fn run(seconds: u64) -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(workspace_root())
        .env("DURABILITY_SECONDS", seconds.to_string())
        .args([
            "test",
            "-p",
            "mcp-tests",
            "--test",
            "durability",
            "--test",
            "chaos",
            "--",
            "--nocapture",
        ]);
    let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    services::prepare(&mut cmd, ci)?;
    println!("xtask: running {cmd:?}");
    let status = cmd
        .status()
        .map_err(|e| format!("cannot run the fault tests: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err("a fault test failed".into())
    }
}
