//! [`init`]: the process's `tracing` subscriber (logs to stderr) and, when the standard
//! OpenTelemetry variables configure it, the OTLP trace export.

use std::io::IsTerminal;

use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{
    MetricExporter, Protocol, SpanExporter, WithExportConfig, WithHttpConfig,
};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{ManualReader, PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::filter::{EnvFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, Registry};

use super::prometheus::Prometheus;
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

/// Whether a variable is set to something.
fn set(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| !v.is_empty())
}

/// Whether the environment asks for traces over OTLP: an OTLP endpoint is named (for all
/// signals or for traces), `OTEL_TRACES_EXPORTER` is not `none` and `OTEL_SDK_DISABLED`
/// is not `true`.
fn traces_configured() -> bool {
    otlp_configured("TRACES")
}

/// The same for metrics (`OTEL_METRICS_EXPORTER`, `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`).
fn metrics_configured() -> bool {
    otlp_configured("METRICS")
}

fn otlp_configured(signal: &str) -> bool {
    let disabled = std::env::var("OTEL_SDK_DISABLED").is_ok_and(|v| v.eq_ignore_ascii_case("true"));
    let exporter_none = std::env::var(format!("OTEL_{signal}_EXPORTER"))
        .is_ok_and(|v| v.trim().eq_ignore_ascii_case("none"));
    !disabled
        && !exporter_none
        && (set("OTEL_EXPORTER_OTLP_ENDPOINT")
            || set(&format!("OTEL_EXPORTER_OTLP_{signal}_ENDPOINT")))
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
    let filter = match std::env::var("RUST_LOG") {
        Ok(v) if !v.is_empty() => EnvFilter::try_new(v),
        _ => EnvFilter::try_new(&config.default_log_filter),
    }
    .map_err(|e| TelemetryError::LogFilter(e.to_string()))?
    // The spans of this module are for OpenTelemetry, not the log.
    .add_directive(format!("{TARGET}=off").parse().map_err(
        |e: tracing_subscriber::filter::ParseError| TelemetryError::LogFilter(e.to_string()),
    )?);
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_filter(filter);
    let traces = traces_configured()
        .then(|| tracer_provider(&config.service_name))
        .transpose()?;
    let otlp_metrics = metrics_configured();
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
    let mut builder = SdkMeterProvider::builder().with_resource(resource(service_name));
    if otlp {
        let mut exporter = MetricExporter::builder()
            .with_http()
            .with_http_client(http::BlockingClient::new()?)
            .with_timeout(http::export_timeout());
        if !set("OTEL_EXPORTER_OTLP_PROTOCOL") && !set("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL") {
            exporter = exporter.with_protocol(Protocol::HttpBinary);
        }
        let exporter = exporter
            .build()
            .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
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

/// The resource: the SDK's (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, the SDK's
/// own attributes), with `service_name` when the environment names no service.
fn resource(service_name: &str) -> Resource {
    let named = set("OTEL_SERVICE_NAME")
        || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|v| {
            v.split(',')
                .any(|kv| kv.trim().starts_with("service.name="))
        });
    let builder = Resource::builder();
    if named {
        builder.build()
    } else {
        builder.with_service_name(service_name.to_owned()).build()
    }
}

fn tracer_provider(service_name: &str) -> Result<SdkTracerProvider, TelemetryError> {
    let mut exporter = SpanExporter::builder()
        .with_http()
        .with_http_client(http::BlockingClient::new()?)
        .with_timeout(http::export_timeout());
    // The exporter's own default with JSON built in is JSON; the specification's is
    // protobuf. A protocol given in the environment is the exporter's to read.
    if !set("OTEL_EXPORTER_OTLP_PROTOCOL") && !set("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") {
        exporter = exporter.with_protocol(Protocol::HttpBinary);
    }
    let exporter = exporter
        .build()
        .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource(service_name))
        .build())
}

/// OTLP over the workspace's reqwest (blocking: the SDK exports from its own threads).
mod http {
    use std::time::Duration;

    use bytes::Bytes;
    use opentelemetry_http::{HttpError, Request, Response};

    use super::TelemetryError;

    /// `OTEL_EXPORTER_OTLP_TIMEOUT` (milliseconds), else the specification's 10 s.
    pub(super) fn export_timeout() -> Duration {
        std::env::var("OTEL_EXPORTER_OTLP_TIMEOUT")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map_or(Duration::from_secs(10), Duration::from_millis)
    }

    #[derive(Debug, Clone)]
    pub(super) struct BlockingClient(reqwest::blocking::Client);

    impl BlockingClient {
        pub(super) fn new() -> Result<BlockingClient, TelemetryError> {
            // A blocking client owns a runtime of its own: built off the caller's (async)
            // thread.
            let timeout = export_timeout();
            std::thread::spawn(move || {
                reqwest::blocking::Client::builder()
                    .timeout(timeout)
                    .build()
            })
            .join()
            .map_err(|_| TelemetryError::Exporter("building the HTTP client panicked".into()))?
            .map(BlockingClient)
            .map_err(|e| TelemetryError::Exporter(e.to_string()))
        }
    }

    #[async_trait::async_trait]
    impl opentelemetry_http::HttpClient for BlockingClient {
        async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
            let (parts, body) = request.into_parts();
            let mut sent = self
                .0
                .request(parts.method, parts.uri.to_string())
                .headers(parts.headers)
                .body(body.to_vec());
            if let Some(timeout) = parts.extensions.get::<Duration>() {
                sent = sent.timeout(*timeout);
            }
            let response = sent.send()?;
            let status = response.status();
            let headers = response.headers().clone();
            let body = response.bytes()?;
            let mut reply = Response::builder().status(status).body(body)?;
            *reply.headers_mut() = headers;
            Ok(reply)
        }
    }
}
