//! OpenTelemetry setup shared by the server's and the client's `telemetry::init` (feature
//! `otel`): which signals the standard `OTEL_*` variables configure, the resource, the
//! OTLP/HTTP exporters over the workspace's reqwest, the trace provider, the log layer,
//! and the W3C trace context as `_meta` carries it ([`trace_context`],
//! [`parent_context`]). What each side exports and which spans it makes stay in its own
//! crate.
//!
//! The exporters and the SDK read the rest of the standard configuration themselves:
//! `OTEL_EXPORTER_OTLP_PROTOCOL` (`http/protobuf`, the default here as in the
//! specification, or `http/json`; gRPC is not built in), the per-signal variables,
//! `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES`,
//! `OTEL_TRACES_SAMPLER` and `_ARG`, `OTEL_BSP_*`, `OTEL_METRIC_EXPORT_INTERVAL`.

use std::io::IsTerminal;
use std::time::Duration;

use opentelemetry_otlp::{
    MetricExporter, Protocol, SpanExporter, WithExportConfig, WithHttpConfig,
};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::filter::EnvFilter;
use tracing_subscriber::{Layer, Registry};

/// An OTLP exporter that could not be built (a bad endpoint, protocol or header value),
/// or a log filter (`RUST_LOG`) that does not parse: what went wrong, in words.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct OtelError(pub String);

/// A signal the `OTEL_*` variables configure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// Spans.
    Traces,
    /// Metrics.
    Metrics,
}

impl Signal {
    /// The signal's part of the variable names (`TRACES`, `METRICS`).
    fn var(self) -> &'static str {
        match self {
            Signal::Traces => "TRACES",
            Signal::Metrics => "METRICS",
        }
    }
}

/// Whether the variable `name` is set to something.
fn set(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| !v.is_empty())
}

/// Whether the environment asks for `signal` over OTLP: an OTLP endpoint is named (for
/// all signals or for this one), `OTEL_{SIGNAL}_EXPORTER` is not `none` and
/// `OTEL_SDK_DISABLED` is not `true`.
pub fn configured(signal: Signal) -> bool {
    let s = signal.var();
    let disabled = std::env::var("OTEL_SDK_DISABLED").is_ok_and(|v| v.eq_ignore_ascii_case("true"));
    let exporter_none = std::env::var(format!("OTEL_{s}_EXPORTER"))
        .is_ok_and(|v| v.trim().eq_ignore_ascii_case("none"));
    !disabled
        && !exporter_none
        && (set("OTEL_EXPORTER_OTLP_ENDPOINT") || set(&format!("OTEL_EXPORTER_OTLP_{s}_ENDPOINT")))
}

/// The resource: the SDK's (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, the SDK's
/// own attributes), with `service_name` when the environment names no service.
pub fn resource(service_name: &str) -> Resource {
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

/// Whether the environment names the protocol of `signal`'s export; when it does not,
/// the exporters get the specification's default (`http/protobuf`), not their own (JSON
/// when JSON is built in).
fn protocol_named(signal: Signal) -> bool {
    set("OTEL_EXPORTER_OTLP_PROTOCOL")
        || set(&format!("OTEL_EXPORTER_OTLP_{}_PROTOCOL", signal.var()))
}

/// The OTLP/HTTP span exporter.
pub fn span_exporter() -> Result<SpanExporter, OtelError> {
    let mut exporter = SpanExporter::builder()
        .with_http()
        .with_http_client(BlockingClient::new()?)
        .with_timeout(export_timeout());
    if !protocol_named(Signal::Traces) {
        exporter = exporter.with_protocol(Protocol::HttpBinary);
    }
    exporter.build().map_err(|e| OtelError(e.to_string()))
}

/// The OTLP/HTTP metric exporter.
pub fn metric_exporter() -> Result<MetricExporter, OtelError> {
    let mut exporter = MetricExporter::builder()
        .with_http()
        .with_http_client(BlockingClient::new()?)
        .with_timeout(export_timeout());
    if !protocol_named(Signal::Metrics) {
        exporter = exporter.with_protocol(Protocol::HttpBinary);
    }
    exporter.build().map_err(|e| OtelError(e.to_string()))
}

/// The trace provider: a batch of spans exported over OTLP/HTTP, as the service
/// `service_name` unless the environment names one.
pub fn tracer_provider(service_name: &str) -> Result<SdkTracerProvider, OtelError> {
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(span_exporter()?)
        .with_resource(resource(service_name))
        .build())
}

/// The log layer: to stderr, filtered by `RUST_LOG` (else `default_filter`, e.g. `info`,
/// or nothing when empty) with the spans of `otel_target` left out (they are for
/// OpenTelemetry), without colour codes unless stderr is a terminal.
pub fn log_layer(
    default_filter: &str,
    otel_target: &str,
) -> Result<impl Layer<Registry> + Send + Sync + 'static, OtelError> {
    let filter = match std::env::var("RUST_LOG") {
        Ok(v) if !v.is_empty() => EnvFilter::try_new(v),
        _ => EnvFilter::try_new(default_filter),
    }
    .map_err(|e| OtelError(e.to_string()))?
    .add_directive(
        format!("{otel_target}=off")
            .parse()
            .map_err(|e: tracing_subscriber::filter::ParseError| OtelError(e.to_string()))?,
    );
    Ok(tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_filter(filter))
}

/// `OTEL_EXPORTER_OTLP_TIMEOUT` (milliseconds), else the specification's 10 s.
pub fn export_timeout() -> Duration {
    std::env::var("OTEL_EXPORTER_OTLP_TIMEOUT")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(Duration::from_secs(10), Duration::from_millis)
}

/// OTLP over the workspace's reqwest (blocking: the SDK exports from its own threads).
#[derive(Debug, Clone)]
struct BlockingClient(reqwest::blocking::Client);

impl BlockingClient {
    fn new() -> Result<BlockingClient, OtelError> {
        // A blocking client owns a runtime of its own: built off the caller's (async)
        // thread.
        let timeout = export_timeout();
        std::thread::spawn(move || {
            reqwest::blocking::Client::builder()
                .timeout(timeout)
                .build()
        })
        .join()
        .map_err(|_| OtelError("building the HTTP client panicked".into()))?
        .map(BlockingClient)
        .map_err(|e| OtelError(e.to_string()))
    }
}

#[async_trait::async_trait]
impl opentelemetry_http::HttpClient for BlockingClient {
    async fn send_bytes(
        &self,
        request: opentelemetry_http::Request<bytes::Bytes>,
    ) -> Result<opentelemetry_http::Response<bytes::Bytes>, opentelemetry_http::HttpError> {
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
        let mut reply = opentelemetry_http::Response::builder()
            .status(status)
            .body(body)?;
        *reply.headers_mut() = headers;
        Ok(reply)
    }
}

/// The W3C trace context of `cx` (`traceparent`, and `tracestate` when not empty), as
/// `_meta` carries it (SEP-414); `None` when `cx` has no valid span.
pub fn trace_context(cx: &opentelemetry::Context) -> Option<(String, Option<String>)> {
    use opentelemetry::propagation::TextMapPropagator;
    use opentelemetry::trace::TraceContextExt;
    if !cx.span().span_context().is_valid() {
        return None;
    }
    let mut carrier = Carrier::default();
    opentelemetry_sdk::propagation::TraceContextPropagator::new().inject_context(cx, &mut carrier);
    let traceparent = carrier.traceparent?;
    Some((traceparent, carrier.tracestate.filter(|s| !s.is_empty())))
}

/// The context a `traceparent` (and `tracestate`) names; `None` when it names none
/// validly.
pub fn parent_context(
    traceparent: Option<&str>,
    tracestate: Option<&str>,
) -> Option<opentelemetry::Context> {
    use opentelemetry::propagation::TextMapPropagator;
    use opentelemetry::trace::TraceContextExt;
    let carrier = Carrier {
        traceparent: Some(traceparent?.to_owned()),
        tracestate: tracestate.map(str::to_owned),
    };
    let cx = opentelemetry_sdk::propagation::TraceContextPropagator::new().extract(&carrier);
    cx.span().span_context().is_valid().then_some(cx)
}

const TRACEPARENT: &str = "traceparent";
const TRACESTATE: &str = "tracestate";

/// A traceparent/tracestate pair as the propagator reads and writes it.
#[derive(Default)]
struct Carrier {
    traceparent: Option<String>,
    tracestate: Option<String>,
}

impl opentelemetry::propagation::Injector for Carrier {
    fn set(&mut self, key: &str, value: String) {
        match key {
            TRACEPARENT => self.traceparent = Some(value),
            TRACESTATE => self.tracestate = Some(value),
            _ => {}
        }
    }
}

impl opentelemetry::propagation::Extractor for Carrier {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            TRACEPARENT => self.traceparent.as_deref(),
            TRACESTATE => self.tracestate.as_deref(),
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        vec![TRACEPARENT, TRACESTATE]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_context_read_is_written_back_unchanged() {
        let parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let cx = parent_context(Some(parent), Some("k=v")).expect("a valid parent");
        assert_eq!(
            trace_context(&cx),
            Some((parent.to_owned(), Some("k=v".to_owned())))
        );
        assert!(parent_context(Some("00-bad"), None).is_none());
        assert!(parent_context(None, Some("k=v")).is_none());
        assert!(trace_context(&opentelemetry::Context::new()).is_none());
    }
}
