//! A TCP proxy on 127.0.0.1 that can pass one direction only: while
//! [`partitioned`](OneWayProxy::partition), what the client sends still reaches the
//! server, but nothing the server answers comes back (its bytes are read and dropped). A
//! write the client sends then takes effect and its acknowledgement is lost: the outcome
//! the client sees is unknown. [`heal`](OneWayProxy::heal) closes every connection that
//! lost bytes (their streams are no longer whole) and lets everything through again.
//! Dropping the proxy closes everything: it stops listening, and every connection (and
//! one still connecting upstream) ends at once, whatever its peers do.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// A proxy in front of one upstream address.
#[derive(Debug)]
pub struct OneWayProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: JoinHandle<()>,
    /// Never sent on: its drop (with the proxy's) ends every connection, whose tasks
    /// wait on a receiver of it.
    _stop: watch::Sender<()>,
}

#[derive(Debug)]
struct Shared {
    upstream: SocketAddr,
    /// Replies dropped while set.
    partitioned: AtomicBool,
    /// Bumped by every heal: connections that lost bytes end then.
    heals: watch::Sender<u64>,
}

impl OneWayProxy {
    /// A proxy in front of the server `url` names (`scheme://[user@]host:port/...`), and
    /// `url` rewritten to go through it.
    pub async fn in_front_of(url: &str) -> std::io::Result<(OneWayProxy, String)> {
        let invalid = || {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("no host:port in {url:?}"),
            )
        };
        let (head, rest) = url.split_once("//").ok_or_else(invalid)?;
        let end = rest.find('/').unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(end);
        let (userinfo, host_port) = match authority.rsplit_once('@') {
            Some((user, hp)) => (format!("{user}@"), hp),
            None => (String::new(), authority),
        };
        let upstream = tokio::net::lookup_host(host_port)
            .await?
            .next()
            .ok_or_else(invalid)?;
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            upstream,
            partitioned: AtomicBool::new(false),
            heals: watch::Sender::new(0),
        });
        let (stop, stopped) = watch::channel(());
        let accept = tokio::spawn(accept_loop(listener, Arc::clone(&shared), stopped));
        let proxied = format!("{head}//{userinfo}{addr}{tail}");
        Ok((
            OneWayProxy {
                addr,
                shared,
                accept,
                _stop: stop,
            },
            proxied,
        ))
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// From now on the server's bytes are dropped; the client's still pass.
    pub fn partition(&self) {
        self.shared.partitioned.store(true, Ordering::SeqCst);
    }

    /// Closes the connections that lost bytes and lets everything through again.
    pub fn heal(&self) {
        self.shared.partitioned.store(false, Ordering::SeqCst);
        self.shared.heals.send_modify(|n| *n += 1);
    }
}

impl Drop for OneWayProxy {
    fn drop(&mut self) {
        self.accept.abort();
        // Nothing passes any more; `_stop`, dropped next, ends the connections.
        self.shared.partitioned.store(true, Ordering::SeqCst);
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, stopped: watch::Receiver<()>) {
    while let Ok((client, _)) = listener.accept().await {
        let shared = Arc::clone(&shared);
        let mut stopped = stopped.clone();
        tokio::spawn(async move {
            let connection = async {
                if let Ok(server) = TcpStream::connect(shared.upstream).await {
                    pipe(client, server, &shared).await;
                }
            };
            tokio::select! {
                () = connection => {}
                // Nothing is ever sent: this returns (an error) when the proxy is dropped,
                // or at once if it already was.
                _ = stopped.changed() => {}
            }
        });
    }
}

/// Copies both ways until either side closes, dropping the server's bytes while
/// partitioned; a connection that dropped any ends at the next heal.
async fn pipe(client: TcpStream, server: TcpStream, shared: &Shared) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let mut heals = shared.heals.subscribe();
    let up = async {
        let _ = tokio::io::copy(&mut client_read, &mut server_write).await;
    };
    let down = async {
        let mut buf = vec![0u8; 16 * 1024];
        let mut lost = false;
        loop {
            tokio::select! {
                read = server_read.read(&mut buf) => {
                    let n = match read {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    if shared.partitioned.load(Ordering::SeqCst) {
                        lost = true;
                    } else if lost || client_write.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                }
                changed = heals.changed() => {
                    if changed.is_err() || lost {
                        return;
                    }
                }
            }
        }
    };
    tokio::select! {
        () = up => {}
        () = down => {}
    }
}
