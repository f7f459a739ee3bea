//! The command connection: one standalone server (a reconnecting multiplexed connection)
//! or a Redis Cluster (the `redis` crate's cluster client, which follows `MOVED`/`ASK`
//! and refreshes its slot map, replaced by a fresh one when it stays broken: see
//! [`heal`]), told apart at connect by `INFO cluster`; and the seed list a store URL
//! names.

mod heal;

use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager};
use redis::{Cmd, Pipeline, RedisFuture, Value};

use super::store_error;
use crate::error::StoreError;
use heal::Healing;

/// How long a command may take before it fails with [`StoreError::Unavailable`].
pub(super) const RESPONSE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long connecting to one node may take.
pub(super) const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The command connection of a handle; cloning it is cheap (a handle on the same
/// multiplexed connections).
#[derive(Clone)]
pub(crate) enum Conn {
    /// A standalone server (or a primary without cluster mode).
    Single(ConnectionManager),
    /// A Redis Cluster: every command goes to the node that holds its key's slot; the
    /// cluster connection is replaced by a fresh one when it stays broken.
    Cluster(Healing),
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Single(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Single(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
        }
    }
}

/// What connecting found.
pub(super) struct Connected {
    pub conn: Conn,
    /// Whether it is a cluster.
    pub cluster: bool,
    /// The nodes a pub/sub subscription may use, the one that answered first first (on a
    /// cluster: that node, then every other primary it knows, then the other seeds).
    pub nodes: Vec<redis::Client>,
}

/// The seed URLs of a store URL: `redis://[user:password@]host:port[,host:port...][/db]`
/// gives one URL per host, each with the user info and the path. A URL without `://`
/// is returned as it is.
pub(crate) fn seeds(url: &str) -> Vec<String> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return vec![url.to_owned()];
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    let (userinfo, hosts) = match authority.rsplit_once('@') {
        Some((user, hosts)) => (format!("{user}@"), hosts),
        None => (String::new(), authority),
    };
    let list: Vec<String> = hosts
        .split(',')
        .filter(|h| !h.is_empty())
        .map(|h| format!("{scheme}://{userinfo}{h}{path}"))
        .collect();
    if list.is_empty() {
        vec![url.to_owned()]
    } else {
        list
    }
}

/// Connects to the first seed of `url` that answers, asks it whether it is a cluster
/// node, and opens the matching command connection.
pub(super) async fn connect(url: &str) -> Result<Connected, StoreError> {
    let seeds = seeds(url);
    let mut clients = Vec::with_capacity(seeds.len());
    for seed in &seeds {
        clients.push(redis::Client::open(seed.as_str()).map_err(store_error)?);
    }
    // One plain connection first: a server that refuses or does not answer is said at
    // once (the managers below retry their first connection with backoffs, for seconds).
    let mut failure = None;
    let mut found = None;
    for (i, client) in clients.iter().enumerate() {
        let at = client.get_connection_info().addr().to_string();
        match tokio::time::timeout(CONNECT_TIMEOUT, client.get_multiplexed_async_connection()).await
        {
            Ok(Ok(probe)) => {
                found = Some((i, probe));
                break;
            }
            Ok(Err(e)) => failure = Some(store_error(e).at(&at)),
            Err(e) => failure = Some(store_error(e).at(&at)),
        }
    }
    let Some((first, mut probe)) = found else {
        return Err(failure.unwrap_or_else(|| store_error("no Redis node to connect to")));
    };
    let info: String = redis::cmd("INFO")
        .arg("cluster")
        .query_async(&mut probe)
        .await
        .map_err(store_error)?;
    let cluster = info.lines().any(|l| l.trim() == "cluster_enabled:1");
    if !cluster {
        if seeds.len() > 1 {
            return Err(StoreError::backend(format!(
                "redis: {} seed nodes given but {} is not a cluster node",
                seeds.len(),
                clients[first].get_connection_info().addr()
            )));
        }
        let config = redis::aio::ConnectionManagerConfig::new()
            // The default 500 ms response timeout is short for a 16 MiB result; a
            // timed-out write has an unknown outcome, so allow more.
            .set_response_timeout(Some(RESPONSE_TIMEOUT))
            .set_connection_timeout(Some(CONNECT_TIMEOUT));
        let conn = clients[first]
            .get_connection_manager_with_config(config)
            .await
            .map_err(store_error)?;
        return Ok(Connected {
            conn: Conn::Single(conn),
            cluster: false,
            nodes: clients,
        });
    }
    // Every primary the first node knows, for the pub/sub subscription to move to when
    // its node goes away (published messages reach every node of a cluster).
    let known: String = redis::cmd("CLUSTER")
        .arg("NODES")
        .query_async(&mut probe)
        .await
        .map_err(store_error)?;
    let mut nodes = vec![clients[first].clone()];
    let template = &seeds[first];
    for addr in primaries(&known) {
        let url = with_address(template, &addr);
        if let Ok(client) = redis::Client::open(url.as_str())
            && client.get_connection_info().addr() != clients[first].get_connection_info().addr()
        {
            nodes.push(client);
        }
    }
    for (i, client) in clients.iter().enumerate() {
        if i != first
            && !nodes
                .iter()
                .any(|n| n.get_connection_info().addr() == client.get_connection_info().addr())
        {
            nodes.push(client.clone());
        }
    }
    let cluster_client =
        redis::cluster::ClusterClientBuilder::new(seeds.iter().map(String::as_str))
            .connection_timeout(CONNECT_TIMEOUT)
            .response_timeout(RESPONSE_TIMEOUT)
            .build()
            .map_err(store_error)?;
    let conn = cluster_client
        .get_async_connection()
        .await
        .map_err(store_error)?;
    Ok(Connected {
        conn: Conn::Cluster(Healing::new(cluster_client, conn)),
        cluster: true,
        nodes,
    })
}

/// The `host:port` of every primary in a `CLUSTER NODES` answer that is not failing.
fn primaries(nodes: &str) -> Vec<String> {
    nodes
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let addr = fields.nth(1)?;
            let flags = fields.next()?;
            let primary = flags.split(',').any(|f| f == "master")
                && !flags.split(',').any(|f| f == "fail" || f == "noaddr");
            // `ip:port@cport[,hostname]`
            let hostport = addr.split(['@', ',']).next()?;
            (primary && !hostport.starts_with(':')).then(|| hostport.to_owned())
        })
        .collect()
}

/// `template` (a seed URL) with its `host:port` replaced by `addr`.
fn with_address(template: &str, addr: &str) -> String {
    let Some((scheme, rest)) = template.split_once("://") else {
        return format!("redis://{addr}");
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    let userinfo = authority
        .rsplit_once('@')
        .map(|(u, _)| format!("{u}@"))
        .unwrap_or_default();
    format!("{scheme}://{userinfo}{addr}{path}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_lists_its_seeds() {
        assert_eq!(
            seeds("redis://127.0.0.1:6379/"),
            ["redis://127.0.0.1:6379/"]
        );
        assert_eq!(
            seeds("redis://u:p@a:1,b:2/0"),
            ["redis://u:p@a:1/0", "redis://u:p@b:2/0"]
        );
        assert_eq!(seeds("redis://a:1,b:2"), ["redis://a:1", "redis://b:2"]);
        assert_eq!(seeds("unix:///tmp/x"), ["unix:///tmp/x"]);
    }

    #[test]
    fn finds_the_live_primaries() {
        let nodes = "\
a1 127.0.0.1:7001@17001 myself,master - 0 0 1 connected 0-5460
a2 127.0.0.1:7002@17002,host master - 0 0 2 connected 5461-10922
a3 127.0.0.1:7003@17003 master,fail - 0 0 3 connected 10923-16383
a4 127.0.0.1:7004@17004 slave a1 0 0 1 connected
";
        assert_eq!(primaries(nodes), ["127.0.0.1:7001", "127.0.0.1:7002"]);
        assert_eq!(
            with_address("redis://u:p@h:1/0", "127.0.0.1:7002"),
            "redis://u:p@127.0.0.1:7002/0"
        );
    }
}
