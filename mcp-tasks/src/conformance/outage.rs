//! Store outages on demand: the [`Outage`] a behaviour starts and ends, and
//! [`TcpProxy`], a loopback TCP proxy that cuts every connection to a networked backend
//! (PostgreSQL, Redis, yours) and refuses new ones until the outage ends.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use std::time::Duration;

use async_trait::async_trait;
use mcp_tasks_protocol::tasks::TaskStatus;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::env::StoreFactory;
use super::helpers::{alice, json_map, new_task, open, roomy};
use crate::{Outcome, TaskStore};

/// Makes a backend unavailable to the handles a behaviour opened, then available again.
#[async_trait]
pub trait Outage: Send + Sync {
    /// From now on (until [`end`](Self::end)) the backend cannot be reached or cannot
    /// take writes; connections already open are broken.
    async fn begin(&self);
    /// The backend is reachable and writable again.
    async fn end(&self);
}

/// A TCP proxy on `127.0.0.1` in front of one upstream address. Point a store's URL at
/// [`addr`](Self::addr) instead of the server's; [`cut`](Self::cut) closes every proxied
/// connection and closes new ones as soon as they are accepted (what a client sees of a
/// failover or a network blip), [`restore`](Self::restore) lets them through again.
/// Dropping the proxy closes everything.
#[derive(Debug)]
pub struct TcpProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: JoinHandle<()>,
}

#[derive(Debug)]
struct Shared {
    upstream: SocketAddr,
    down: AtomicBool,
    /// Bumped by every cut: each connection ends when it changes.
    epoch: watch::Sender<u64>,
    /// Connections proxied so far (accepted while up).
    proxied: AtomicU64,
}

impl TcpProxy {
    /// Starts a proxy to `upstream` on a free loopback port.
    pub async fn start(upstream: SocketAddr) -> std::io::Result<TcpProxy> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            upstream,
            down: AtomicBool::new(false),
            epoch: watch::Sender::new(0),
            proxied: AtomicU64::new(0),
        });
        let accept = tokio::spawn(accept_loop(listener, Arc::clone(&shared)));
        Ok(TcpProxy {
            addr,
            shared,
            accept,
        })
    }

    /// A proxy in front of the server `url` names (its first `host:port` after `//`,
    /// resolved now), and `url` rewritten to go through it (see
    /// [`rewrite_url`](Self::rewrite_url)).
    pub async fn in_front_of(url: &str) -> std::io::Result<(TcpProxy, String)> {
        let invalid = || {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("no host:port in {url:?}"),
            )
        };
        let (_, authority, _) = split_authority(url).ok_or_else(invalid)?;
        let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
        let upstream = tokio::net::lookup_host(host_port)
            .await?
            .next()
            .ok_or_else(invalid)?;
        let proxy = TcpProxy::start(upstream).await?;
        let proxied = proxy.rewrite_url(url).ok_or_else(invalid)?;
        Ok((proxy, proxied))
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `url` with its first `host:port` after `//` replaced by this proxy's address
    /// (e.g. `postgres://127.0.0.1:5432/test` -> `postgres://127.0.0.1:41234/test`).
    /// `None` if `url` has no `//`.
    pub fn rewrite_url(&self, url: &str) -> Option<String> {
        let (head, authority, tail) = split_authority(url)?;
        let userinfo = authority.rfind('@').map_or("", |at| &authority[..=at]);
        Some(format!("{head}{userinfo}{}{tail}", self.addr))
    }

    /// Breaks every proxied connection and refuses new ones until [`restore`](Self::restore).
    pub fn cut(&self) {
        self.shared.down.store(true, Ordering::SeqCst);
        self.shared.epoch.send_modify(|e| *e += 1);
    }

    /// Lets connections through again.
    pub fn restore(&self) {
        self.shared.down.store(false, Ordering::SeqCst);
    }

    /// True between [`cut`](Self::cut) and [`restore`](Self::restore).
    pub fn is_cut(&self) -> bool {
        self.shared.down.load(Ordering::SeqCst)
    }

    /// How many connections were proxied so far.
    pub fn connections(&self) -> u64 {
        self.shared.proxied.load(Ordering::SeqCst)
    }
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        self.accept.abort();
        // Ends every connection task.
        self.shared.epoch.send_modify(|e| *e += 1);
    }
}

#[async_trait]
impl Outage for TcpProxy {
    async fn begin(&self) {
        self.cut();
    }

    async fn end(&self) {
        self.restore();
    }
}

/// `scheme://`, the authority, and the rest of `url`.
fn split_authority(url: &str) -> Option<(&str, &str, &str)> {
    let start = url.find("//")? + 2;
    let rest = &url[start..];
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    Some((&url[..start], &rest[..end], &rest[end..]))
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        if shared.down.load(Ordering::SeqCst) {
            // Closed at once: the client sees its connection reset or ended.
            drop(client);
            continue;
        }
        shared.proxied.fetch_add(1, Ordering::SeqCst);
        tokio::spawn(proxy(client, Arc::clone(&shared)));
    }
}

async fn proxy(mut client: TcpStream, shared: Arc<Shared>) {
    let mut epoch = shared.epoch.subscribe();
    epoch.mark_unchanged();
    let Ok(mut server) = TcpStream::connect(shared.upstream).await else {
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    tokio::select! {
        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
        _ = epoch.changed() => {}
    }
    // Dropping both ends closes them.
}

/// How long one operation may take while the backend is out (connect and command
/// timeouts included), and how long the backend gets to answer again once it is back.
const PATIENCE: Duration = Duration::from_secs(30);

/// Error classification under an outage (not in [`conformance_tests!`](crate::conformance_tests):
/// it needs an [`Outage`] for the backend). While `outage` lasts, a terminal write fails,
/// and every operation either succeeds (a read served from a local file) or fails with
/// a *transient* error ([`StoreError::is_transient`](crate::StoreError::is_transient)),
/// never "not found" or a permanent error, and within a bounded time; afterwards the same
/// handle works again without being reopened, nothing committed before is lost, and a
/// terminal write retried across the outage lands exactly once.
pub async fn outage_errors_are_transient_and_lose_nothing<F: StoreFactory>(
    factory: &F,
    outage: &dyn Outage,
) {
    let (store, _env) = open(factory, "outage", roomy()).await;
    let owner = alice();
    let done = store.create(new_task(&owner)).await.expect("create");
    let result = json_map(serde_json::json!({"content": [], "isError": false}));
    store
        .complete(&owner, &done.id, result.clone())
        .await
        .expect("complete before the outage");
    let running = store.create(new_task(&owner)).await.expect("create");

    outage.begin().await;
    let during = async {
        let write = store.complete(&owner, &running.id, result.clone()).await;
        let read = store.get(&owner, &done.id).await.map(drop);
        let create = store.create(new_task(&owner)).await.map(drop);
        (write.map(drop), read, create)
    };
    let (write, read, create) = tokio::time::timeout(PATIENCE, during)
        .await
        .unwrap_or_else(|_| panic!("an operation hung for {PATIENCE:?} during the outage"));
    for (what, outcome) in [("complete", &write), ("get", &read), ("create", &create)] {
        if let Err(e) = outcome {
            assert!(
                e.is_transient(),
                "{what} during the outage failed with a permanent error: {e:?}"
            );
        }
    }
    assert!(
        write.is_err(),
        "a terminal write succeeded during the outage: the outage did not take effect"
    );
    outage.end().await;

    // The same handle answers again; the write, retried, lands once.
    let deadline = tokio::time::Instant::now() + PATIENCE;
    let landed = loop {
        match store.complete(&owner, &running.id, result.clone()).await {
            Ok(t) => break t,
            Err(e) if e.is_transient() && tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("the store did not come back after the outage: {e:?}"),
        }
    };
    if write.is_ok() {
        assert!(
            !landed.won,
            "the write during the outage landed; a retry must not win"
        );
    }
    let again = store
        .complete(&owner, &running.id, result.clone())
        .await
        .expect("complete again");
    assert!(!again.won, "a second terminal write must not win");
    for id in [&done.id, &running.id] {
        let rec = store.get(&owner, id).await.expect("read after the outage");
        assert_eq!(rec.status, TaskStatus::Completed);
        assert_eq!(rec.outcome, Some(Outcome::Result(result.clone())));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn echo_server() -> SocketAddr {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut buf = [0u8; 64];
                    while let Ok(n) = s.read(&mut buf).await {
                        if n == 0 || s.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        addr
    }

    async fn round_trip(addr: SocketAddr) -> std::io::Result<Vec<u8>> {
        let mut s = TcpStream::connect(addr).await?;
        s.write_all(b"ping").await?;
        let mut buf = [0u8; 4];
        s.read_exact(&mut buf).await?;
        Ok(buf.to_vec())
    }

    #[tokio::test]
    async fn cuts_and_restores() {
        let proxy = TcpProxy::start(echo_server().await).await.expect("proxy");
        assert_eq!(round_trip(proxy.addr()).await.expect("up"), b"ping");

        let mut open = TcpStream::connect(proxy.addr()).await.expect("connect");
        open.write_all(b"a").await.expect("write");
        let mut one = [0u8; 1];
        open.read_exact(&mut one).await.expect("echo");
        proxy.cut();
        // The open connection ends...
        let mut rest = Vec::new();
        let ended = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            open.read_to_end(&mut rest),
        )
        .await
        .expect("closed in time");
        assert!(ended.is_err() || rest.is_empty());
        // ...and new ones carry nothing.
        assert!(round_trip(proxy.addr()).await.is_err());

        proxy.restore();
        assert_eq!(round_trip(proxy.addr()).await.expect("up again"), b"ping");
    }

    #[tokio::test]
    async fn rewrites_urls() {
        let proxy = TcpProxy::start(echo_server().await).await.expect("proxy");
        let a = proxy.addr();
        assert_eq!(
            proxy.rewrite_url("postgres://127.0.0.1:5432/test?x=1"),
            Some(format!("postgres://{a}/test?x=1"))
        );
        assert_eq!(
            proxy.rewrite_url("redis://user:pw@localhost:6379"),
            Some(format!("redis://user:pw@{a}"))
        );
        assert_eq!(proxy.rewrite_url("memory"), None);
    }
}
