//! `/metrics` in the Prometheus text format (0.0.4), rendered at each scrape from the
//! OpenTelemetry SDK's own collection (a manual reader): one set of instruments for
//! OTLP and Prometheus alike. Names follow the OpenTelemetry-to-Prometheus mapping:
//! dots become underscores, the unit `s` adds `_seconds`, a counter adds `_total`; a
//! histogram is `_bucket{le=...}`, `_sum` and `_count`.

use std::fmt::Write as _;
use std::sync::{Arc, Weak};
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, Metric, MetricData, ResourceMetrics};
use opentelemetry_sdk::metrics::reader::MetricReader;
use opentelemetry_sdk::metrics::{InstrumentKind, ManualReader, Pipeline, Temporality};

/// The reader the meter provider owns, sharing its [`ManualReader`] with the scrapes.
#[derive(Debug, Clone)]
pub(super) struct SharedReader(pub(super) Arc<ManualReader>);

impl MetricReader for SharedReader {
    fn register_pipeline(&self, pipeline: Weak<Pipeline>) {
        self.0.register_pipeline(pipeline);
    }

    fn collect(&self, rm: &mut ResourceMetrics) -> OTelSdkResult {
        self.0.collect(rm)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.0.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }

    fn temporality(&self, kind: InstrumentKind) -> Temporality {
        self.0.temporality(kind)
    }
}

/// What serves `/metrics`: renders the process's metrics on demand. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Prometheus {
    pub(super) reader: Arc<ManualReader>,
}

impl Prometheus {
    /// The metrics as they stand, in the Prometheus text format.
    pub fn render(&self) -> String {
        let mut collected = ResourceMetrics::default();
        if self.reader.collect(&mut collected).is_err() {
            return String::new();
        }
        let mut out = String::new();
        for scope in collected.scope_metrics() {
            for metric in scope.metrics() {
                render_metric(&mut out, metric);
            }
        }
        out
    }

    /// Serves `GET /metrics` on `listener` until `stop` completes.
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        stop: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let app = axum::Router::new().route(
            "/metrics",
            axum::routing::get(move || {
                let text = self.render();
                async move {
                    (
                        [(
                            axum::http::header::CONTENT_TYPE,
                            "text/plain; version=0.0.4; charset=utf-8",
                        )],
                        text,
                    )
                }
            }),
        );
        axum::serve(listener, app)
            .with_graceful_shutdown(stop)
            .await
    }
}

/// `name` in Prometheus' alphabet: `[a-zA-Z0-9_:]`, the rest `_`.
fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == ':' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn base_name(metric: &Metric) -> String {
    let mut name = sanitize(metric.name());
    match metric.unit() {
        "s" => name.push_str("_seconds"),
        "By" => name.push_str("_bytes"),
        // Annotations (`{task}`) and dimensionless units add nothing.
        _ => {}
    }
    name
}

fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// `{k="v",...}` of `attributes` (sorted by name) and `extra` (last), or nothing.
fn labels<'a>(
    attributes: impl Iterator<Item = &'a KeyValue>,
    extra: Option<(&str, &str)>,
) -> String {
    let mut pairs: Vec<(String, String)> = attributes
        .map(|kv| (sanitize(kv.key.as_str()), kv.value.as_str().into_owned()))
        .collect();
    pairs.sort();
    if let Some((k, v)) = extra {
        pairs.push((k.to_owned(), v.to_owned()));
    }
    if pairs.is_empty() {
        return String::new();
    }
    let inner: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect();
    format!("{{{}}}", inner.join(","))
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {}", help.replace('\n', " "));
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn render_metric(out: &mut String, metric: &Metric) {
    match metric.data() {
        AggregatedMetrics::F64(data) => render_data(out, metric, data, |v| *v),
        AggregatedMetrics::U64(data) => render_data(out, metric, data, |v| *v as f64),
        AggregatedMetrics::I64(data) => render_data(out, metric, data, |v| *v as f64),
    }
}

fn render_data<T: Copy>(
    out: &mut String,
    metric: &Metric,
    data: &MetricData<T>,
    value: impl Fn(&T) -> f64,
) {
    let name = base_name(metric);
    match data {
        MetricData::Gauge(gauge) => {
            header(out, &name, "gauge", metric.description());
            for point in gauge.data_points() {
                let v = value(&point.value());
                let _ = writeln!(out, "{name}{} {v}", labels(point.attributes(), None));
            }
        }
        MetricData::Sum(sum) => {
            let (name, kind) = if sum.is_monotonic() {
                (format!("{name}_total"), "counter")
            } else {
                (name, "gauge")
            };
            header(out, &name, kind, metric.description());
            for point in sum.data_points() {
                let v = value(&point.value());
                let _ = writeln!(out, "{name}{} {v}", labels(point.attributes(), None));
            }
        }
        MetricData::Histogram(histogram) => {
            header(out, &name, "histogram", metric.description());
            for point in histogram.data_points() {
                let mut cumulative = 0u64;
                let bounds: Vec<f64> = point.bounds().collect();
                for (i, count) in point.bucket_counts().enumerate() {
                    cumulative += count;
                    let le = bounds
                        .get(i)
                        .map_or_else(|| "+Inf".to_owned(), f64::to_string);
                    let _ = writeln!(
                        out,
                        "{name}_bucket{} {cumulative}",
                        labels(point.attributes(), Some(("le", &le)))
                    );
                }
                let plain = labels(point.attributes(), None);
                let _ = writeln!(out, "{name}_sum{plain} {}", value(&point.sum()));
                let _ = writeln!(out, "{name}_count{plain} {}", point.count());
            }
        }
        // Not made by this crate's instruments.
        MetricData::ExponentialHistogram(_) => {}
    }
}
