//! Rule 23, who and what a log names: the node and actor of each entry (a claim, a lost
//! run), and the link a re-run's log keeps to the task it re-runs.

use mcp_tasks_protocol::jsonrpc::ErrorObject;
use serde_json::json;

use super::env::StoreFactory;
use super::helpers::{alice, json_map, new_task, open, roomy};
use super::logs::{keeps_logs, kinds_of, whole_log};
use crate::log::kinds;
use crate::{Actor, Delivery, Job, LogScope, Recovery, TaskId, TaskStore};

/// The writer's [`LogScope`] names the node and actor of the entries written inside it;
/// claims and lost runs are in the log too.
pub async fn log_names_node_actor_claims_and_lost_runs<F: StoreFactory>(factory: &F) {
    let (store, env) = open(factory, "log_scope_claims", roomy()).await;
    if !keeps_logs(&store, "log_names_node_actor_claims_and_lost_runs").await {
        return;
    }
    let owner = alice();
    let mut new = new_task(&owner);
    new.origin.tool = Some("kit_log_tool".into());
    let mut job = Job::new(json_map(json!({ "n": 1 })));
    job.delivery = Delivery::AtLeastOnce { max_attempts: 2 };
    new.job = Some(job);
    let task = store.create(new).await.expect("create");
    let worker = LogScope {
        node: Some("node-w1".into()),
        actor: None,
    };
    let tools = ["kit_log_tool".to_owned()];
    worker
        .run(store.claim_next(&tools, "node-w1", 1_000))
        .await
        .expect("claim")
        .expect("queued");
    env.clock.advance(1_000);
    let recovered = store
        .recover_lapsed(&owner, &task.id, ErrorObject::new(-32603, "worker lost"))
        .await
        .expect("recover");
    assert_eq!(recovered, Recovery::Requeued { attempt: 1 });
    store
        .claim_next(&tools, "node-w2", 60_000)
        .await
        .expect("claim")
        .expect("queued again");
    let operator = LogScope {
        node: Some("api-1".into()),
        actor: Some(Actor::Operator),
    };
    operator
        .run(store.request_cancel(&owner, &task.id))
        .await
        .expect("cancel");
    let entries = whole_log(&store, &task.id).await;
    assert_eq!(
        kinds_of(&entries),
        [
            kinds::STATUS,
            kinds::CLAIM,
            kinds::REQUEUE,
            kinds::CLAIM,
            kinds::CANCEL
        ]
    );
    let claim = &entries[1];
    assert_eq!(claim.node.as_deref(), Some("node-w1"));
    assert_eq!(claim.actor, Actor::Worker);
    assert_eq!(claim.payload["attempt"], 1);
    assert_eq!(claim.payload["holder"], "node-w1");
    assert_eq!(entries[2].actor, Actor::Server);
    assert_eq!(entries[2].payload["attempt"], 1);
    assert_eq!(entries[3].payload["attempt"], 2);
    assert_eq!(entries[3].node, None, "outside any scope no node is named");
    assert_eq!(entries[4].actor, Actor::Operator);
    assert_eq!(entries[4].node.as_deref(), Some("api-1"));
}

/// A task created to re-run another ([`Job::rerun_of`]) says so in its log, in its
/// creation's write (`rs.mcp-tasks.rerun` `{"rerunOf"}`, seq 1, by the writer's actor),
/// whether created queued or leased; the link stays in its record through a claim; the
/// finished task it re-runs is left as it was.
pub async fn log_links_a_rerun_to_its_origin<F: StoreFactory>(factory: &F) {
    let (store, _env) = open(factory, "log_rerun_link", roomy()).await;
    if !keeps_logs(&store, "log_links_a_rerun_to_its_origin").await {
        return;
    }
    let owner = alice();
    let tool = "kit_rerun_tool";
    let job = |rerun_of: Option<TaskId>| {
        let mut job = Job::new(json_map(json!({ "n": 7 })));
        job.rerun_of = rerun_of;
        job
    };
    let mut first = new_task(&owner);
    first.origin.tool = Some(tool.into());
    first.job = Some(job(None));
    let first = store
        .create_leased(first, "node-1", 60_000)
        .await
        .expect("create");
    store
        .fail(
            &owner,
            &first.id,
            ErrorObject::new(-32603, "the first run failed"),
        )
        .await
        .expect("fail");
    let before = whole_log(&store, &first.id).await;
    let operator = LogScope {
        node: Some("api-1".into()),
        actor: Some(Actor::Operator),
    };
    let mut queued = new_task(&owner);
    queued.origin.tool = Some(tool.into());
    queued.job = Some(job(Some(first.id.clone())));
    let queued = operator
        .clone()
        .run(store.create(queued))
        .await
        .expect("create the re-run");
    let mut leased = new_task(&owner);
    leased.origin.tool = Some(tool.into());
    leased.job = Some(job(Some(first.id.clone())));
    let leased = operator
        .run(store.create_leased(leased, "node-1", 60_000))
        .await
        .expect("create the leased re-run");
    for task in [&queued, &leased] {
        let entries = whole_log(&store, &task.id).await;
        assert_eq!(
            kinds_of(&entries),
            [kinds::STATUS, kinds::RERUN],
            "{entries:?}"
        );
        let link = &entries[1];
        assert_eq!(link.seq, 1);
        assert_eq!(link.payload["rerunOf"], first.id.as_str());
        assert_eq!(link.actor, Actor::Operator);
        assert_eq!(link.node.as_deref(), Some("api-1"));
        assert_eq!(entries[0].payload["status"], "working");
        let read = store.get(&owner, &task.id).await.expect("get");
        let kept = read.job.as_ref().and_then(|j| j.rerun_of.clone());
        assert_eq!(kept.as_ref(), Some(&first.id), "the record keeps the link");
    }
    let claimed = store
        .claim_next(&[tool.to_owned()], "node-2", 60_000)
        .await
        .expect("claim")
        .expect("the queued re-run waits");
    assert_eq!(claimed.id, queued.id);
    assert_eq!(
        claimed.job.as_ref().and_then(|j| j.rerun_of.as_ref()),
        Some(&first.id),
        "a claim keeps the link"
    );
    // A task without the link writes no such entry; the first task is left as it was.
    let plain = whole_log(&store, &first.id).await;
    assert_eq!(plain, before, "the finished task's log never changes");
    assert!(!kinds_of(&plain).contains(&kinds::RERUN), "{plain:?}");
}
