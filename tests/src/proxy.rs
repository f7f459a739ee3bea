//! A round-robin HTTP load balancer for tests, in front of several server instances on
//! 127.0.0.1: each request goes to the next instance in turn (no stickiness of any
//! kind), passed on with its method, path, headers and body; the response streams back
//! (SSE included). An instance that refuses the connection is skipped for the next, as a
//! load balancer's health check would, at most once around. Every upstream request is
//! bounded by [`UPSTREAM_TIMEOUT`].

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderName, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::TryStreamExt;
use tokio::net::TcpListener;

/// The longest an upstream exchange (response body included) may take.
pub const UPSTREAM_TIMEOUT: Duration = Duration::from_secs(60);

/// The balancer: its URL, and how many requests each instance served.
#[derive(Debug)]
pub struct RoundRobinProxy {
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

#[derive(Debug)]
struct Shared {
    upstreams: Vec<String>,
    next: AtomicUsize,
    served: Vec<AtomicUsize>,
    client: reqwest::Client,
}

impl RoundRobinProxy {
    /// A balancer on a free 127.0.0.1 port in front of `upstreams` (MCP endpoint URLs,
    /// all with the same path).
    pub async fn start(upstreams: Vec<String>) -> RoundRobinProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let addr = listener.local_addr().expect("proxy address");
        let path = upstreams
            .first()
            .and_then(|u| u.split_once("//"))
            .and_then(|(_, rest)| rest.find('/').map(|i| rest[i..].to_owned()))
            .unwrap_or_else(|| "/mcp".to_owned());
        let shared = Arc::new(Shared {
            served: upstreams.iter().map(|_| AtomicUsize::new(0)).collect(),
            upstreams,
            next: AtomicUsize::new(0),
            client: reqwest::Client::builder()
                .timeout(UPSTREAM_TIMEOUT)
                .build()
                .expect("proxy client"),
        });
        let app = axum::Router::new()
            .fallback(forward)
            .with_state(Arc::clone(&shared));
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        RoundRobinProxy {
            url: format!("http://{addr}{path}"),
            shared,
            server,
        }
    }

    /// How many requests each instance answered, in the order given to
    /// [`start`](Self::start).
    pub fn served(&self) -> Vec<usize> {
        self.shared
            .served
            .iter()
            .map(|n| n.load(Ordering::Relaxed))
            .collect()
    }
}

impl Drop for RoundRobinProxy {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// Hop-by-hop headers a proxy does not pass on (RFC 9110 7.6.1), and `host`.
fn passes(name: &HeaderName) -> bool {
    !matches!(
        name.as_str(),
        "connection"
            | "keep-alive"
            | "proxy-connection"
            | "transfer-encoding"
            | "te"
            | "trailer"
            | "upgrade"
            | "host"
            | "content-length"
    )
}

async fn forward(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, 16 << 20).await else {
        return (StatusCode::BAD_REQUEST, "body too large").into_response();
    };
    let path = parts
        .uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    let n = shared.upstreams.len();
    let first = shared.next.fetch_add(1, Ordering::Relaxed);
    for step in 0..n {
        let i = (first + step) % n;
        let base = &shared.upstreams[i];
        let origin = base
            .split_once("//")
            .map(|(scheme, rest)| format!("{scheme}//{}", rest.split('/').next().unwrap_or("")))
            .unwrap_or_default();
        let mut upstream = shared
            .client
            .request(parts.method.clone(), format!("{origin}{path}"))
            .body(body.clone());
        for (name, value) in &parts.headers {
            if passes(name) {
                upstream = upstream.header(name, value);
            }
        }
        let answer = match upstream.send().await {
            Ok(answer) => answer,
            // A dead instance: the next one, as a health-checking balancer would.
            Err(e) if e.is_connect() => continue,
            Err(e) => return (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
        };
        shared.served[i].fetch_add(1, Ordering::Relaxed);
        let mut response = Response::builder().status(answer.status());
        for (name, value) in answer.headers() {
            if passes(name) {
                response = response.header(name, value);
            }
        }
        let stream = answer.bytes_stream().map_err(std::io::Error::other);
        return response
            .body(Body::from_stream(stream))
            .unwrap_or_else(|e| (StatusCode::BAD_GATEWAY, e.to_string()).into_response());
    }
    (StatusCode::BAD_GATEWAY, "no instance answers").into_response()
}
