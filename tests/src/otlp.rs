//! An OTLP/HTTP receiver for the telemetry tests: `POST /v1/traces` and `/v1/metrics`
//! bodies decoded from protobuf (the `opentelemetry-proto` messages) and kept, on
//! `127.0.0.1:0`. What a collector would see, without one.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::post;
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;

/// How long a test waits for spans to be exported.
pub const EXPORT_WAIT: Duration = Duration::from_secs(30);

/// One span as received, with the `service.name` of the resource that sent it.
#[derive(Debug, Clone)]
pub struct ReceivedSpan {
    /// The resource's `service.name`.
    pub service: String,
    /// The span.
    pub span: Span,
}

impl ReceivedSpan {
    /// The value of attribute `key`, as text (strings as they are, numbers and booleans
    /// written out).
    pub fn attr(&self, key: &str) -> Option<String> {
        attr(&self.span.attributes, key)
    }

    /// The trace id, in lowercase hex.
    pub fn trace_id(&self) -> String {
        hex(&self.span.trace_id)
    }

    /// The span id, in lowercase hex.
    pub fn span_id(&self) -> String {
        hex(&self.span.span_id)
    }

    /// The parent span id, in lowercase hex (empty for a root span).
    pub fn parent_span_id(&self) -> String {
        hex(&self.span.parent_span_id)
    }

    /// The values of attribute `key` on the span's events named `name`, in order (an
    /// event without it gives an empty string).
    pub fn event_attrs(&self, name: &str, key: &str) -> Vec<String> {
        self.span
            .events
            .iter()
            .filter(|e| e.name == name)
            .map(|e| attr(&e.attributes, key).unwrap_or_default())
            .collect()
    }

    /// The status code (0 unset, 1 ok, 2 error).
    pub fn status_code(&self) -> i32 {
        self.span.status.as_ref().map_or(0, |s| s.code)
    }

    /// The span's links: (trace id, span id) of each, in lowercase hex.
    pub fn links(&self) -> Vec<(String, String)> {
        self.span
            .links
            .iter()
            .map(|l| (hex(&l.trace_id), hex(&l.span_id)))
            .collect()
    }

    /// Every text the span carries, as (where, text): its name, its status message, its
    /// attributes' keys and values, its events' names, keys and values, its links' trace
    /// states and attributes' values.
    pub fn texts(&self) -> Vec<(String, String)> {
        let span = &self.span;
        let mut texts = vec![("name".to_owned(), span.name.clone())];
        if let Some(status) = &span.status {
            texts.push(("status".to_owned(), status.message.clone()));
        }
        let mut of = |place: &str, attributes: &[KeyValue]| {
            for kv in attributes {
                texts.push((format!("{place} key"), kv.key.clone()));
                if let Some(value) = kv.value.as_ref().and_then(text) {
                    texts.push((format!("{place} {}", kv.key), value));
                }
            }
        };
        of("attribute", &span.attributes);
        for event in &span.events {
            of(&format!("event {}", event.name), &event.attributes);
        }
        for link in &span.links {
            of("link", &link.attributes);
        }
        for event in &span.events {
            texts.push(("event name".to_owned(), event.name.clone()));
        }
        for link in &span.links {
            texts.push(("link trace state".to_owned(), link.trace_state.clone()));
        }
        texts
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn text(value: &AnyValue) -> Option<String> {
    match value.value.as_ref()? {
        any_value::Value::StringValue(s) => Some(s.clone()),
        any_value::Value::IntValue(i) => Some(i.to_string()),
        any_value::Value::BoolValue(b) => Some(b.to_string()),
        any_value::Value::DoubleValue(d) => Some(d.to_string()),
        _ => None,
    }
}

fn attr(attributes: &[KeyValue], key: &str) -> Option<String> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(text)
}

/// The receiver: its endpoint for `OTEL_EXPORTER_OTLP_ENDPOINT`, and what it received.
#[derive(Debug)]
pub struct OtlpReceiver {
    /// `http://127.0.0.1:PORT` (the exporters append `/v1/traces`).
    pub endpoint: String,
    spans: Arc<Mutex<Vec<ReceivedSpan>>>,
    metrics: Arc<Mutex<Vec<String>>>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for OtlpReceiver {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// An OTLP/HTTP request body: protobuf (415 otherwise) that decodes as `M` (400
/// otherwise).
fn decode<M: Message + Default>(headers: &HeaderMap, body: Bytes) -> Result<M, StatusCode> {
    let protobuf = headers
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes() == b"application/x-protobuf");
    if !protobuf {
        return Err(StatusCode::UNSUPPORTED_MEDIA_TYPE);
    }
    M::decode(body).map_err(|_| StatusCode::BAD_REQUEST)
}

async fn traces(
    State(spans): State<Arc<Mutex<Vec<ReceivedSpan>>>>,
    headers: HeaderMap,
    body: Bytes,
) -> impl IntoResponse {
    let request: ExportTraceServiceRequest = match decode(&headers, body) {
        Ok(r) => r,
        Err(refused) => return (refused, Vec::new()),
    };
    let mut received = spans.lock().expect("spans");
    for resource in request.resource_spans {
        let service = resource
            .resource
            .as_ref()
            .and_then(|r| attr(&r.attributes, "service.name"))
            .unwrap_or_default();
        for scope in resource.scope_spans {
            for span in scope.spans {
                received.push(ReceivedSpan {
                    service: service.clone(),
                    span,
                });
            }
        }
    }
    (
        StatusCode::OK,
        ExportTraceServiceResponse::default().encode_to_vec(),
    )
}

async fn metrics(
    State(names): State<Arc<Mutex<Vec<String>>>>,
    headers: HeaderMap,
    body: Bytes,
) -> impl IntoResponse {
    let request: ExportMetricsServiceRequest = match decode(&headers, body) {
        Ok(r) => r,
        Err(refused) => return (refused, Vec::new()),
    };
    let mut received = names.lock().expect("metric names");
    for resource in request.resource_metrics {
        for scope in resource.scope_metrics {
            received.extend(scope.metrics.into_iter().map(|m| m.name));
        }
    }
    (
        StatusCode::OK,
        ExportMetricsServiceResponse::default().encode_to_vec(),
    )
}

impl OtlpReceiver {
    /// Listens on `127.0.0.1:0`.
    pub async fn start() -> OtlpReceiver {
        let spans = Arc::new(Mutex::new(Vec::new()));
        let names = Arc::new(Mutex::new(Vec::new()));
        let app = Router::new()
            .route("/v1/traces", post(traces))
            .with_state(Arc::clone(&spans))
            .merge(
                Router::new()
                    .route("/v1/metrics", post(metrics))
                    .with_state(Arc::clone(&names)),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the OTLP receiver");
        let addr = listener.local_addr().expect("its address");
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        OtlpReceiver {
            endpoint: format!("http://{addr}"),
            spans,
            metrics: names,
            server,
        }
    }

    /// Waits (at most [`EXPORT_WAIT`]) until a metric named `name` was received.
    pub async fn wait_for_metric(&self, name: &str) {
        let found = tokio::time::timeout(EXPORT_WAIT, async {
            loop {
                if self
                    .metrics
                    .lock()
                    .expect("metric names")
                    .iter()
                    .any(|n| n == name)
                {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await;
        if found.is_err() {
            let seen = self.metrics.lock().expect("metric names").clone();
            panic!("no metric {name} within {EXPORT_WAIT:?}; received: {seen:?}");
        }
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        self.spans.lock().expect("spans").clone()
    }

    /// The first span received that `wanted` accepts, waiting for it at most
    /// [`EXPORT_WAIT`]; panics naming `what` and listing what came otherwise.
    pub async fn wait_for(
        &self,
        what: &str,
        wanted: impl Fn(&ReceivedSpan) -> bool,
    ) -> ReceivedSpan {
        let found = tokio::time::timeout(EXPORT_WAIT, async {
            loop {
                if let Some(span) = self.spans().into_iter().find(|s| wanted(s)) {
                    return span;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await;
        found.unwrap_or_else(|_| {
            let seen: Vec<String> = self
                .spans()
                .iter()
                .map(|s| format!("{} {} trace {}", s.service, s.span.name, s.trace_id()))
                .collect();
            panic!("no span {what} within {EXPORT_WAIT:?}; received: {seen:#?}")
        })
    }
}
