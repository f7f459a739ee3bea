//! A round-robin HTTP load balancer for tests, in front of several server instances on
//! 127.0.0.1: each request goes to the next instance in turn (no stickiness of any
//! kind), passed on with its method, path, headers and body; the response streams back
//! (SSE included). An instance that refuses the connection (or cannot be reached in
//! [`CONNECT_TIMEOUT`]) is skipped for the next, at most once around, and left out of the
//! rotation for [`DOWN_FOR`], as a load balancer's passive health check does; when every
//! instance is marked down, each is tried anyway. Every upstream request is bounded by
//! [`UPSTREAM_TIMEOUT`]. The balancer counts, per instance, the requests it answered and
//! the `GET` event streams open through it right now (where a client's standalone stream
//! is held).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderName, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::TryStreamExt;
use tokio::net::TcpListener;

/// The longest an upstream exchange (response body included) may take.
pub const UPSTREAM_TIMEOUT: Duration = Duration::from_secs(60);

/// The longest a connection to an instance may take to open.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// How long an instance that refused a connection stays out of the rotation.
pub const DOWN_FOR: Duration = Duration::from_secs(5);

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
    /// `GET` responses still streaming, per instance.
    open_gets: Vec<Arc<AtomicUsize>>,
    /// Until when each instance is out of the rotation (a refused connection).
    down_until: Mutex<Vec<Option<Instant>>>,
    client: reqwest::Client,
}

impl Shared {
    fn is_down(&self, i: usize) -> bool {
        let down = self.down_until.lock().unwrap_or_else(|e| e.into_inner());
        down[i].is_some_and(|until| Instant::now() < until)
    }

    fn mark(&self, i: usize, up: bool) {
        let mut down = self.down_until.lock().unwrap_or_else(|e| e.into_inner());
        down[i] = (!up).then(|| Instant::now() + DOWN_FOR);
    }
}

/// Counts one open `GET` stream of an instance while it lives.
struct OpenGet(Arc<AtomicUsize>);

impl OpenGet {
    fn new(count: &Arc<AtomicUsize>) -> OpenGet {
        count.fetch_add(1, Ordering::Relaxed);
        OpenGet(Arc::clone(count))
    }
}

impl Drop for OpenGet {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
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
            open_gets: upstreams.iter().map(|_| Arc::default()).collect(),
            down_until: Mutex::new(vec![None; upstreams.len()]),
            upstreams,
            next: AtomicUsize::new(0),
            client: reqwest::Client::builder()
                .no_proxy()
                .connect_timeout(CONNECT_TIMEOUT)
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

    /// How many `GET` event streams are open through the balancer to each instance, in
    /// the order given to [`start`](Self::start).
    pub fn open_gets(&self) -> Vec<usize> {
        self.shared
            .open_gets
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
pub fn passes(name: &HeaderName) -> bool {
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
    // Instances in turn from `first`: those up, then (when every one is down) the rest.
    let order: Vec<usize> = (0..n).map(|step| (first + step) % n).collect();
    let (up, down): (Vec<usize>, Vec<usize>) = order.into_iter().partition(|&i| !shared.is_down(i));
    let tries = if up.is_empty() { down } else { up };
    for i in tries {
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
            // A dead instance: out of the rotation for a while, and the next one now.
            Err(e) if e.is_connect() => {
                shared.mark(i, false);
                continue;
            }
            Err(e) => return (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
        };
        shared.mark(i, true);
        shared.served[i].fetch_add(1, Ordering::Relaxed);
        let open = (parts.method == axum::http::Method::GET && answer.status().is_success())
            .then(|| OpenGet::new(&shared.open_gets[i]));
        let mut response = Response::builder().status(answer.status());
        for (name, value) in answer.headers() {
            if passes(name) {
                response = response.header(name, value);
            }
        }
        let stream = answer
            .bytes_stream()
            .map_err(std::io::Error::other)
            .map_ok(move |bytes| {
                // Counted as open while the body streams.
                let _ = &open;
                bytes
            });
        return response
            .body(Body::from_stream(stream))
            .unwrap_or_else(|e| (StatusCode::BAD_GATEWAY, e.to_string()).into_response());
    }
    (StatusCode::BAD_GATEWAY, "no instance answers").into_response()
}
