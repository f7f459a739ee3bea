//! [`init`]: the process's `tracing` subscriber (logs to stderr) and, when the standard
//! OpenTelemetry variables configure it, the OTLP trace export.

use mcp_tasks_protocol::otel::{self, Signal};
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::metrics::{ManualReader, PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;
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
/// `RUST_LOG` (else `default_filter`), without colour codes unless stderr is a terminal;
/// and, when the standard variables configure OTLP (`OTEL_EXPORTER_OTLP_ENDPOINT` or
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
    use super::*;

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
