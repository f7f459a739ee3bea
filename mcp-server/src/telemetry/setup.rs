//! [`init`]: the process's `tracing` subscriber (logs to stderr, and the audit trail to
//! its own file when asked) and, when the standard OpenTelemetry variables configure it,
//! the OTLP trace export.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use mcp_tasks_protocol::otel::{self, Signal};
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::metrics::{ManualReader, PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, Registry};

use super::prometheus::Prometheus;
use super::spans::TraceParents;
use super::{ENABLED, TARGET};

/// Why [`init`] could not set telemetry up.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The OTLP exporter could not be built (a bad endpoint, protocol or header value).
    #[error("OpenTelemetry: the OTLP exporter: {0}")]
    Exporter(String),
    /// `RUST_LOG` does not parse.
    #[error("RUST_LOG: {0}")]
    LogFilter(String),
    /// A global `tracing` subscriber was set already.
    #[error("a tracing subscriber is set already: {0}")]
    Subscriber(String),
    /// The audit file ([`TelemetryConfig::audit_file`]) cannot be opened for appending.
    #[error("the audit file {}: {source}", path.display())]
    AuditFile {
        /// The file.
        path: PathBuf,
        /// Why it cannot be opened.
        source: std::io::Error,
    },
}

/// What [`init`] sets up besides what the `OTEL_*` variables say.
#[derive(Debug, Clone)]
pub struct TelemetryConfig {
    /// The log filter when `RUST_LOG` is not set (e.g. `info`).
    pub default_log_filter: String,
    /// The service name when neither `OTEL_SERVICE_NAME` nor `OTEL_RESOURCE_ATTRIBUTES`
    /// names one.
    pub service_name: String,
    /// Whether to keep the metrics for a Prometheus scrape ([`Telemetry::prometheus`]).
    pub prometheus: bool,
    /// How often a server counts its store's tasks by status for the `mcp.task.live`
    /// gauge while metrics are read (e.g. [`DEFAULT_LIVE_TASKS_EVERY`], 30 s; see the
    /// module docs for what a count costs on each store).
    ///
    /// [`DEFAULT_LIVE_TASKS_EVERY`]: super::DEFAULT_LIVE_TASKS_EVERY
    pub live_tasks_every: std::time::Duration,
    /// Whose W3C trace context a request span continues (default
    /// [`TraceParents::Authenticated`]: an HTTP caller without credentials gets a trace of
    /// its own, linked to the context it sent).
    pub trace_parents: TraceParents,
    /// A file to append the whole audit trail to, one line an event (the timestamp and
    /// the event's fields, no colour codes): every event of the target
    /// [`audit::TARGET`](crate::audit::TARGET), at any level, creations included, whatever
    /// `RUST_LOG` says for stderr; not the successful reads of
    /// [`audit::READS_TARGET`](crate::audit::READS_TARGET). Created readable and writable
    /// by its owner only (on Unix) when it does not exist. `None`: no file.
    pub audit_file: Option<PathBuf>,
}

/// The telemetry of the process, as [`init`] set it up. Dropping it flushes and stops
/// the export (spans and metrics still buffered are sent, within the exporter's
/// timeout).
#[derive(Debug)]
pub struct Telemetry {
    traces: Option<SdkTracerProvider>,
    metrics: Option<SdkMeterProvider>,
    prometheus: Option<Prometheus>,
}

impl Telemetry {
    /// Whether traces are exported.
    pub fn traces(&self) -> bool {
        self.traces.is_some()
    }

    /// What renders and serves `/metrics`, when [`TelemetryConfig::prometheus`] asked.
    pub fn prometheus(&self) -> Option<Prometheus> {
        self.prometheus.clone()
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        // Nothing to do about an export that fails at exit.
        if let Some(traces) = self.traces.take() {
            ENABLED.store(false, std::sync::atomic::Ordering::Relaxed);
            let _ = traces.shutdown();
        }
        if let Some(metrics) = self.metrics.take() {
            let _ = metrics.shutdown();
        }
    }
}

/// Sets the process's global `tracing` subscriber: logs to stderr filtered by
/// `RUST_LOG` (else `default_filter`), without colour codes unless stderr is a terminal
/// (see the module docs' "Logs" for what each level holds); the audit trail to
/// [`TelemetryConfig::audit_file`] when set; and, when the standard variables configure OTLP (`OTEL_EXPORTER_OTLP_ENDPOINT` or
/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), this crate's spans exported over OTLP/HTTP.
///
/// The exporter and SDK read the rest of the standard configuration themselves:
/// `OTEL_EXPORTER_OTLP_PROTOCOL` (`http/protobuf`, the default, or `http/json`; gRPC is
/// not built in), the per-signal variables, `OTEL_EXPORTER_OTLP_HEADERS` and `_TIMEOUT`,
/// `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES` (the service is `service_name`
/// when neither names one), `OTEL_TRACES_SAMPLER` and `_ARG`, `OTEL_BSP_*`.
pub fn init(config: &TelemetryConfig) -> Result<Telemetry, TelemetryError> {
    let logs = otel::log_layer(&config.default_log_filter, TARGET)
        .map_err(|e| TelemetryError::LogFilter(e.0))?;
    let audit = config.audit_file.as_deref().map(audit_layer).transpose()?;
    let traces = otel::configured(Signal::Traces)
        .then(|| otel::tracer_provider(&config.service_name))
        .transpose()
        .map_err(|e| TelemetryError::Exporter(e.0))?;
    let otlp_metrics = otel::configured(Signal::Metrics);
    let (metrics, prometheus) = if otlp_metrics || config.prometheus {
        let (provider, prometheus) =
            meter_provider(&config.service_name, otlp_metrics, config.prometheus)?;
        super::metrics::install(&provider.meter("mcp-tasks-server"));
        super::live::set_every(config.live_tasks_every);
        (Some(provider), prometheus)
    } else {
        (None, None)
    };
    let export = traces.as_ref().map(|provider| {
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("mcp-tasks-server"))
            .with_filter(Targets::new().with_target(TARGET, tracing::Level::INFO))
    });
    Registry::default()
        .with(logs)
        .with(export)
        .with(audit)
        .try_init()
        .map_err(|e| TelemetryError::Subscriber(e.to_string()))?;
    if traces.is_some() {
        super::spans::set_trace_parents(config.trace_parents);
        ENABLED.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    Ok(Telemetry {
        traces,
        metrics,
        prometheus,
    })
}

/// The layer that appends the audit trail to the file at `path` (see
/// [`TelemetryConfig::audit_file`]).
fn audit_layer<S>(path: &Path) -> Result<impl Layer<S> + Send + Sync + 'static, TelemetryError>
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let file = options
        .open(path)
        .map_err(|source| TelemetryError::AuditFile {
            path: path.to_owned(),
            source,
        })?;
    // Every line is the trail's, whatever its level: neither says anything there.
    Ok(tracing_subscriber::fmt::layer()
        .with_writer(Arc::new(file))
        .with_ansi(false)
        .with_level(false)
        .with_target(false)
        .with_filter(audit_events()))
}

/// What the audit file takes: the trail at every level, but the successful reads.
fn audit_events() -> Targets {
    Targets::new()
        .with_target(crate::audit::TARGET, LevelFilter::TRACE)
        .with_target(crate::audit::READS_TARGET, LevelFilter::OFF)
}

/// The meter provider: an OTLP exporter read every `OTEL_METRIC_EXPORT_INTERVAL` (when
/// `otlp`), and the reader of the Prometheus scrapes (when `prometheus`).
fn meter_provider(
    service_name: &str,
    otlp: bool,
    prometheus: bool,
) -> Result<(SdkMeterProvider, Option<Prometheus>), TelemetryError> {
    let mut builder = SdkMeterProvider::builder().with_resource(otel::resource(service_name));
    if otlp {
        let exporter = otel::metric_exporter().map_err(|e| TelemetryError::Exporter(e.0))?;
        builder = builder.with_reader(PeriodicReader::builder(exporter).build());
    }
    let prometheus = prometheus.then(|| {
        let reader = std::sync::Arc::new(ManualReader::builder().build());
        builder = std::mem::take(&mut builder).with_reader(super::prometheus::SharedReader(
            std::sync::Arc::clone(&reader),
        ));
        Prometheus { reader }
    });
    Ok((builder.build(), prometheus))
}

#[cfg(test)]
mod tests {
    use mcp_tasks::Owner;
    use mcp_tasks_protocol::error_codes;
    use mcp_tasks_protocol::jsonrpc::ErrorObject;

    use super::*;
    use crate::audit::{self, CREATE_TASK};
    use crate::seal::SealKey;

    /// A fresh path under the temp dir, removed on drop.
    struct TempFile(PathBuf);

    impl TempFile {
        fn new() -> TempFile {
            let salt = mcp_tasks::TaskId::random().expect("random");
            TempFile(std::env::temp_dir().join(format!(
                "mcp-audit-{}-{}.log",
                std::process::id(),
                &salt.as_str()[..12]
            )))
        }
    }

    impl Drop for TempFile {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    #[test]
    fn the_audit_file_takes_the_whole_trail_but_successful_reads() {
        let file = TempFile::new();
        let layer = audit_layer(&file.0).expect("the audit file opens");
        let key = SealKey::from_bytes([5; 32]);
        let alice = Owner::new("alice");
        let refused = Err::<(), _>(ErrorObject::new(
            error_codes::INVALID_PARAMS,
            "no such task",
        ));
        // Nothing but the file listens: stderr's filter has no say in it.
        tracing::subscriber::with_default(Registry::default().with(layer), || {
            audit::record(&key, CREATE_TASK, &alice, "created-1", &Ok::<(), _>(()));
            audit::record(&key, "tasks/get", &alice, "read-2", &Ok::<(), _>(()));
            audit::record(&key, "tasks/get", &alice, "refused-3", &refused);
            audit::record(
                &key,
                "tasks/cancel",
                &alice,
                "cancelled-4",
                &Ok::<(), _>(()),
            );
            audit::record_operator(
                &key,
                "console: cancel",
                "admin",
                &alice,
                "operator-5",
                &Ok("working"),
            );
            tracing::info!(task_id = "other-6", "not the trail");
        });
        let text = std::fs::read_to_string(&file.0).expect("the audit file reads");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        for (line, id) in lines
            .iter()
            .zip(["created-1", "refused-3", "cancelled-4", "operator-5"])
        {
            assert!(line.contains(&format!("task_id=\"{id}\"")), "{id}: {text}");
            assert!(line.contains("principal=alice"), "{line}");
            assert!(!line.contains("DEBUG") && !line.contains("INFO"), "{line}");
        }
        assert!(lines[0].contains("op=\"tools/call: create task\" outcome=\"ok\""));
        assert!(
            !text.contains("read-2") && !text.contains("other-6"),
            "{text}"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&file.0)
                .expect("metadata")
                .permissions()
                .mode();
            assert_eq!(mode & 0o077, 0, "{mode:o}: the owner's only");
        }
    }

    #[test]
    fn an_audit_file_that_cannot_be_opened_is_named() {
        // A directory is no file to append to.
        let dir = std::env::temp_dir();
        let Err(e) = audit_layer::<Registry>(&dir) else {
            panic!("a directory opened as the audit file");
        };
        assert!(matches!(&e, TelemetryError::AuditFile { path, .. } if *path == dir));
        assert!(
            e.to_string()
                .starts_with(&format!("the audit file {}: ", dir.display())),
            "{e}"
        );
    }

    #[test]
    fn trace_parents_read_their_names() {
        for (name, setting) in TraceParents::ALL {
            assert_eq!(name.parse::<TraceParents>(), Ok(setting));
        }
        assert_eq!(TraceParents::default(), TraceParents::Authenticated);
        let refused = "all".parse::<TraceParents>();
        assert_eq!(
            refused,
            Err(crate::telemetry::TraceParentsError("all".to_owned()))
        );
        assert!(
            refused.is_err_and(|e| e.to_string().contains("everyone, authenticated or nobody"))
        );
    }
}
