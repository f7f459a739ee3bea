//! Rule 24: the node registry: heartbeats from two handles, the drain request and its
//! acknowledgement, lost and forgotten nodes. A store that answers
//! [`StoreError::Unsupported`] is reported as not applicable (the kit names it).

use super::env::StoreFactory;
use super::helpers::{another, open, roomy};
use crate::node::{FORGET_AFTER_MS, LOST_AFTER_BEATS};
use crate::{Clock, NodeBeat, NodeRecord, NodeState, StoreError, TaskStore};

/// `Some(value)`, or `None` after reporting that the store keeps no node registry.
fn supported<T>(behaviour: &str, result: Result<T, StoreError>) -> Option<T> {
    match result {
        Ok(value) => Some(value),
        Err(StoreError::Unsupported { operation }) => {
            super::report_not_applicable(&format!(
                "{behaviour}: the store does not support {operation}"
            ));
            None
        }
        Err(e) => panic!("{behaviour}: {e}"),
    }
}

fn beat(id: &str, role: &str, starting: bool, drained: bool) -> NodeBeat {
    NodeBeat {
        id: id.to_owned(),
        role: role.to_owned(),
        interval_ms: 1_000,
        starting,
        drained,
    }
}

async fn listed<S: TaskStore>(store: &S) -> Vec<NodeRecord> {
    store.list_nodes().await.expect("list_nodes")
}

fn find<'a>(nodes: &'a [NodeRecord], id: &str) -> &'a NodeRecord {
    nodes
        .iter()
        .find(|n| n.id == id)
        .unwrap_or_else(|| panic!("node {id} not listed in {nodes:?}"))
}

/// Nodes beating through two handles are listed by id through either, with their roles,
/// `started_at` kept from the first beat and `heartbeat_at` moved to the store's time by
/// every beat; a new process's first beat starts its entry afresh.
pub async fn nodes_register_and_heartbeat_across_handles<F: StoreFactory>(factory: &F) {
    const NAME: &str = "nodes_register_and_heartbeat_across_handles";
    let (a, env) = open(factory, NAME, roomy()).await;
    let b = another(factory, &env).await;
    let t0 = env.clock.now_ms();
    let Some(first) = supported(
        NAME,
        a.heartbeat_node(&beat("w1", "worker", true, false)).await,
    ) else {
        return;
    };
    assert_eq!(
        (first.started_at, first.heartbeat_at, first.state),
        (t0, t0, NodeState::Active)
    );
    assert!(!first.drain_requested && !first.drained);
    b.heartbeat_node(&beat("api1", "api", true, false))
        .await
        .expect("beat");
    env.clock.advance(400);
    let again = b
        .heartbeat_node(&beat("w1", "worker", false, false))
        .await
        .expect("beat");
    assert_eq!((again.started_at, again.heartbeat_at), (t0, t0 + 400));
    for store in [&a, &b] {
        let nodes = listed(store).await;
        let ids: Vec<&str> = nodes.iter().map(|n| n.id.as_str()).collect();
        assert_eq!(ids, ["api1", "w1"], "listed by id");
        let w1 = find(&nodes, "w1");
        assert_eq!(
            (w1.role.as_str(), w1.started_at, w1.heartbeat_at),
            ("worker", t0, t0 + 400)
        );
        assert_eq!(w1.interval_ms, 1_000);
        assert_eq!(find(&nodes, "api1").role, "api");
        assert!(nodes.iter().all(|n| n.state == NodeState::Active));
    }
    env.clock.advance(100);
    let restarted = a
        .heartbeat_node(&beat("w1", "all", true, false))
        .await
        .expect("beat");
    assert_eq!(
        (restarted.started_at, restarted.role.as_str()),
        (t0 + 500, "all")
    );
}

/// A drain asked through one handle is read by the node's next beat through another; the
/// node stays `draining` until it beats `drained`, which is recorded only while a drain
/// is asked; an unknown node is `NotFound`; a restart clears the drain.
pub async fn nodes_drain_is_asked_seen_and_acknowledged<F: StoreFactory>(factory: &F) {
    const NAME: &str = "nodes_drain_is_asked_seen_and_acknowledged";
    let (a, env) = open(factory, NAME, roomy()).await;
    let b = another(factory, &env).await;
    let Some(_) = supported(
        NAME,
        a.heartbeat_node(&beat("w1", "worker", true, false)).await,
    ) else {
        return;
    };
    // Drained without a drain asked is not recorded.
    let early = a
        .heartbeat_node(&beat("w1", "worker", false, true))
        .await
        .expect("beat");
    assert!(!early.drained && early.state == NodeState::Active);
    assert!(matches!(
        b.request_drain("nobody").await,
        Err(StoreError::NotFound)
    ));
    let asked = b.request_drain("w1").await.expect("request_drain");
    assert!(asked.drain_requested);
    assert_eq!(asked.state, NodeState::Draining);
    assert_eq!(find(&listed(&a).await, "w1").state, NodeState::Draining);
    env.clock.advance(100);
    let seen = a
        .heartbeat_node(&beat("w1", "worker", false, false))
        .await
        .expect("beat");
    assert!(seen.drain_requested, "the node's beat reads the drain");
    assert_eq!(seen.state, NodeState::Draining);
    // Asking again changes nothing.
    assert_eq!(
        b.request_drain("w1").await.expect("again").state,
        NodeState::Draining
    );
    let done = a
        .heartbeat_node(&beat("w1", "worker", false, true))
        .await
        .expect("beat");
    assert_eq!(done.state, NodeState::Drained);
    let listed_b = listed(&b).await;
    let w1 = find(&listed_b, "w1");
    assert!(w1.drained && w1.drain_requested);
    assert_eq!(w1.state, NodeState::Drained);
    let restarted = a
        .heartbeat_node(&beat("w1", "worker", true, false))
        .await
        .expect("beat");
    assert!(!restarted.drain_requested && !restarted.drained);
    assert_eq!(restarted.state, NodeState::Active);
}

/// A node whose heartbeat is `LOST_AFTER_BEATS` intervals old is listed `lost` (drained
/// or not); a beat makes it active again; `FORGET_AFTER_MS` after it became lost it is
/// neither listed nor drained, and its next beat starts it afresh.
pub async fn nodes_lost_then_forgotten<F: StoreFactory>(factory: &F) {
    const NAME: &str = "nodes_lost_then_forgotten";
    let (a, env) = open(factory, NAME, roomy()).await;
    let b = another(factory, &env).await;
    let t0 = env.clock.now_ms();
    let Some(_) = supported(
        NAME,
        a.heartbeat_node(&beat("w1", "worker", true, false)).await,
    ) else {
        return;
    };
    a.heartbeat_node(&beat("w2", "worker", true, false))
        .await
        .expect("beat");
    let lost_after = u64::try_from(LOST_AFTER_BEATS).expect("positive") * 1_000;
    env.clock.advance(lost_after - 1);
    assert!(
        listed(&b)
            .await
            .iter()
            .all(|n| n.state == NodeState::Active)
    );
    env.clock.advance(1);
    let nodes = listed(&b).await;
    assert_eq!(nodes.len(), 2);
    assert!(
        nodes.iter().all(|n| n.state == NodeState::Lost),
        "{nodes:?}"
    );
    // A lost node can still be asked to drain; it reads lost while it stays silent.
    let asked = b.request_drain("w2").await.expect("drain a lost node");
    assert_eq!(asked.state, NodeState::Lost);
    // w1 comes back: active again, its start kept.
    let back = a
        .heartbeat_node(&beat("w1", "worker", false, false))
        .await
        .expect("beat");
    assert_eq!((back.state, back.started_at), (NodeState::Active, t0));
    // w2 stays silent until it is forgotten.
    env.clock
        .advance(u64::try_from(FORGET_AFTER_MS).expect("positive"));
    let t1 = env.clock.now_ms();
    a.heartbeat_node(&beat("w1", "worker", false, false))
        .await
        .expect("beat");
    let ids: Vec<String> = listed(&b).await.into_iter().map(|n| n.id).collect();
    assert_eq!(ids, ["w1"], "w2 forgotten");
    assert!(matches!(
        b.request_drain("w2").await,
        Err(StoreError::NotFound)
    ));
    let fresh = a
        .heartbeat_node(&beat("w2", "worker", false, false))
        .await
        .expect("beat");
    assert_eq!(fresh.started_at, t1, "a forgotten node starts afresh");
    assert!(!fresh.drain_requested);
}
