//! Every official 2026-07-28 example deserializes into the Rust type its folder names and
//! serializes back to the same JSON.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;

use common::{examples_2026, json_eq, roundtrip_named};

/// The number of example files in the spec as of this writing; update it when the spec
/// adds examples (the test then also needs their types mapped).
const EXPECTED_EXAMPLES: usize = 129;

#[test]
fn every_example_round_trips() {
    if !common::available("every_example_round_trips") {
        return;
    }
    let examples = examples_2026();
    let mut failures = Vec::new();
    let mut types = BTreeSet::new();
    let mut ok = 0;
    for (type_name, file, value) in &examples {
        types.insert(type_name.clone());
        match roundtrip_named(type_name, value) {
            None => failures.push(format!("{type_name}: no Rust type mapped for this folder")),
            Some(Err(e)) => failures.push(format!("{type_name}/{file}: {e}")),
            Some(Ok(back)) if !json_eq(&back, value) => failures.push(format!(
                "{type_name}/{file}: changed in round trip\n  in:  {value}\n  out: {back}"
            )),
            Some(Ok(_)) => ok += 1,
        }
    }
    println!("round-tripped {ok} examples from {} types", types.len());
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(ok, examples.len());
    assert_eq!(ok, EXPECTED_EXAMPLES, "the spec's example count changed");
}

#[test]
fn numbers_compare_by_value() {
    use serde_json::json;
    assert!(json_eq(
        &json!({"a": 1, "b": [2.0]}),
        &json!({"b": [2], "a": 1.0})
    ));
    assert!(!json_eq(&json!({"a": 1}), &json!({"a": 1, "b": null})));
}
