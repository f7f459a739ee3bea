//! The engine over the in-process duplex: traffic in both directions at once, a request
//! made from inside a handler, cancellation, jsonrpsee middleware and `ClientT`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use jsonrpsee::core::middleware::{Batch, Notification, RpcServiceBuilder, RpcServiceT};
use jsonrpsee::core::server::MethodResponse;
use jsonrpsee::proc_macros::rpc;
use jsonrpsee::types::{ErrorObject, Request};

use mcp_tasks_protocol::engine::{Connection, EndpointBuilder, Peer, PeerError};
use mcp_tests::{
    Ask, Echo, Observed, Slow, SlowParams, Storm, StormParams, Text, client_methods,
    fixture_methods,
};
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(20);

/// A server endpoint (fixture methods) and a client endpoint (echo + elicitation) joined
/// by the in-memory duplex; returns the client's peer (to call the server) and the
/// server's peer (to call the client).
///
/// The in-flight limit is raised above the 1,000 concurrent requests of the interleaving
/// test (the default, 256, is tested on its own below).
fn pair(observed: Arc<Observed>) -> (Peer, Peer) {
    let server = EndpointBuilder::new(fixture_methods(observed))
        .max_inflight_requests(4096)
        .build();
    let client = EndpointBuilder::new(client_methods())
        .max_inflight_requests(4096)
        .build();
    let (server_end, client_end) = Connection::memory();
    let (server_peer, _) = server.serve(server_end);
    let (client_peer, _) = client.serve(client_end);
    (client_peer, server_peer)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousand_interleaved_requests_in_both_directions() {
    let (client, server) = pair(Arc::default());
    const N: usize = 1000;
    let from_client = async {
        let calls = (0..N).map(|i| {
            let client = client.clone();
            async move {
                let text = format!("c{i}");
                client
                    .request::<Echo>(&Text { text: text.clone() })
                    .await
                    .map(|t| t.text == text)
            }
        });
        futures::future::join_all(calls).await
    };
    let from_server = async {
        let calls = (0..N).map(|i| {
            let server = server.clone();
            async move {
                let text = format!("s{i}");
                server
                    .request::<Echo>(&Text { text: text.clone() })
                    .await
                    .map(|t| t.text == text)
            }
        });
        futures::future::join_all(calls).await
    };
    // And a server handler that itself fans out requests to the client mid-flight.
    let storm = client.request::<Storm>(&StormParams { count: 200 });
    let (a, b, storm) = tokio::time::timeout(TIMEOUT, async {
        tokio::join!(from_client, from_server, storm)
    })
    .await
    .expect("all answered in time");
    assert_eq!(a.iter().filter(|r| matches!(r, Ok(true))).count(), N);
    assert_eq!(b.iter().filter(|r| matches!(r, Ok(true))).count(), N);
    assert_eq!(storm.expect("storm answered").count, 200);
    assert_eq!(client.pending_count(), 0);
    assert_eq!(server.pending_count(), 0);
}

#[tokio::test]
async fn requests_beyond_the_inflight_limit_are_refused_and_the_session_keeps_serving() {
    let server = EndpointBuilder::new(fixture_methods(Arc::default()))
        .max_inflight_requests(2)
        .build();
    let (server_end, client_end) = Connection::memory();
    let _served = server.serve(server_end);
    let client = EndpointBuilder::new(client_methods()).build();
    let (client, _) = client.serve(client_end);
    let slow = || {
        let client = client.clone();
        Box::pin(async move { client.request::<Slow>(&SlowParams { millis: 60_000 }).await })
    };
    // Three slow calls: the server reads them in order, so two are in flight when the
    // third is read, and it alone is refused at once.
    let (first_done, _, held) = tokio::time::timeout(
        TIMEOUT,
        futures::future::select_all([slow(), slow(), slow()]),
    )
    .await
    .expect("a refusal in time");
    let refused = match first_done {
        Err(PeerError::Rpc(e)) => e,
        other => panic!("expected a refusal, got {other:?}"),
    };
    assert_eq!(
        refused.code,
        mcp_tasks_protocol::error_codes::LIMIT_EXCEEDED
    );
    assert!(
        refused.message.contains("max_inflight_requests") && refused.message.contains('2'),
        "{}",
        refused.message
    );
    // While the two are in flight, another request is refused too.
    let echo = tokio::time::timeout(TIMEOUT, client.request::<Echo>(&Text { text: "x".into() }))
        .await
        .expect("answered in time");
    assert!(
        matches!(&echo, Err(PeerError::Rpc(e)) if e.code == mcp_tasks_protocol::error_codes::LIMIT_EXCEEDED),
        "{echo:?}"
    );
    drop(held);
    // The held calls were dropped (cancelled): the session serves again.
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        match client.request::<Echo>(&Text { text: "y".into() }).await {
            Ok(t) => {
                assert_eq!(t.text, "y");
                break;
            }
            Err(e) => assert!(tokio::time::Instant::now() < deadline, "{e}"),
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn handler_makes_a_request_back_to_the_caller() {
    let (client, _server) = pair(Arc::default());
    let out = tokio::time::timeout(
        TIMEOUT,
        client.request::<Ask>(&Text {
            text: "Your name?".into(),
        }),
    )
    .await
    .expect("in time")
    .expect("answered");
    assert_eq!(out.text, "Hello, Ada!");
}

#[tokio::test]
async fn dropping_a_request_cancels_the_handler_and_no_response_follows() {
    let observed = Arc::new(Observed::default());
    let (client, _server) = pair(Arc::clone(&observed));
    let call = client.request::<Slow>(&SlowParams { millis: 60_000 });
    // Give up after 100 ms: the future is dropped, which sends notifications/cancelled.
    assert!(
        tokio::time::timeout(Duration::from_millis(100), call)
            .await
            .is_err()
    );
    tokio::time::timeout(TIMEOUT, observed.cancelled.notified())
        .await
        .expect("the server handler saw its cancellation");
    assert_eq!(client.pending_count(), 0);
    // The session is still fine.
    let t = client
        .request::<Echo>(&Text { text: "x".into() })
        .await
        .expect("echo");
    assert_eq!(t.text, "x");
}

#[tokio::test]
async fn cancelled_request_gets_no_response_on_the_wire() {
    let observed = Arc::new(Observed::default());
    let server = EndpointBuilder::new(fixture_methods(Arc::clone(&observed))).build();
    let (server_end, mut raw) = Connection::memory();
    let _ = server.serve(server_end);
    raw.sender
        .send(r#"{"jsonrpc":"2.0","id":7,"method":"slow","params":{"millis":60000}}"#.into())
        .await
        .expect("send");
    // Cancel only once the handler runs, so the cancellation is not a no-op.
    tokio::time::sleep(Duration::from_millis(50)).await;
    raw.sender
        .send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user"}}"#.into())
        .await
        .expect("send");
    tokio::time::timeout(TIMEOUT, observed.cancelled.notified())
        .await
        .expect("handler cancelled");
    raw.sender
        .send(r#"{"jsonrpc":"2.0","id":8,"method":"echo","params":{"text":"after"}}"#.into())
        .await
        .expect("send");
    let frame = tokio::time::timeout(TIMEOUT, raw.receiver.recv())
        .await
        .expect("in time")
        .expect("open")
        .expect("frame");
    let v: Value = serde_json::from_str(&frame).expect("json");
    assert_eq!(
        v["id"],
        json!(8),
        "the first frame must be the echo, not a response to the cancelled request"
    );
    // Nothing else is on the wire.
    assert!(
        tokio::time::timeout(Duration::from_millis(200), raw.receiver.recv())
            .await
            .is_err()
    );
}

/// A cancellation on the very next frame after its request is not lost, however the
/// handler task is scheduled (it may never run at all): no response ever comes for it.
#[tokio::test]
async fn a_cancellation_right_behind_its_request_is_not_lost() {
    let server = EndpointBuilder::new(fixture_methods(Arc::new(Observed::default()))).build();
    let (server_end, mut raw) = Connection::memory();
    let _ = server.serve(server_end);
    for frame in [
        r#"{"jsonrpc":"2.0","id":7,"method":"slow","params":{"millis":300}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}"#,
        r#"{"jsonrpc":"2.0","id":8,"method":"echo","params":{"text":"after"}}"#,
    ] {
        raw.sender.send(frame.into()).await.expect("send");
    }
    let frame = tokio::time::timeout(TIMEOUT, raw.receiver.recv())
        .await
        .expect("in time")
        .expect("open")
        .expect("frame");
    let v: Value = serde_json::from_str(&frame).expect("json");
    assert_eq!(v["id"], json!(8), "{v}");
    // Past the slow call's natural end (300 ms): still nothing for id 7.
    let late = tokio::time::timeout(Duration::from_millis(600), raw.receiver.recv()).await;
    assert!(
        late.is_err(),
        "a response to the cancelled request: {late:?}"
    );
}

#[tokio::test]
async fn closing_the_connection_fails_pending_requests() {
    let client = EndpointBuilder::new(client_methods()).build();
    let (raw_server, client_end) = Connection::memory();
    let (peer, _) = client.serve(client_end);
    let call = tokio::spawn({
        let peer = peer.clone();
        async move { peer.request::<Slow>(&SlowParams { millis: 60_000 }).await }
    });
    let Connection {
        sender,
        mut receiver,
    } = raw_server;
    let request = tokio::time::timeout(TIMEOUT, receiver.recv())
        .await
        .expect("in time");
    assert!(matches!(request, Some(Ok(_))));
    // The server goes away without answering.
    drop((sender, receiver));
    let out = tokio::time::timeout(TIMEOUT, call)
        .await
        .expect("in time")
        .expect("join");
    assert!(matches!(out, Err(PeerError::Closed)), "{out:?}");
    assert_eq!(peer.pending_count(), 0);
}

/// A middleware layer that refuses `forbidden/*` methods and counts every call.
#[derive(Clone)]
struct Guard<S> {
    inner: S,
    calls: Arc<AtomicUsize>,
}

impl<S> RpcServiceT for Guard<S>
where
    S: RpcServiceT<MethodResponse = MethodResponse, NotificationResponse = MethodResponse>
        + Send
        + Sync
        + Clone
        + 'static,
{
    type MethodResponse = MethodResponse;
    type NotificationResponse = MethodResponse;
    type BatchResponse = S::BatchResponse;

    fn call<'a>(&self, req: Request<'a>) -> impl Future<Output = MethodResponse> + Send + 'a {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let inner = self.inner.clone();
        async move {
            if req.method_name().starts_with("forbidden/") {
                MethodResponse::error(
                    req.id(),
                    ErrorObject::owned(-32001, "forbidden by middleware", None::<()>),
                )
            } else {
                inner.call(req).await
            }
        }
    }

    fn batch<'a>(&self, b: Batch<'a>) -> impl Future<Output = Self::BatchResponse> + Send + 'a {
        self.inner.batch(b)
    }

    fn notification<'a>(
        &self,
        n: Notification<'a>,
    ) -> impl Future<Output = MethodResponse> + Send + 'a {
        self.inner.notification(n)
    }
}

#[tokio::test]
async fn jsonrpsee_middleware_wraps_dispatch() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&calls);
    let middleware = RpcServiceBuilder::new()
        .rpc_logger(256)
        .layer_fn(move |inner| Guard {
            inner,
            calls: Arc::clone(&counter),
        });
    let server = EndpointBuilder::new(fixture_methods(Arc::default()))
        .middleware(middleware)
        .build();
    let client = EndpointBuilder::new(client_methods()).build();
    let (server_end, client_end) = Connection::memory();
    let _ = server.serve(server_end);
    let (peer, _) = client.serve(client_end);

    let err = peer
        .request_raw("forbidden/thing", None)
        .await
        .expect_err("refused");
    assert!(
        matches!(err, PeerError::Rpc(ref e) if e.code == -32001),
        "{err:?}"
    );
    let ok = peer
        .request::<Echo>(&Text { text: "y".into() })
        .await
        .expect("allowed");
    assert_eq!(ok.text, "y");
    assert_eq!(calls.load(Ordering::Relaxed), 2);
}

#[rpc(client)]
trait FixtureApi {
    #[method(name = "echo", param_kind = map)]
    async fn echo(&self, text: String) -> Result<Text, jsonrpsee::types::ErrorObjectOwned>;

    #[method(name = "ask", param_kind = map)]
    async fn ask(&self, text: String) -> Result<Text, jsonrpsee::types::ErrorObjectOwned>;
}

#[tokio::test]
async fn peer_is_a_jsonrpsee_client() {
    let (client, _server) = pair(Arc::default());
    let echoed = FixtureApiClient::echo(&client, "via ClientT".into())
        .await
        .expect("echo");
    assert_eq!(echoed.text, "via ClientT");
    // A server->client request made while serving a ClientT call.
    let greeted = FixtureApiClient::ask(&client, "name?".into())
        .await
        .expect("ask");
    assert_eq!(greeted.text, "Hello, Ada!");
    let err = jsonrpsee::core::client::ClientT::request::<Value, _>(
        &client,
        "missing",
        jsonrpsee::rpc_params![],
    )
    .await
    .expect_err("unknown method");
    assert!(
        matches!(err, jsonrpsee::core::client::Error::Call(ref e) if e.code() == -32601),
        "{err:?}"
    );
}
