//! The conformance kit and the spread of a deployment on a three-node Redis Cluster
//! (`$MCP_TEST_REDIS_CLUSTER_NODES`, which `cargo xtask test` sets after starting one).
//! Each handle of a namespace connects through another node's URL. Skipped when no
//! cluster is named, unless `MCP_REQUIRE_SERVICES=1`.

use mcp_tasks::conformance::{Env, RedisFactory, StoreFactory};
use mcp_tasks::{Limits, NewTask, Origin, Owner, TaskStore, WireRevision};

mcp_tasks::conformance_tests!(optional: RedisFactory::cluster_from_env());

fn task(owner: &Owner) -> NewTask {
    NewTask {
        trace_context: None,
        owner: owner.clone(),
        ttl_ms: Some(60_000),
        poll_interval_ms: None,
        origin: Origin {
            method: "tools/call".into(),
            tool: None,
            revision: WireRevision::V2026_07_28,
        },
        status_message: None,
        job: None,
        idempotency: None,
    }
}

/// How many keys of the deployment `prefix` the node at `url` holds.
async fn keys_on(url: &str, prefix: &str) -> usize {
    let mut conn = redis::Client::open(url)
        .expect("url")
        .get_multiplexed_async_connection()
        .await
        .expect("node connection");
    let mut cursor: u64 = 0;
    let mut n = 0;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("{{{prefix}*"))
            .arg("COUNT")
            .arg(1000)
            .query_async(&mut conn)
            .await
            .expect("SCAN");
        n += keys.len();
        if next == 0 {
            return n;
        }
        cursor = next;
    }
}

/// The URL of every primary of the cluster the node at `url` belongs to.
async fn primaries(url: &str) -> Vec<String> {
    let mut conn = redis::Client::open(url)
        .expect("url")
        .get_multiplexed_async_connection()
        .await
        .expect("node connection");
    let nodes: String = redis::cmd("CLUSTER")
        .arg("NODES")
        .query_async(&mut conn)
        .await
        .expect("CLUSTER NODES");
    nodes
        .lines()
        .filter(|line| {
            line.split_whitespace()
                .nth(2)
                .is_some_and(|f| f.contains("master"))
        })
        .filter_map(|line| line.split_whitespace().nth(1))
        .filter_map(|addr| addr.split('@').next())
        .map(|hostport| format!("redis://{hostport}"))
        .collect()
}

/// 200 tasks of one deployment land on more than one node, and every handle (each
/// connected through another node) reads and lists all of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployment_spreads_over_the_nodes() {
    let Some(factory) = RedisFactory::cluster_from_env() else {
        return;
    };
    let env = Env::new("spread", Limits::default());
    let mut handles = Vec::new();
    for _ in 0..factory.nodes().len() {
        handles.push(factory.open(&env).await.expect("open"));
    }
    assert!(handles.iter().all(|h| h.is_cluster()));
    let owner = Owner::new("alice");
    let mut ids = Vec::new();
    for i in 0..200 {
        let store = &handles[i % handles.len()];
        ids.push(store.create(task(&owner)).await.expect("create").id);
    }
    for store in &handles {
        for id in &ids {
            store
                .get(&owner, id)
                .await
                .expect("every task from every node");
        }
        let mut listed = 0;
        let mut cursor = None;
        loop {
            let page = store
                .list(&owner, cursor.as_deref(), 50)
                .await
                .expect("list");
            listed += page.tasks.len();
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        assert_eq!(listed, 200);
    }
    let (mine, total) = handles[0].live_tasks(&owner).await.expect("counts");
    assert_eq!((mine, total), (200, 200));
    let prefix = RedisFactory::prefix(&env.namespace);
    let mut per_node = Vec::new();
    for url in primaries(&factory.nodes()[0]).await {
        per_node.push(keys_on(&url, &prefix).await);
    }
    eprintln!("keys per node: {per_node:?}");
    assert!(
        per_node.iter().filter(|n| **n > 0).count() > 1,
        "the deployment's keys are on one node only: {per_node:?}"
    );
}

/// A store URL listing several seed nodes connects, and a standalone server's URL is
/// not taken for a cluster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_may_list_several_seeds() {
    let Some(factory) = RedisFactory::cluster_from_env() else {
        return;
    };
    let hosts: Vec<&str> = factory
        .nodes()
        .iter()
        .map(|u| u.trim_start_matches("redis://").trim_end_matches('/'))
        .collect();
    let url = format!("redis://{}", hosts.join(","));
    let store = mcp_tasks::RedisStore::connect_with(mcp_tasks::RedisOptions::new(url).prefix(
        RedisFactory::prefix(&format!("seeds_{}", std::process::id())),
    ))
    .await
    .expect("connect through seeds");
    assert!(store.is_cluster());
    let owner = Owner::new("bob");
    let created = store.create(task(&owner)).await.expect("create");
    assert_eq!(
        store.get(&owner, &created.id).await.expect("get").id,
        created.id
    );
    store
        .cancel(&owner, &created.id, None)
        .await
        .expect("cancel");
}

proptest::proptest! {
    // Every operation is a few network round trips over three nodes: a modest number.
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

    /// The model-based check (random operation sequences against the reference model).
    #[test]
    fn redis_cluster_store_matches_the_model(
        ops in proptest::collection::vec(mcp_tasks::conformance::model::op_strategy(), 1..60)
    ) {
        let Some(factory) = RedisFactory::cluster_from_env() else {
            return Ok(());
        };
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(mcp_tasks::conformance::model::check_model(&factory, &ops));
    }
}
