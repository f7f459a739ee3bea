//! The official schemas and examples the tests validate against ship in the repository
//! (`spec/`, issue 29): every file the tests read is there, the tests read it by default,
//! and its provenance and licenses are written down (`spec/README.md`, `NOTICE`, the
//! upstream license texts).

use std::path::{Path, PathBuf};

use mcp_tests::schema_check::spec_dir;

/// The repository root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_files_the_tests_read_are_in_the_repository() {
    let spec = root().join("spec");
    for file in [
        "core-2026-07-28/schema.json",
        "core-2025-11-25/schema.json",
        "ext-tasks/schema.json",
    ] {
        let path = spec.join(file);
        let schema: serde_json::Value = serde_json::from_str(&read(&path))
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            schema["$defs"].as_object().is_some_and(|d| !d.is_empty()),
            "{} has no $defs",
            path.display()
        );
    }
    let examples = std::fs::read_dir(spec.join("core-2026-07-28/examples"))
        .expect("the 2026-07-28 examples")
        .count();
    assert!(examples > 50, "{examples} example folders");
}

#[test]
fn the_tests_read_the_repositorys_copy_unless_told_otherwise() {
    let dir = spec_dir("the_tests_read_the_repositorys_copy_unless_told_otherwise")
        .expect("the official schemas are found without ../shared");
    match std::env::var_os("MCP_SPEC_DIR") {
        None => assert_eq!(
            dir.canonicalize().expect("spec dir"),
            root().join("spec").canonicalize().expect("spec/"),
        ),
        Some(other) => assert_eq!(dir, PathBuf::from(other)),
    }
}

#[test]
fn provenance_and_licenses_are_written_down() {
    let root = root();
    let notice = read(&root.join("NOTICE"));
    let sources = read(&root.join("spec/README.md"));
    for commit in [
        "b0f60ba5409db7a6582440a7b473cc0398890f15",
        "e4345978be1f602f1fc48d89051e8559dd5302a6",
    ] {
        assert!(notice.contains(commit), "NOTICE names {commit}");
        assert!(sources.contains(commit), "spec/README.md names {commit}");
    }
    for repo in [
        "github.com/modelcontextprotocol/modelcontextprotocol",
        "github.com/modelcontextprotocol/ext-tasks",
    ] {
        assert!(notice.contains(repo), "NOTICE names {repo}");
    }
    let core = read(&root.join("spec/LICENSE-modelcontextprotocol"));
    assert!(core.contains("Apache License") && core.contains("MIT License"));
    let ext = read(&root.join("spec/LICENSE-ext-tasks"));
    assert!(ext.contains("Apache License"));
}
