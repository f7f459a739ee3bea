//! `cargo xtask standalone`: the repository stands alone. A clone of HEAD, with nothing
//! beside it, runs the test command (outside CI, so what it lacks is skipped, and said)
//! and must pass, skipping nothing for want of the official schemas (they ship in
//! `spec/`). On failure it prints what failed, as libtest reported it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// `cargo xtask standalone`: a clone of HEAD of the workspace at `root` in an empty temporary folder (no `../shared`
/// beside it) runs the test command outside CI, with the official schemas of its own
/// `spec/` (no `MCP_SPEC_DIR`). It builds into a folder of its own inside the target
/// folder (`$CARGO_TARGET_DIR`, else `target/`), `standalone-<pid>-<time>`, removed when
/// it ends, whatever the outcome: the workspace's crates hash their paths relative to the
/// workspace root, so the clone's crates have the same artifact names as this checkout's
/// and sharing the folder itself would swap its binaries (`target/debug/demo`, ...) for the
/// clone's under whoever else is building or testing there.
pub fn standalone(root: &Path) -> Result<(), String> {
    let root = root.to_path_buf();
    let salt = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let run = format!("{}-{salt}", std::process::id());
    let folder = std::env::temp_dir().join(format!("mcp-standalone-{run}"));
    let cwd = std::env::current_dir().unwrap_or_else(|_| root.clone());
    let target = target_dir(&root, std::env::var_os("CARGO_TARGET_DIR"), &cwd)
        .join(format!("standalone-{run}"));
    std::fs::create_dir_all(&folder)
        .map_err(|e| format!("cannot create {}: {e}", folder.display()))?;
    let result = standalone_in(&root, &folder.join("repo"), &target);
    // What this run made: the clone and its build (the size of a cold debug build).
    for made in [&folder, &target] {
        match std::fs::remove_dir_all(made) {
            Ok(()) => println!("xtask: standalone: removed {}", made.display()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => eprintln!("xtask: standalone: cannot remove {}: {e}", made.display()),
        }
    }
    result
}

/// The lines of cargo test's output that say what failed: each `... FAILED` line and the
/// `failures:` sections (the failed tests' output and panics).
fn failure_report(stdout: &str) -> impl Iterator<Item = &str> {
    let mut in_failures = false;
    stdout.lines().filter(move |line| {
        if line.starts_with("failures:") {
            in_failures = true;
        } else if line.starts_with("test result:") {
            in_failures = false;
        }
        in_failures || (line.starts_with("test ") && line.ends_with("FAILED"))
    })
}

/// The target folder cargo builds this workspace into: `CARGO_TARGET_DIR` (`env`; a
/// relative one is read from `cwd`, as cargo does), else `target/` at the workspace root.
fn target_dir(root: &Path, env: Option<std::ffi::OsString>, cwd: &Path) -> PathBuf {
    match env.filter(|d| !d.is_empty()) {
        Some(dir) => cwd.join(dir),
        None => root.join("target"),
    }
}

/// Clones HEAD of `root` into `clone` and runs its test command there, building into
/// `target`.
fn standalone_in(root: &Path, clone: &Path, target: &Path) -> Result<(), String> {
    let cloned = Command::new("git")
        .args(["clone", "--quiet", "--no-hardlinks"])
        .arg(root)
        .arg(clone)
        .status()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !cloned.success() {
        return Err(format!("git clone into {} failed", clone.display()));
    }
    println!(
        "xtask: standalone: cloned HEAD into {}, building into {}",
        clone.display(),
        target.display()
    );
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .current_dir(clone)
        .env_remove("CI")
        .env_remove("MCP_SPEC_DIR")
        .env_remove("MCP_REQUIRE_SERVICES")
        .env("CARGO_TARGET_DIR", target)
        .args(["xtask", "test"])
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run the clone's tests: {e}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let summary = stdout
        .lines()
        .filter(|l| l.starts_with("xtask: "))
        .collect::<Vec<_>>()
        .join("\n");
    println!("{summary}");
    if !output.status.success() {
        // What failed, as libtest reported it (the rest of the clone's output is long).
        for line in failure_report(&stdout).take(400) {
            println!("{line}");
        }
        return Err("the standalone clone's tests failed".into());
    }
    if stdout.contains("official MCP schemas") {
        return Err(
            "the standalone clone skipped tests for want of the official schemas: they ship in spec/"
                .into(),
        );
    }
    println!("xtask: standalone: a clone with nothing beside it passes");
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::{failure_report, target_dir};

    #[test]
    fn the_failure_report_keeps_what_failed_and_why() {
        let out = "running 3 tests\ntest a ... ok\ntest b ... FAILED\n\nfailures:\n\n---- b stdout ----\npanicked: boom\n\nfailures:\n    b\n\ntest result: FAILED. 1 passed; 1 failed\ntest c ... ok\n";
        let report: Vec<&str> = failure_report(out).collect();
        assert!(report.contains(&"test b ... FAILED"));
        assert!(report.contains(&"panicked: boom"));
        assert!(
            !report
                .iter()
                .any(|l| l.contains("test a") || l.contains("test c"))
        );
    }

    #[test]
    fn the_standalone_build_honours_cargo_target_dir() {
        let (root, cwd) = (Path::new("/repo"), Path::new("/repo/xtask"));
        assert_eq!(target_dir(root, None, cwd), PathBuf::from("/repo/target"));
        assert_eq!(
            target_dir(root, Some("".into()), cwd),
            PathBuf::from("/repo/target")
        );
        assert_eq!(
            target_dir(root, Some("/cache/target".into()), cwd),
            PathBuf::from("/cache/target")
        );
        assert_eq!(
            target_dir(root, Some("../t".into()), cwd),
            PathBuf::from("/repo/xtask/../t")
        );
    }
}
