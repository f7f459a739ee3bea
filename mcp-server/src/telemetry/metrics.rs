//! The instruments (see the module docs for names, units and attributes), made once by
//! `init` when metrics are read (Prometheus, OTLP); until then every hook finds none.

use std::sync::OnceLock;
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Gauge, Histogram, Meter, UpDownCounter};

/// The MCP conventions' buckets for operation durations, in seconds.
const DURATION_BUCKETS: &[f64] = &[
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];
/// The OTel database conventions' buckets for `db.client.operation.duration`.
const STORE_BUCKETS: &[f64] = &[0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0];
/// Task durations run longer: up to an hour.
const TASK_BUCKETS: &[f64] = &[
    0.01, 0.05, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0,
];

pub(super) struct Instruments {
    operation: Histogram<f64>,
    created: Counter<u64>,
    finished: Counter<u64>,
    task_duration: Histogram<f64>,
    queue_wait: Histogram<f64>,
    input_wait: Histogram<f64>,
    running: UpDownCounter<i64>,
    claims: Counter<u64>,
    renewals_failed: Counter<u64>,
    store_operation: Histogram<f64>,
    live: Gauge<u64>,
}

static INSTRUMENTS: OnceLock<Instruments> = OnceLock::new();

#[inline]
pub(super) fn get() -> Option<&'static Instruments> {
    INSTRUMENTS.get()
}

/// Makes the instruments on `meter` (once; a second call keeps the first ones).
pub(super) fn install(meter: &Meter) {
    let _ = INSTRUMENTS.set(Instruments::new(meter));
}

impl Instruments {
    /// The instruments, made on `meter`.
    pub(super) fn new(meter: &Meter) -> Instruments {
        let seconds = |name: &'static str, description: &'static str, buckets: &[f64]| {
            meter
                .f64_histogram(name)
                .with_unit("s")
                .with_description(description)
                .with_boundaries(buckets.to_vec())
                .build()
        };
        let tasks = |name: &'static str, description: &'static str| {
            meter
                .u64_counter(name)
                .with_unit("{task}")
                .with_description(description)
                .build()
        };
        Instruments {
            operation: seconds(
                "mcp.server.operation.duration",
                "How long the server took to answer an MCP request.",
                DURATION_BUCKETS,
            ),
            created: tasks("mcp.task.created", "Tasks created, by tool."),
            finished: tasks(
                "mcp.task.finished",
                "Tasks that reached a terminal status here, by tool, status and error type.",
            ),
            task_duration: seconds(
                "mcp.task.duration",
                "From a task's creation to its terminal status, by tool and status.",
                TASK_BUCKETS,
            ),
            queue_wait: seconds(
                "mcp.task.queue.duration",
                "How long a task waited for a worker before its run started, by tool.",
                TASK_BUCKETS,
            ),
            input_wait: seconds(
                "mcp.task.input.duration",
                "How long a task waited for the answers to one input round.",
                TASK_BUCKETS,
            ),
            running: meter
                .i64_up_down_counter("mcp.task.running")
                .with_unit("{task}")
                .with_description("Task runs in progress in this process, by tool.")
                .build(),
            claims: tasks(
                "mcp.task.claims",
                "Queued tasks this worker claimed, by tool.",
            ),
            renewals_failed: meter
                .u64_counter("mcp.task.lease.renewal.failures")
                .with_unit("{renewal}")
                .with_description("Lease renewals of running tasks that failed.")
                .build(),
            store_operation: seconds(
                "db.client.operation.duration",
                "How long a task store operation took, by backend, operation and error kind.",
                STORE_BUCKETS,
            ),
            live: meter
                .u64_gauge("mcp.task.live")
                .with_unit("{task}")
                .with_description("Tasks in the store by status, as last counted.")
                .build(),
        }
    }
}

fn tool(name: &str) -> KeyValue {
    KeyValue::new("gen_ai.tool.name", name.to_owned())
}

impl Instruments {
    pub(super) fn operation(
        &self,
        elapsed: Duration,
        method: String,
        tool_name: Option<&str>,
        version: Option<&str>,
        error: Option<&str>,
    ) {
        let mut attributes = Vec::with_capacity(4);
        attributes.push(KeyValue::new("mcp.method.name", method));
        if let Some(t) = tool_name {
            attributes.push(tool(t));
        }
        if let Some(v) = version {
            attributes.push(KeyValue::new("mcp.protocol.version", v.to_owned()));
        }
        if let Some(error) = error {
            attributes.push(KeyValue::new("error.type", error.to_owned()));
        }
        self.operation.record(elapsed.as_secs_f64(), &attributes);
    }

    pub(super) fn created(&self, tool_name: &str) {
        self.created.add(1, &[tool(tool_name)]);
    }

    /// A task this process moved to the terminal `status` after it `lived`; `error`:
    /// its `error.type` when it did not succeed (`tool_error`, a JSON-RPC code,
    /// `worker_lost`).
    pub(super) fn finished(
        &self,
        tool_name: &str,
        status: &'static str,
        error: Option<&str>,
        lived: Duration,
    ) {
        let mut attributes = Vec::with_capacity(3);
        attributes.push(tool(tool_name));
        attributes.push(KeyValue::new("mcp.task.status", status));
        if let Some(error) = error {
            attributes.push(KeyValue::new("error.type", error.to_owned()));
        }
        self.finished.add(1, &attributes);
        self.task_duration.record(lived.as_secs_f64(), &attributes);
    }

    pub(super) fn started(&self, tool_name: &str, queued: Option<Duration>) {
        self.running.add(1, &[tool(tool_name)]);
        if let Some(waited) = queued {
            self.queue_wait
                .record(waited.as_secs_f64(), &[tool(tool_name)]);
        }
    }

    pub(super) fn stopped(&self, tool_name: &str) {
        self.running.add(-1, &[tool(tool_name)]);
    }

    pub(super) fn claimed(&self, tool_name: &str) {
        self.claims.add(1, &[tool(tool_name)]);
    }

    pub(super) fn input_waited(&self, waited: Duration) {
        self.input_wait.record(waited.as_secs_f64(), &[]);
    }

    pub(super) fn renewal_failed(&self) {
        self.renewals_failed.add(1, &[]);
    }

    /// One store operation: `operation` (the `TaskStore` method) on `system` (the
    /// backend) took `elapsed`, and failed with the error kind `error`.
    pub(super) fn store_operation(
        &self,
        elapsed: Duration,
        system: &'static str,
        operation: &'static str,
        error: Option<&'static str>,
    ) {
        let system = KeyValue::new("db.system.name", system);
        let operation = KeyValue::new("db.operation.name", operation);
        match error {
            None => self
                .store_operation
                .record(elapsed.as_secs_f64(), &[system, operation]),
            Some(e) => self.store_operation.record(
                elapsed.as_secs_f64(),
                &[system, operation, KeyValue::new("error.type", e)],
            ),
        }
    }

    /// The store's tasks by status, as just counted.
    pub(super) fn live(&self, counts: &mcp_tasks::TaskCounts) {
        use mcp_tasks_protocol::tasks::TaskStatus;
        for status in [
            TaskStatus::Working,
            TaskStatus::InputRequired,
            TaskStatus::Completed,
            TaskStatus::Failed,
            TaskStatus::Cancelled,
        ] {
            self.live.record(
                counts.status(status),
                &[KeyValue::new("mcp.task.status", status.as_str())],
            );
        }
    }
}
