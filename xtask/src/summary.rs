//! How `cargo xtask test` adds up: its phases, cargo test's per-binary totals, the skips
//! the tests reported, and the closing lines.

use std::path::Path;

/// Names every skip, prints a line per phase and the closing line; an error naming the
/// phases that failed.
pub(crate) fn summarize(phases: &[Phase], ignored: u64, skipped: &[String]) -> Result<(), String> {
    let (by_design, missing): (Vec<_>, Vec<_>) =
        skipped.iter().partition(|s| s.starts_with(BY_DESIGN));
    for what in &by_design {
        println!("xtask: NOT APPLICABLE {}", &what[BY_DESIGN.len()..]);
    }
    for what in &missing {
        println!("xtask: SKIPPED {what}");
    }
    // A closing line per phase, then one for everything.
    for phase in phases {
        match &phase.outcome {
            Ok(note) => println!(
                "xtask: phase {}: ok, {} passed, {} failed ({note})",
                phase.name, phase.passed, phase.failed
            ),
            Err(why) => println!(
                "xtask: phase {}: FAILED, {} passed, {} failed: {why}",
                phase.name, phase.passed, phase.failed
            ),
        }
    }
    let passed: u64 = phases.iter().map(|p| p.passed).sum();
    let failed: u64 = phases
        .iter()
        .map(|p| p.failed.max(u64::from(p.outcome.is_err())))
        .sum();
    println!(
        "xtask: {passed} passed, {failed} failed, {} skipped ({} ignored, {} not applicable by design, {} skipped for want of a service, package or file{})",
        ignored + skipped.len() as u64,
        ignored,
        by_design.len(),
        missing.len(),
        if missing.is_empty() {
            ""
        } else {
            ": see the SKIPPED lines above"
        }
    );
    let failures: Vec<&str> = phases
        .iter()
        .filter(|p| p.outcome.is_err())
        .map(|p| p.name.as_str())
        .collect();
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!("phases failed: {}", failures.join(", ")))
    }
}

/// The prefix a by-design skip's line has in the skip log
/// (`mcp_tasks::conformance::report_not_applicable`): a behaviour the backend does not
/// offer, not something missing from the machine.
const BY_DESIGN: &str = mcp_tasks::conformance::NOT_APPLICABLE;

/// One phase of `cargo xtask test` and how it went: its checks passed and failed, and
/// `Ok(note)` or `Err(why)`.
pub(crate) struct Phase {
    pub(crate) name: String,
    pub(crate) passed: u64,
    pub(crate) failed: u64,
    pub(crate) outcome: Result<String, String>,
}

impl Phase {
    pub(crate) fn failed(name: &str, why: String) -> Phase {
        Phase {
            name: name.into(),
            passed: 0,
            failed: 0,
            outcome: Err(why),
        }
    }
}

/// The distinct skips the tests reported in `log`, in order.
pub(crate) fn skipped_tests(log: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut seen = std::collections::BTreeSet::new();
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && seen.insert(l.to_owned()))
        .map(str::to_owned)
        .collect()
}

/// Sums of cargo test's `test result: ok. N passed; M failed; K ignored; ...` lines.
#[derive(Default)]
pub(crate) struct Totals {
    pub(crate) passed: u64,
    pub(crate) failed: u64,
    pub(crate) ignored: u64,
    pub(crate) binaries: u64,
}

impl Totals {
    pub(crate) fn add(&mut self, line: &str) {
        let Some(rest) = line.strip_prefix("test result: ") else {
            return;
        };
        self.binaries += 1;
        for part in rest.split(';') {
            let mut words = part.split_whitespace().rev();
            let (Some(what), Some(n)) = (words.next(), words.next()) else {
                continue;
            };
            let Ok(n) = n.parse::<u64>() else { continue };
            match what {
                "passed" => self.passed += n,
                "failed" => self.failed += n,
                "ignored" => self.ignored += n,
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Totals;

    #[test]
    fn totals_add_up_cargo_summaries() {
        let mut t = Totals::default();
        t.add("test result: ok. 8 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.07s");
        t.add("test result: FAILED. 2 passed; 3 failed; 0 ignored; 0 measured; 0 filtered out; finished in 1s");
        t.add("running 3 tests");
        assert_eq!((t.passed, t.failed, t.ignored, t.binaries), (10, 3, 1, 2));
    }

    /// `MCP_TEST_FAIL_ON_PURPOSE=1 cargo xtask test` makes this test fail, to see that the
    /// command still runs every phase (the official conformance suite included) and
    /// prints each one's figures.
    #[test]
    fn fails_on_purpose_when_asked() {
        assert!(
            std::env::var("MCP_TEST_FAIL_ON_PURPOSE")
                .ok()
                .is_none_or(|v| v != "1"),
            "failing on purpose: MCP_TEST_FAIL_ON_PURPOSE=1"
        );
    }
}
