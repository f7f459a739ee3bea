//! Rules 18 to 21: tasks waiting for a worker, claims, lapsed claims by delivery, and
//! cancelling a queued task.

use std::collections::BTreeSet;

use mcp_tasks_protocol::error_codes;
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use mcp_tasks_protocol::tasks::TaskStatus;

use super::env::StoreFactory;
use super::helpers::{alice, another, json_map, mallory, new_task, open, roomy};
use crate::{Delivery, Job, NewTask, Outcome, Owner, Recovery, TaskId, TaskStore, TraceContext};

fn queued(owner: &Owner, tool: &str, delivery: Delivery) -> NewTask {
    let mut new = new_task(owner);
    new.origin.tool = Some(tool.to_owned());
    let mut job = Job::new(json_map(serde_json::json!({ "n": 1 })));
    job.delivery = delivery;
    job.principal = Some(owner.as_str().to_owned());
    new.job = Some(job);
    new
}

fn tools(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

fn lost() -> ErrorObject {
    ErrorObject::new(error_codes::INTERNAL_ERROR, "worker lost")
}

/// Two handles claiming at once take every queued task exactly once between them; a
/// task without a job, of another tool, leased or finished is never claimed; a claim
/// keeps the job and counts its first run.
pub async fn queued_tasks_are_claimed_once_across_handles<F: StoreFactory>(factory: &F) {
    let (a, env) = open(factory, "claim_once", roomy()).await;
    let b = another(factory, &env).await;
    let owners = [alice(), mallory()];
    let mut expected = BTreeSet::new();
    for i in 0..24 {
        let owner = &owners[i % 2];
        let rec = a
            .create(queued(owner, "kit_tool", Delivery::AtMostOnce))
            .await
            .expect("create");
        assert_eq!(rec.queued_tool(), Some("kit_tool"));
        assert_eq!(rec.attempt(), 0);
        expected.insert(rec.id);
    }
    let owner = alice();
    let no_job = a.create(new_task(&owner)).await.expect("create");
    a.create(queued(&owner, "other_tool", Delivery::AtMostOnce))
        .await
        .expect("create");
    let leased = a
        .create_leased(
            queued(&owner, "kit_tool", Delivery::AtMostOnce),
            "creator",
            60_000,
        )
        .await
        .expect("create leased");
    assert_eq!(leased.attempt(), 1, "created leased: its first run started");
    let done = a
        .create(queued(&owner, "kit_tool", Delivery::AtMostOnce))
        .await
        .expect("create");
    a.complete(&owner, &done.id, json_map(serde_json::json!({})))
        .await
        .expect("complete");

    let wanted = tools(&["kit_tool"]);
    let drain = |store: F::Store, holder: &'static str| {
        let wanted = wanted.clone();
        async move {
            let mut got = Vec::new();
            while let Some(rec) = store
                .claim_next(&wanted, holder, 60_000)
                .await
                .expect("claim")
            {
                got.push(rec);
            }
            got
        }
    };
    let (got_a, got_b) = tokio::join!(drain(a, "node-a"), drain(b, "node-b"));
    let mut seen = BTreeSet::new();
    for (rec, holder) in got_a
        .iter()
        .map(|r| (r, "node-a"))
        .chain(got_b.iter().map(|r| (r, "node-b")))
    {
        assert!(seen.insert(rec.id.clone()), "task {} claimed twice", rec.id);
        assert_eq!(rec.lease.as_ref().map(|l| l.holder.as_str()), Some(holder));
        assert_eq!(rec.attempt(), 1);
        assert_eq!(rec.queued_tool(), None, "a claimed task waits no more");
        let job = rec.job.as_ref().expect("the job is kept");
        assert_eq!(job.arguments, json_map(serde_json::json!({ "n": 1 })));
        assert_eq!(job.principal.as_deref(), Some(rec.owner.as_str()));
    }
    assert_eq!(seen, expected, "every queued task claimed, nothing else");
    assert!(!seen.contains(&no_job.id) && !seen.contains(&leased.id));
}

/// Whether the next `Changed` event about `id` on `feed` says it waits for a worker.
async fn queued_event(feed: &mut crate::EventStream, id: TaskId) -> bool {
    let wait = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        loop {
            match feed.recv().await {
                Ok(crate::TaskEvent::Changed { key, queued, .. }) if key.id == id => {
                    return queued;
                }
                Ok(_) => continue,
                Err(e) => panic!("event feed failed: {e}"),
            }
        }
    });
    wait.await
        .unwrap_or_else(|_| panic!("no Changed event for {id} within 10 s"))
}

/// The `Changed` events another handle hears say whether the task waits for a worker:
/// yes when created queued, no when created without a job and once claimed.
pub async fn queued_changes_are_announced_as_queued<F: StoreFactory>(factory: &F) {
    let (a, env) = open(factory, "claim_announced", roomy()).await;
    let b = another(factory, &env).await;
    let mut feed = b.events();
    let owner = alice();
    let plain = a.create(new_task(&owner)).await.expect("create");
    assert!(
        !queued_event(&mut feed, plain.id).await,
        "no job: not queued"
    );
    let job = a
        .create(queued(&owner, "kit_announced", Delivery::AtMostOnce))
        .await
        .expect("create");
    assert!(
        queued_event(&mut feed, job.id.clone()).await,
        "created queued"
    );
    // A later change of the same task, once claimed, says it waits no more (a first
    // claim itself announces nothing: the status did not change).
    a.claim_next(&tools(&["kit_announced"]), "node-a", 60_000)
        .await
        .expect("claim")
        .expect("the queued task");
    a.set_status_message(&owner, &job.id, Some("running".into()))
        .await
        .expect("message");
    assert!(
        !queued_event(&mut feed, job.id).await,
        "claimed: waits no more"
    );
}

/// The creating call's trace context is kept with the task: another handle reads it
/// back unchanged, and the worker that claims the task gets it with the record (it
/// survives the claim and later writes); a task created without one has none.
pub async fn trace_context_travels_with_the_task<F: StoreFactory>(factory: &F) {
    let (a, env) = open(factory, "claim_trace_context", roomy()).await;
    let b = another(factory, &env).await;
    let owner = alice();
    let context = TraceContext {
        traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into(),
        tracestate: Some("vendor=a,other=b".into()),
    };
    let mut new = queued(&owner, "kit_traced", Delivery::AtMostOnce);
    new.trace_context = Some(context.clone());
    let created = a.create(new).await.expect("create");
    assert_eq!(created.trace_context.as_ref(), Some(&context));
    let seen = b.get(&owner, &created.id).await.expect("get");
    assert_eq!(seen.trace_context.as_ref(), Some(&context));
    let claimed = b
        .claim_next(&tools(&["kit_traced"]), "node-b", 60_000)
        .await
        .expect("claim")
        .expect("the queued task");
    assert_eq!(claimed.trace_context.as_ref(), Some(&context));
    a.set_status_message(&owner, &created.id, Some("running".into()))
        .await
        .expect("message");
    let after = a.get(&owner, &created.id).await.expect("get");
    assert_eq!(after.trace_context, Some(context));
    let plain = a.create(new_task(&owner)).await.expect("create");
    let plain = b.get(&owner, &plain.id).await.expect("get");
    assert_eq!(plain.trace_context, None);
}

/// Claims take the oldest waiting task of their tools first, by creation time then id.
pub async fn claims_follow_creation_order_per_tool<F: StoreFactory>(factory: &F) {
    let (store, env) = open(factory, "claim_order", roomy()).await;
    let owner = alice();
    let mut of_a: Vec<TaskId> = Vec::new();
    let mut all: Vec<TaskId> = Vec::new();
    for i in 0..12 {
        env.clock.advance(10);
        let tool = if i % 3 == 0 { "tool_b" } else { "tool_a" };
        let rec = store
            .create(queued(&owner, tool, Delivery::AtMostOnce))
            .await
            .expect("create");
        if tool == "tool_a" {
            of_a.push(rec.id.clone());
        }
        all.push(rec.id);
    }
    // Three more in the same millisecond: (created_at, id) order.
    env.clock.advance(10);
    let mut same = Vec::new();
    for _ in 0..3 {
        let rec = store
            .create(queued(&owner, "tool_a", Delivery::AtMostOnce))
            .await
            .expect("create");
        same.push(rec.id);
    }
    same.sort();
    of_a.extend(same.iter().cloned());
    all.extend(same);

    let first_a = store
        .claim_next(&tools(&["tool_a"]), "w", 60_000)
        .await
        .expect("claim")
        .expect("one waits");
    assert_eq!(first_a.id, of_a[0], "the oldest of tool_a");
    let mut order = vec![first_a.id];
    while let Some(rec) = store
        .claim_next(&tools(&["tool_a", "tool_b"]), "w", 60_000)
        .await
        .expect("claim")
    {
        order.push(rec.id);
    }
    let mut expected = vec![of_a[0].clone()];
    expected.extend(all.iter().filter(|id| **id != of_a[0]).cloned());
    assert_eq!(order, expected, "creation order across both tools");
    assert!(
        store
            .claim_next(&[], "w", 60_000)
            .await
            .expect("claim")
            .is_none()
    );
}

/// A lapsed claim of an at-least-once task makes it wait again (the next claim is its
/// next attempt, said in the status message) until its attempts are used up; then, like
/// an at-most-once task at once, it fails with the error given. A live or released
/// lease is left alone.
pub async fn lapsed_claims_are_requeued_or_failed_by_delivery<F: StoreFactory>(factory: &F) {
    let (a, env) = open(factory, "claim_lapse", roomy()).await;
    let b = another(factory, &env).await;
    let owner = alice();
    let kit = tools(&["kit_tool"]);
    let twice = a
        .create(queued(
            &owner,
            "kit_tool",
            Delivery::AtLeastOnce { max_attempts: 2 },
        ))
        .await
        .expect("create");
    let claimed = a
        .claim_next(&kit, "node-a", 1_000)
        .await
        .expect("claim")
        .expect("queued");
    assert_eq!(claimed.id, twice.id);
    a.request_input(
        &owner,
        &twice.id,
        [("ask-1".to_owned(), serde_json::json!({}))].into(),
    )
    .await
    .expect("input");
    assert_eq!(
        b.recover_lapsed(&owner, &twice.id, lost())
            .await
            .expect("recover"),
        Recovery::NotLapsed,
        "the lease is live"
    );
    env.clock.advance(1_000);
    let report = b.sweep().await.expect("sweep");
    assert!(report.lease_lapsed.contains(&twice.key()));
    assert_eq!(
        b.recover_lapsed(&owner, &twice.id, lost())
            .await
            .expect("recover"),
        Recovery::Requeued { attempt: 1 }
    );
    let waiting = a.get(&owner, &twice.id).await.expect("get");
    assert_eq!(waiting.status, TaskStatus::Working);
    assert!(
        waiting.input_requests.is_empty(),
        "the lost run's input is dropped"
    );
    assert!(waiting.lease.is_none());
    assert_eq!(waiting.queued_tool(), Some("kit_tool"));
    let again = b
        .claim_next(&kit, "node-b", 1_000)
        .await
        .expect("claim")
        .expect("waits again");
    assert_eq!(again.id, twice.id);
    assert_eq!(again.attempt(), 2);
    assert_eq!(again.status_message.as_deref(), Some("Attempt 2 of 2"));
    env.clock.advance(1_000);
    assert_eq!(
        a.recover_lapsed(&owner, &twice.id, lost())
            .await
            .expect("recover"),
        Recovery::Failed,
        "no attempt left"
    );
    let failed = a.get(&owner, &twice.id).await.expect("get");
    assert_eq!(failed.status, TaskStatus::Failed);
    assert!(matches!(&failed.outcome, Some(Outcome::Error(e)) if e.message == "worker lost"));
    assert!(
        a.claim_next(&kit, "node-a", 1_000)
            .await
            .expect("claim")
            .is_none()
    );

    let once = a
        .create(queued(&owner, "kit_tool", Delivery::AtMostOnce))
        .await
        .expect("create");
    a.claim_next(&kit, "node-a", 1_000)
        .await
        .expect("claim")
        .expect("queued");
    env.clock.advance(1_000);
    assert_eq!(
        b.recover_lapsed(&owner, &once.id, lost())
            .await
            .expect("recover"),
        Recovery::Failed,
        "at most once: never runs twice"
    );
    assert_eq!(
        b.recover_lapsed(&owner, &once.id, lost())
            .await
            .expect("recover"),
        Recovery::NotLapsed,
        "finished"
    );
    assert!(
        b.claim_next(&kit, "node-b", 1_000)
            .await
            .expect("claim")
            .is_none()
    );
}

/// Cancelling a task that waits for a worker ends it at once, and no claim ever takes
/// it; a claimed task whose cancel was requested ends cancelled when its lease lapses.
pub async fn cancel_of_a_queued_task_never_runs_it<F: StoreFactory>(factory: &F) {
    let (a, env) = open(factory, "claim_cancel", roomy()).await;
    let b = another(factory, &env).await;
    let owner = alice();
    let kit = tools(&["kit_tool"]);
    let task = a
        .create(queued(
            &owner,
            "kit_tool",
            Delivery::AtLeastOnce { max_attempts: 3 },
        ))
        .await
        .expect("create");
    let rec = b.request_cancel(&owner, &task.id).await.expect("cancel");
    assert_eq!(
        rec.status,
        TaskStatus::Cancelled,
        "nobody runs it: cancelled now"
    );
    assert!(
        a.claim_next(&kit, "node-a", 1_000)
            .await
            .expect("claim")
            .is_none(),
        "a cancelled task is never claimed"
    );

    let running = a
        .create(queued(
            &owner,
            "kit_tool",
            Delivery::AtLeastOnce { max_attempts: 3 },
        ))
        .await
        .expect("create");
    a.claim_next(&kit, "node-a", 1_000)
        .await
        .expect("claim")
        .expect("queued");
    let flagged = b.request_cancel(&owner, &running.id).await.expect("cancel");
    assert_eq!(flagged.status, TaskStatus::Working, "its worker decides");
    assert!(flagged.cancel_requested);
    env.clock.advance(1_000);
    assert_eq!(
        b.recover_lapsed(&owner, &running.id, lost())
            .await
            .expect("recover"),
        Recovery::Cancelled,
        "a lapsed task asked to stop is not run again"
    );
    assert!(
        a.claim_next(&kit, "node-a", 1_000)
            .await
            .expect("claim")
            .is_none()
    );
}
