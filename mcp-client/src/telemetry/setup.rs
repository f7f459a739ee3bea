//! [`init`]: the process's `tracing` subscriber (logs to stderr) and, when the standard
//! OpenTelemetry variables name an OTLP endpoint, the client's spans exported over
//! OTLP/HTTP (the setup shared with the server: `mcp_tasks_protocol::otel`).

use mcp_tasks_protocol::otel::{self, Signal};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, Registry};

use super::TARGET;

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

/// The process's telemetry as [`init`] set it up; dropping it flushes the spans still
/// buffered.
#[derive(Debug)]
pub struct Telemetry {
    traces: Option<SdkTracerProvider>,
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Some(traces) = self.traces.take() {
            // Nothing to do about an export that fails at exit.
            let _ = traces.shutdown();
        }
    }
}

/// Sets the global `tracing` subscriber: logs to stderr filtered by `RUST_LOG` (nothing
/// by default), without colour codes unless stderr is a terminal; and, when
/// `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set (and
/// neither `OTEL_SDK_DISABLED=true` nor `OTEL_TRACES_EXPORTER=none`), the client's spans
/// over OTLP/HTTP (`http/protobuf` unless `OTEL_EXPORTER_OTLP_PROTOCOL` says
/// `http/json`), as the service `OTEL_SERVICE_NAME` (else `service_name`).
pub fn init(service_name: &str) -> Result<Telemetry, TelemetryError> {
    let logs = otel::log_layer("", TARGET).map_err(|e| TelemetryError::LogFilter(e.0))?;
    let traces = otel::configured(Signal::Traces)
        .then(|| otel::tracer_provider(service_name))
        .transpose()
        .map_err(|e| TelemetryError::Exporter(e.0))?;
    let export = traces.as_ref().map(|provider| {
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("mcp-tasks-client"))
            .with_filter(Targets::new().with_target(TARGET, tracing::Level::INFO))
    });
    Registry::default()
        .with(logs)
        .with(export)
        .try_init()
        .map_err(|e| TelemetryError::Subscriber(e.to_string()))?;
    Ok(Telemetry { traces })
}
