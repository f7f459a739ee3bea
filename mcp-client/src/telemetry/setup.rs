//! [`init`]: the process's `tracing` subscriber (logs to stderr) and, when the standard
//! OpenTelemetry variables name an OTLP endpoint, the client's spans exported over
//! OTLP/HTTP.

use std::io::IsTerminal;
use std::time::Duration;

use bytes::Bytes;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_http::{HttpError, Request, Response};
use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::filter::{EnvFilter, Targets};
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

fn set(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| !v.is_empty())
}

/// Sets the global `tracing` subscriber: logs to stderr filtered by `RUST_LOG` (nothing
/// by default), without colour codes unless stderr is a terminal; and, when
/// `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set (and
/// neither `OTEL_SDK_DISABLED=true` nor `OTEL_TRACES_EXPORTER=none`), the client's spans
/// over OTLP/HTTP (`http/protobuf` unless `OTEL_EXPORTER_OTLP_PROTOCOL` says
/// `http/json`), as the service `OTEL_SERVICE_NAME` (else `service_name`).
pub fn init(service_name: &str) -> Result<Telemetry, TelemetryError> {
    let filter =
        EnvFilter::from_default_env().add_directive(format!("{TARGET}=off").parse().map_err(
            |e: tracing_subscriber::filter::ParseError| TelemetryError::Subscriber(e.to_string()),
        )?);
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_filter(filter);
    let disabled = std::env::var("OTEL_SDK_DISABLED").is_ok_and(|v| v.eq_ignore_ascii_case("true"))
        || std::env::var("OTEL_TRACES_EXPORTER")
            .is_ok_and(|v| v.trim().eq_ignore_ascii_case("none"));
    let configured =
        set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
    let traces = (configured && !disabled)
        .then(|| tracer_provider(service_name))
        .transpose()?;
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

fn tracer_provider(service_name: &str) -> Result<SdkTracerProvider, TelemetryError> {
    let mut exporter = SpanExporter::builder()
        .with_http()
        .with_http_client(BlockingClient::new()?)
        .with_timeout(export_timeout());
    // The specification's default, not the exporter's (JSON when JSON is built in).
    if !set("OTEL_EXPORTER_OTLP_PROTOCOL") && !set("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") {
        exporter = exporter.with_protocol(Protocol::HttpBinary);
    }
    let exporter = exporter
        .build()
        .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
    let named = set("OTEL_SERVICE_NAME")
        || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|v| {
            v.split(',')
                .any(|kv| kv.trim().starts_with("service.name="))
        });
    let resource = if named {
        Resource::builder().build()
    } else {
        Resource::builder()
            .with_service_name(service_name.to_owned())
            .build()
    };
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build())
}

/// `OTEL_EXPORTER_OTLP_TIMEOUT` (milliseconds), else the specification's 10 s.
fn export_timeout() -> Duration {
    std::env::var("OTEL_EXPORTER_OTLP_TIMEOUT")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(Duration::from_secs(10), Duration::from_millis)
}

/// OTLP over the workspace's reqwest (blocking: the SDK exports from its own thread).
#[derive(Debug, Clone)]
struct BlockingClient(reqwest::blocking::Client);

impl BlockingClient {
    fn new() -> Result<BlockingClient, TelemetryError> {
        // A blocking client owns a runtime of its own: built off the caller's thread.
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
        let response = self
            .0
            .request(parts.method, parts.uri.to_string())
            .headers(parts.headers)
            .body(body.to_vec())
            .send()?;
        let status = response.status();
        let headers = response.headers().clone();
        let mut reply = Response::builder().status(status).body(response.bytes()?)?;
        *reply.headers_mut() = headers;
        Ok(reply)
    }
}
