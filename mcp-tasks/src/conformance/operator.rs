//! Rule 22: the operator's view: every owner's tasks, filtered, newest first; one task's
//! whole record; counts by status and tool. A store that answers
//! [`StoreError::Unsupported`] is reported as skipped (the kit names the skip).

use std::collections::BTreeMap;

use mcp_tasks_protocol::jsonrpc::ErrorObject;
use mcp_tasks_protocol::tasks::TaskStatus;

use super::env::StoreFactory;
use super::helpers::{alice, another, json_map, mallory, new_task, open, roomy};
use crate::{
    Job, NewTask, OperatorFilter, OperatorPage, Outcome, Owner, StoreError, TaskId, TaskRecord,
    TaskStore,
};

/// `Some(value)`, or `None` after reporting the skip when the store does not support
/// the operator's view.
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

fn task_of(owner: &Owner, tool: &str) -> NewTask {
    let mut new = new_task(owner);
    new.origin.tool = Some(tool.to_owned());
    new
}

/// Every page of `filter`'s listing, at most `page` long each: the ids, in order.
async fn all_pages<S: TaskStore>(store: &S, filter: &OperatorFilter, page: usize) -> Vec<TaskId> {
    let mut ids = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..10_000 {
        let OperatorPage { tasks, next_cursor } = store
            .operator_list(filter, cursor.as_deref(), page)
            .await
            .expect("operator_list");
        assert!(tasks.len() <= page, "a page longer than its limit");
        for t in &tasks {
            assert!(filter.matches(t), "{filter:?} listed {t:?}");
        }
        ids.extend(tasks.into_iter().map(|t| t.id));
        match next_cursor {
            Some(c) => cursor = Some(c),
            None => return ids,
        }
    }
    panic!("operator listing did not end");
}

/// What `filter` lists of `records`: newest first by `(created_at, id)`.
fn expected(records: &[TaskRecord], filter: &OperatorFilter) -> Vec<TaskId> {
    let mut hits: Vec<&TaskRecord> = records.iter().filter(|r| filter.matches(r)).collect();
    hits.sort_by(|a, b| (b.created_at, &b.id).cmp(&(a.created_at, &a.id)));
    hits.into_iter().map(|r| r.id.clone()).collect()
}

/// The listing spans owners and handles, newest first, in pages without duplicates or
/// gaps; expired tasks are not in it.
pub async fn operator_list_spans_owners_newest_first<F: StoreFactory>(factory: &F) {
    let name = "operator_list_spans_owners_newest_first";
    let (store, env) = open(factory, "operator_list", roomy()).await;
    let other = another(factory, &env).await;
    let mut records = Vec::new();
    for i in 0..31 {
        if i % 4 == 0 {
            env.clock.advance(1);
        }
        let (owner, on) = if i % 2 == 0 {
            (alice(), &store)
        } else {
            (mallory(), &other)
        };
        records.push(
            on.create(task_of(&owner, "kit_tool"))
                .await
                .expect("create"),
        );
    }
    let doomed = store
        .create(NewTask {
            ttl_ms: Some(10),
            ..task_of(&alice(), "kit_tool")
        })
        .await
        .expect("create");
    let all = OperatorFilter::default();
    let Some(first) = supported(name, store.operator_list(&all, None, 100).await) else {
        return;
    };
    assert!(first.tasks.iter().any(|t| t.id == doomed.id));
    env.clock.advance(10);
    let want = expected(&records, &all);
    for page in [1, 4, 31, 100] {
        assert_eq!(
            all_pages(&store, &all, page).await,
            want,
            "page size {page}"
        );
        assert_eq!(
            all_pages(&other, &all, page).await,
            want,
            "other handle, {page}"
        );
    }
}

/// Each filter, and filters together, list exactly the tasks they match.
pub async fn operator_list_filters_combine<F: StoreFactory>(factory: &F) {
    let name = "operator_list_filters_combine";
    let (store, env) = open(factory, "operator_filters", roomy()).await;
    let mut ids = Vec::new();
    for i in 0..24u32 {
        env.clock.advance(3);
        let owner = if i % 3 == 0 { mallory() } else { alice() };
        let tool = if i % 2 == 0 { "fast" } else { "slow" };
        let task = if i % 4 == 1 {
            let node = if i % 8 == 1 { "node-a" } else { "node-b" };
            store
                .create_leased(task_of(&owner, tool), node, 60_000)
                .await
        } else {
            store.create(task_of(&owner, tool)).await
        };
        let task = task.expect("create");
        match i % 6 {
            2 => drop(
                store
                    .complete(&owner, &task.id, json_map(serde_json::json!({})))
                    .await,
            ),
            4 => drop(
                store
                    .fail(&owner, &task.id, ErrorObject::new(-32603, "no"))
                    .await,
            ),
            5 => drop(store.cancel(&owner, &task.id, None).await),
            _ => {}
        }
        ids.push((owner, task.id));
    }
    let mut records = Vec::new();
    for (owner, id) in &ids {
        records.push(store.get(owner, id).await.expect("get"));
    }
    let middle = records[8].created_at;
    let filters = [
        OperatorFilter::default(),
        OperatorFilter {
            status: Some(TaskStatus::Working),
            ..Default::default()
        },
        OperatorFilter {
            status: Some(TaskStatus::Completed),
            ..Default::default()
        },
        OperatorFilter {
            tool: Some("slow".into()),
            ..Default::default()
        },
        OperatorFilter {
            tool: Some("none_such".into()),
            ..Default::default()
        },
        OperatorFilter {
            owner: Some(mallory()),
            ..Default::default()
        },
        OperatorFilter {
            created_from: Some(middle),
            ..Default::default()
        },
        OperatorFilter {
            created_before: Some(middle),
            ..Default::default()
        },
        OperatorFilter {
            lease_holder: Some("node-a".into()),
            ..Default::default()
        },
        OperatorFilter {
            status: Some(TaskStatus::Working),
            tool: Some("slow".into()),
            owner: Some(alice()),
            created_from: Some(records[2].created_at),
            created_before: Some(records[20].created_at),
            lease_holder: Some("node-b".into()),
            text: None,
        },
        OperatorFilter {
            owner: Some(alice()),
            status: Some(TaskStatus::Cancelled),
            ..Default::default()
        },
    ];
    for filter in &filters {
        let Some(_) = supported(name, store.operator_list(filter, None, 1).await) else {
            return;
        };
        let want = expected(&records, filter);
        for page in [1, 5, 100] {
            assert_eq!(all_pages(&store, filter, page).await, want, "{filter:?}");
        }
    }
    // The filters are not empty by accident.
    assert!(!expected(&records, &filters[9]).is_empty());
    assert!(!expected(&records, &filters[10]).is_empty());
}

/// A cursor works with the filter it was issued for only; garbage and an owner
/// listing's cursor are refused.
pub async fn operator_cursor_is_bound_to_its_filter<F: StoreFactory>(factory: &F) {
    let name = "operator_cursor_is_bound_to_its_filter";
    let (store, _env) = open(factory, "operator_cursor", roomy()).await;
    for _ in 0..3 {
        store
            .create(task_of(&alice(), "kit_tool"))
            .await
            .expect("create");
    }
    let all = OperatorFilter::default();
    let Some(page) = supported(name, store.operator_list(&all, None, 1).await) else {
        return;
    };
    let cursor = page.next_cursor.expect("more tasks follow");
    let other = OperatorFilter {
        owner: Some(alice()),
        ..Default::default()
    };
    let owners = store.list(&alice(), None, 1).await.expect("list");
    let owners_cursor = owners.next_cursor.expect("more tasks follow");
    for (filter, bad) in [
        (&other, cursor.as_str()),
        (&all, owners_cursor.as_str()),
        (&all, "not a cursor"),
        (&all, ""),
    ] {
        assert!(
            matches!(
                store.operator_list(filter, Some(bad), 10).await,
                Err(StoreError::InvalidCursor)
            ),
            "{bad:?} with {filter:?}"
        );
    }
    assert!(matches!(
        store.list(&alice(), Some(&cursor), 10).await,
        Err(StoreError::InvalidCursor)
    ));
    assert_eq!(
        store
            .operator_list(&all, Some(&cursor), 10)
            .await
            .expect("own cursor")
            .tasks
            .len(),
        2
    );
}

/// `operator_get` reads any owner's task with its whole record: input requests and
/// answers, the outcome, attempts, the lease holder; an expired or unknown task is not
/// found.
pub async fn operator_get_reads_the_whole_record<F: StoreFactory>(factory: &F) {
    let name = "operator_get_reads_the_whole_record";
    let (store, env) = open(factory, "operator_get", roomy()).await;
    let other = another(factory, &env).await;
    let owner = mallory();
    let mut job = Job::new(json_map(serde_json::json!({ "n": 7 })));
    job.principal = Some("mallory".into());
    let queued = store
        .create(NewTask {
            job: Some(job),
            ..task_of(&owner, "op_tool")
        })
        .await
        .expect("create");
    let claimed = store
        .claim_next(&["op_tool".to_owned()], "node-7", 60_000)
        .await
        .expect("claim")
        .expect("a queued task");
    assert_eq!(claimed.id, queued.id);
    let requests = BTreeMap::from([
        ("a".to_owned(), serde_json::json!({ "q": 1 })),
        ("b".to_owned(), serde_json::json!({ "q": 2 })),
    ]);
    store
        .request_input(&owner, &queued.id, requests)
        .await
        .expect("request");
    store
        .resolve_input(
            &owner,
            &queued.id,
            BTreeMap::from([("a".to_owned(), serde_json::json!("yes"))]),
        )
        .await
        .expect("resolve");
    let Some(read) = supported(name, other.operator_get(&queued.id).await) else {
        return;
    };
    let truth = store.get(&owner, &queued.id).await.expect("get");
    assert_eq!(read, truth);
    assert_eq!(read.owner, owner);
    assert_eq!(read.attempt(), 1);
    assert_eq!(
        read.lease.as_ref().map(|l| l.holder.as_str()),
        Some("node-7")
    );
    assert_eq!(read.input_requests.keys().collect::<Vec<_>>(), vec!["b"]);
    assert_eq!(
        read.input_responses.get("a"),
        Some(&serde_json::json!("yes"))
    );
    let done = store
        .complete(
            &owner,
            &queued.id,
            json_map(serde_json::json!({ "ok": true })),
        )
        .await
        .expect("complete");
    let read = other.operator_get(&queued.id).await.expect("operator_get");
    assert_eq!(read, done.record);
    assert!(matches!(read.outcome, Some(Outcome::Result(_))));
    let short = store
        .create(NewTask {
            ttl_ms: Some(5),
            ..task_of(&alice(), "op_tool")
        })
        .await
        .expect("create");
    env.clock.advance(5);
    for id in [short.id, TaskId::random().expect("rng")] {
        assert!(matches!(
            store.operator_get(&id).await,
            Err(StoreError::NotFound)
        ));
    }
}

/// Counts follow creates, status changes and the sweep, on every handle.
pub async fn operator_counts_by_status_and_tool<F: StoreFactory>(factory: &F) {
    let name = "operator_counts_by_status_and_tool";
    let (store, env) = open(factory, "operator_counts", roomy()).await;
    let other = another(factory, &env).await;
    let Some(empty) = supported(name, store.operator_counts().await) else {
        return;
    };
    assert_eq!(empty.total(), 0);
    assert!(empty.by_tool.is_empty());
    let mut tasks = Vec::new();
    for i in 0..9 {
        let tool = ["x", "y", "z"][i % 3];
        let ttl = if i == 8 { Some(10) } else { None };
        tasks.push(
            other
                .create(NewTask {
                    ttl_ms: ttl,
                    ..task_of(&alice(), tool)
                })
                .await
                .expect("create"),
        );
    }
    let mut toolless = new_task(&mallory());
    toolless.origin.tool = None;
    store.create(toolless).await.expect("create");
    let a = alice();
    store
        .complete(&a, &tasks[0].id, json_map(serde_json::json!({})))
        .await
        .expect("complete");
    store
        .fail(&a, &tasks[1].id, ErrorObject::new(-32603, "no"))
        .await
        .expect("fail");
    store.cancel(&a, &tasks[2].id, None).await.expect("cancel");
    store
        .request_input(
            &a,
            &tasks[3].id,
            BTreeMap::from([("k".to_owned(), serde_json::json!({}))]),
        )
        .await
        .expect("request");
    let counts = other.operator_counts().await.expect("counts");
    assert_eq!(
        (
            counts.working,
            counts.input_required,
            counts.completed,
            counts.failed,
            counts.cancelled
        ),
        (6, 1, 1, 1, 1),
        "{counts:?}"
    );
    assert_eq!(
        counts.by_tool,
        BTreeMap::from([("x".into(), 3), ("y".into(), 3), ("z".into(), 3)])
    );
    env.clock.advance(10);
    store.sweep().await.expect("sweep");
    let counts = store.operator_counts().await.expect("counts");
    assert_eq!(counts.working, 5, "{counts:?}");
    assert_eq!(counts.total(), 9, "{counts:?}");
    assert_eq!(counts.by_tool.get("z"), Some(&2));
}

/// Listings that walk long indexes (more entries than any backend reads at a time, most
/// of them passed over by the filter) still return every match once, in order.
pub async fn operator_list_walks_long_indexes<F: StoreFactory>(factory: &F) {
    let name = "operator_list_walks_long_indexes";
    let (store, env) = open(factory, "operator_long", roomy()).await;
    let mut records = Vec::new();
    for i in 0..1200u32 {
        if i % 7 == 0 {
            env.clock.advance(1);
        }
        let owner = if i % 2 == 0 { alice() } else { mallory() };
        let tool = ["a", "b", "c"][(i % 3) as usize];
        records.push(store.create(task_of(&owner, tool)).await.expect("create"));
    }
    let filters = [
        OperatorFilter::default(),
        OperatorFilter {
            owner: Some(alice()),
            tool: Some("b".into()),
            ..Default::default()
        },
        OperatorFilter {
            tool: Some("c".into()),
            created_before: Some(records[900].created_at),
            created_from: Some(records[100].created_at),
            ..Default::default()
        },
        OperatorFilter {
            status: Some(TaskStatus::Working),
            owner: Some(mallory()),
            ..Default::default()
        },
    ];
    for filter in &filters {
        let Some(_) = supported(name, store.operator_list(filter, None, 1).await) else {
            return;
        };
        let want = expected(&records, filter);
        assert!(want.len() > 100, "{filter:?}");
        for page in [37, 500] {
            assert_eq!(all_pages(&store, filter, page).await, want, "{filter:?}");
        }
    }
}

/// The text filter finds the tasks whose status message holds the text, ignoring the
/// case of ASCII letters only; `%`, `_` and `\` are plain characters; a task without a
/// status message never matches; the text combines with the other filters, pages
/// without duplicates or gaps, and its cursors are bound to it.
pub async fn operator_list_filters_by_text<F: StoreFactory>(factory: &F) {
    let name = "operator_list_filters_by_text";
    let (store, env) = open(factory, "operator_text", roomy()).await;
    let messages = [
        Some("Copying file 3 of 7"),
        Some("COPYING FILE 4 OF 7"),
        Some("copy done: 50% of the batch"),
        Some("50 of the batch"),
        Some("waiting on a_b"),
        Some("waiting on axb"),
        Some("path C:\\tmp\\x"),
        Some("Étape 2 : copie"),
        Some("étape 3 : copie"),
        Some("<b>bold</b> 'quoted' \"twice\""),
        None,
        Some(""),
    ];
    let mut ids = Vec::new();
    for round in 0..3u32 {
        for (i, message) in messages.iter().enumerate() {
            env.clock.advance(1);
            let owner = if (i + round as usize).is_multiple_of(2) {
                alice()
            } else {
                mallory()
            };
            let tool = if round == 1 { "slow" } else { "fast" };
            let task = store.create(task_of(&owner, tool)).await.expect("create");
            if let Some(message) = message {
                store
                    .set_status_message(&owner, &task.id, Some((*message).to_owned()))
                    .await
                    .expect("set status message");
            }
            if round == 2 && i.is_multiple_of(3) {
                store.cancel(&owner, &task.id, None).await.expect("cancel");
            }
            ids.push((owner, task.id));
        }
    }
    let mut records = Vec::new();
    for (owner, id) in &ids {
        records.push(store.get(owner, id).await.expect("get"));
    }
    let text = |t: &str| OperatorFilter {
        text: Some(t.to_owned()),
        ..Default::default()
    };
    let cases: [(OperatorFilter, usize); 12] = [
        (text("copying FILE"), 6),
        (text("copy"), 9),
        (text("50%"), 3),
        (text("a_b"), 3),
        (text("C:\\TMP\\"), 3),
        (text("Étape"), 3),
        (text("étape"), 3),
        (text("<b>bold</b> 'QUOTED' \"twice\""), 3),
        (text("no such text"), 0),
        (
            OperatorFilter {
                owner: Some(alice()),
                tool: Some("slow".into()),
                ..text("of 7")
            },
            1,
        ),
        (
            OperatorFilter {
                status: Some(TaskStatus::Cancelled),
                ..text("7")
            },
            1,
        ),
        (
            OperatorFilter {
                status: Some(TaskStatus::Working),
                created_from: Some(records[12].created_at),
                ..text("waiting on ")
            },
            4,
        ),
    ];
    for (filter, count) in &cases {
        let Some(_) = supported(name, store.operator_list(filter, None, 1).await) else {
            return;
        };
        let want = expected(&records, filter);
        assert_eq!(want.len(), *count, "the kit's own count for {filter:?}");
        for page in [1, 2, 100] {
            assert_eq!(all_pages(&store, filter, page).await, want, "{filter:?}");
        }
    }
    // An empty text matches every task that has a status message, even an empty one.
    let any = text("");
    assert_eq!(
        all_pages(&store, &any, 7).await,
        expected(&records, &any),
        "empty text"
    );
    assert_eq!(expected(&records, &any).len(), records.len() - 3);
    // A cursor of a text listing is refused by another text and by no text.
    let first = store
        .operator_list(&text("copy"), None, 1)
        .await
        .expect("list");
    let cursor = first.next_cursor.expect("more than one page");
    for other in [text("cop"), OperatorFilter::default()] {
        assert!(
            matches!(
                store.operator_list(&other, Some(&cursor), 10).await,
                Err(StoreError::InvalidCursor)
            ),
            "{other:?}"
        );
    }
}
