//! Rule 23: a task's log. Every change of state writes its entry in the same write,
//! tools append their own, numbered from 0 without gaps across handles, bounded by
//! retention, scoped by owner, gone with the task. A store that keeps no logs says so
//! ([`TaskStore::keeps_logs`]) and is reported as not applicable.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use mcp_tasks_protocol::jsonrpc::ErrorObject;
use mcp_tasks_protocol::tasks::TaskStatus;
use serde_json::json;

use super::env::StoreFactory;
use super::helpers::{alice, another, json_map, mallory, new_task, open, roomy};
use crate::log::kinds;
use crate::{
    Actor, Clock, Limit, Limits, LogDraft, LogEntry, StoreError, TaskEvent, TaskId, TaskStore,
};

/// True when the store keeps logs; otherwise checks that it refuses them plainly and
/// reports the behaviour as not applicable.
pub(super) async fn keeps_logs<S: TaskStore>(store: &S, behaviour: &str) -> bool {
    if store.keeps_logs() {
        return true;
    }
    let refused = store
        .read_log(&alice(), &TaskId::from_wire("0".repeat(32)), None, 10)
        .await;
    assert!(
        matches!(refused, Err(StoreError::Unsupported { .. })),
        "{behaviour}: a store without logs answers Unsupported, got {refused:?}"
    );
    super::report_not_applicable(&format!("{behaviour}: the store keeps no task logs"));
    false
}

fn text(s: &str) -> LogDraft {
    LogDraft {
        kind: "com.example.kit.text".into(),
        payload: json_map(json!({ "text": s })),
        node: None,
        actor: Actor::Worker,
    }
}

/// Every entry of the task's log, from the earliest kept, read in pages of 3.
pub(super) async fn whole_log<S: TaskStore>(store: &S, id: &TaskId) -> Vec<LogEntry> {
    let mut entries: Vec<LogEntry> = Vec::new();
    loop {
        let after = entries.last().map(|e| e.seq);
        let page = store
            .read_log(&alice(), id, after, 3)
            .await
            .expect("read the log");
        if page.entries.is_empty() {
            assert_eq!(
                after.map_or(page.earliest, |a| a + 1),
                page.next,
                "an empty page is the end of the log"
            );
            return entries;
        }
        assert!(page.entries.len() <= 3, "a page holds at most the limit");
        entries.extend(page.entries);
    }
}

pub(super) fn kinds_of(entries: &[LogEntry]) -> Vec<&str> {
    entries.iter().map(|e| e.kind.as_str()).collect()
}

fn assert_numbered_from(entries: &[LogEntry], first: u64) {
    for (i, e) in entries.iter().enumerate() {
        assert_eq!(e.seq, first + i as u64, "seqs without gaps: {entries:?}");
    }
}

/// The log tells the task's life: created (seq 0, `working`, by the owner), status
/// message, input asked (with the question), answers (keys only), cancel asked, and the
/// terminal entry last; times come from the store's clock.
pub async fn log_records_every_change_of_state<F: StoreFactory>(factory: &F) {
    let (store, env) = open(factory, "log_every_change", roomy()).await;
    if !keeps_logs(&store, "log_records_every_change_of_state").await {
        return;
    }
    let owner = alice();
    let start = env.clock.now_ms();
    let task = store.create(new_task(&owner)).await.expect("create");
    env.clock.advance(5);
    store
        .set_status_message(&owner, &task.id, Some("half way".into()))
        .await
        .expect("message");
    let question = json!({ "method": "elicitation/create", "params": { "message": "Sure?" } });
    store
        .request_input(
            &owner,
            &task.id,
            BTreeMap::from([("ask-1".to_owned(), question.clone())]),
        )
        .await
        .expect("ask");
    store
        .resolve_input(
            &owner,
            &task.id,
            BTreeMap::from([("ask-1".to_owned(), json!({ "action": "accept" }))]),
        )
        .await
        .expect("answer");
    // An answer to nothing pending writes nothing.
    store
        .resolve_input(
            &owner,
            &task.id,
            BTreeMap::from([("ask-9".to_owned(), json!({}))]),
        )
        .await
        .expect("stray answer");
    store
        .request_cancel(&owner, &task.id)
        .await
        .expect("cancel asked");
    store
        .fail(&owner, &task.id, ErrorObject::new(-32603, "the tool broke"))
        .await
        .expect("fail");
    // A losing terminal write writes nothing.
    let late = store
        .complete(&owner, &task.id, Default::default())
        .await
        .expect("late complete");
    assert!(!late.won);

    let entries = whole_log(&store, &task.id).await;
    assert_numbered_from(&entries, 0);
    assert_eq!(
        kinds_of(&entries),
        [
            kinds::STATUS,
            kinds::STATUS,
            kinds::INPUT,
            kinds::ANSWER,
            kinds::CANCEL,
            kinds::STATUS
        ]
    );
    let created = &entries[0];
    assert_eq!(created.payload["status"], "working");
    assert_eq!(created.actor, Actor::Owner);
    assert_eq!(created.at, start);
    assert_eq!(entries[1].payload["statusMessage"], "half way");
    assert_eq!(entries[1].actor, Actor::Worker);
    assert_eq!(entries[1].at, start + 5);
    assert_eq!(entries[2].payload["status"], "input_required");
    assert_eq!(entries[2].payload["inputRequests"]["ask-1"], question);
    assert_eq!(entries[3].payload["keys"], json!(["ask-1"]));
    assert_eq!(entries[3].payload["status"], "working");
    assert_eq!(
        entries[3].payload.get("answers"),
        None,
        "answers stay out of the log"
    );
    assert_eq!(entries[4].actor, Actor::Owner);
    let last = &entries[5];
    assert_eq!(last.payload["status"], "failed");
    assert_eq!(last.payload["error"]["message"], "the tool broke");

    // A completed task whose tool reported an error says so in its last entry.
    let other = store.create(new_task(&owner)).await.expect("create");
    let result = json_map(json!({ "content": [], "isError": true }));
    store
        .complete(&owner, &other.id, result)
        .await
        .expect("complete");
    let entries = whole_log(&store, &other.id).await;
    assert_eq!(kinds_of(&entries), [kinds::STATUS, kinds::STATUS]);
    assert_eq!(entries[1].payload["status"], "completed");
    assert_eq!(entries[1].payload["isError"], true);
}

/// Tools append through two handles at once, while the task also changes: every entry
/// gets its own `seq`, none skipped, each handle's entries in the order it wrote them.
pub async fn log_appends_from_two_handles_number_without_gaps<F: StoreFactory>(factory: &F) {
    let (a, env) = open(factory, "log_two_handles", roomy()).await;
    if !keeps_logs(&a, "log_appends_from_two_handles_number_without_gaps").await {
        return;
    }
    let b = Arc::new(another(factory, &env).await);
    let a = Arc::new(a);
    let owner = alice();
    let task = a.create(new_task(&owner)).await.expect("create");
    const EACH: usize = 40;
    let mut writers = Vec::new();
    for (name, store) in [("a", Arc::clone(&a)), ("b", Arc::clone(&b))] {
        let (owner, id) = (owner.clone(), task.id.clone());
        writers.push(tokio::spawn(async move {
            for i in 0..EACH {
                let seq = store
                    .append_log(&owner, &id, vec![text(&format!("{name}-{i}"))])
                    .await
                    .expect("append");
                assert!(seq >= 1, "seq 0 is the task's creation");
                if i % 10 == 0 {
                    store
                        .set_status_message(&owner, &id, Some(format!("{name} at {i}")))
                        .await
                        .expect("message");
                }
            }
        }));
    }
    for w in writers {
        w.await.expect("writer");
    }
    let entries = whole_log(&*b, &task.id).await;
    assert_numbered_from(&entries, 0);
    assert_eq!(entries.len(), 1 + 2 * EACH + 2 * (EACH / 10));
    for name in ["a", "b"] {
        let texts: Vec<String> = entries
            .iter()
            .filter_map(|e| e.payload.get("text")?.as_str().map(str::to_owned))
            .filter(|t| t.starts_with(&format!("{name}-")))
            .collect();
        let expected: Vec<String> = (0..EACH).map(|i| format!("{name}-{i}")).collect();
        assert_eq!(texts, expected, "{name}'s entries in its own order");
    }
}

/// A batch of entries is appended as one: consecutive seqs, the last returned; pages
/// after a cursor start right after it.
pub async fn log_reads_pages_after_a_cursor<F: StoreFactory>(factory: &F) {
    let (store, _env) = open(factory, "log_pages", roomy()).await;
    if !keeps_logs(&store, "log_reads_pages_after_a_cursor").await {
        return;
    }
    let owner = alice();
    let task = store.create(new_task(&owner)).await.expect("create");
    let last = store
        .append_log(
            &owner,
            &task.id,
            (0..7).map(|i| text(&i.to_string())).collect(),
        )
        .await
        .expect("append");
    assert_eq!(last, 7);
    let page = store
        .read_log(&owner, &task.id, Some(2), 2)
        .await
        .expect("read");
    assert_eq!(
        page.entries.iter().map(|e| e.seq).collect::<Vec<_>>(),
        [3, 4]
    );
    assert_eq!((page.earliest, page.next), (0, 8));
    assert_eq!(page.entries[0].payload["text"], "2");
    let end = store
        .read_log(&owner, &task.id, Some(7), 10)
        .await
        .expect("read at the end");
    assert!(end.entries.is_empty());
    assert_eq!(end.next, 8);
    let ahead = store
        .read_log(&owner, &task.id, Some(100), 10)
        .await
        .expect("read past the end");
    assert!(ahead.entries.is_empty(), "nothing after a cursor ahead");
}

/// Retention keeps the newest entries within the count and the bytes; the earliest kept
/// is reported, so a reader behind it knows entries are gone.
pub async fn log_retention_drops_the_oldest_first<F: StoreFactory>(factory: &F) {
    let limits = Limits {
        max_log_entries: 5,
        max_log_bytes: 4_000,
        ..roomy()
    };
    let (store, _env) = open(factory, "log_retention", limits).await;
    if !keeps_logs(&store, "log_retention_drops_the_oldest_first").await {
        return;
    }
    let owner = alice();
    let task = store.create(new_task(&owner)).await.expect("create");
    for i in 0..9 {
        store
            .append_log(&owner, &task.id, vec![text(&i.to_string())])
            .await
            .expect("append");
    }
    let page = store
        .read_log(&owner, &task.id, None, 100)
        .await
        .expect("read");
    assert_eq!((page.earliest, page.next), (5, 10), "{page:?}");
    assert_eq!(
        page.entries.iter().map(|e| e.seq).collect::<Vec<_>>(),
        [5, 6, 7, 8, 9]
    );
    assert!(page.is_gone_after(Some(3)));
    assert!(!page.is_gone_after(Some(4)));
    let behind = store
        .read_log(&owner, &task.id, Some(1), 100)
        .await
        .expect("read behind");
    assert_eq!(behind.earliest, 5);
    assert_eq!(behind.entries.first().map(|e| e.seq), Some(5));

    // Bytes: three entries of ~1.5 KB fit 4,000 bytes twice, not three times.
    let big = "x".repeat(1_500);
    for _ in 0..3 {
        store
            .append_log(&owner, &task.id, vec![text(&big)])
            .await
            .expect("append big");
    }
    let page = store
        .read_log(&owner, &task.id, None, 100)
        .await
        .expect("read");
    assert_eq!(page.next, 13);
    assert_eq!(
        page.entries.iter().map(|e| e.seq).collect::<Vec<_>>(),
        [11, 12],
        "the oldest go first until the bytes fit"
    );
    let total: usize = page.entries.iter().map(LogEntry::size).sum();
    assert!(total <= 4_000);

    // One entry bigger than the whole budget is kept alone: the newest always stays.
    let huge = Limits {
        max_log_bytes: 100,
        ..roomy()
    };
    let (small, _env) = open(factory, "log_retention_newest", huge).await;
    let task = small.create(new_task(&owner)).await.expect("create");
    small
        .append_log(&owner, &task.id, vec![text(&big)])
        .await
        .expect("append");
    let page = small
        .read_log(&owner, &task.id, None, 100)
        .await
        .expect("read");
    assert_eq!(page.entries.len(), 1);
    assert_eq!(page.entries[0].seq, 1);
}

/// Another owner reads and appends as if the task did not exist; an unknown id is not
/// found; an expired task's log is gone with it, also after the sweep.
pub async fn log_is_owner_scoped_and_goes_with_the_task<F: StoreFactory>(factory: &F) {
    let (store, env) = open(factory, "log_scope_ttl", roomy()).await;
    if !keeps_logs(&store, "log_is_owner_scoped_and_goes_with_the_task").await {
        return;
    }
    let owner = alice();
    let mut new = new_task(&owner);
    new.ttl_ms = Some(1_000);
    let task = store.create(new).await.expect("create");
    store
        .append_log(&owner, &task.id, vec![text("secret")])
        .await
        .expect("append");
    for result in [
        store.read_log(&mallory(), &task.id, None, 10).await.err(),
        store
            .read_log(&owner, &TaskId::from_wire("f".repeat(32)), None, 10)
            .await
            .err(),
    ] {
        assert!(matches!(result, Some(StoreError::NotFound)), "{result:?}");
    }
    let foreign = store
        .append_log(&mallory(), &task.id, vec![text("x")])
        .await;
    assert!(matches!(foreign, Err(StoreError::NotFound)), "{foreign:?}");
    env.clock.advance(1_000);
    let expired = store.read_log(&owner, &task.id, None, 10).await;
    assert!(matches!(expired, Err(StoreError::NotFound)), "{expired:?}");
    store.sweep().await.expect("sweep");
    let swept = store.read_log(&owner, &task.id, None, 10).await;
    assert!(matches!(swept, Err(StoreError::NotFound)), "{swept:?}");
}

/// A finished task takes no more entries; a tool's type needs a prefix of its own and
/// an entry past the size limit is refused; nothing refused is written.
pub async fn log_append_refusals_write_nothing<F: StoreFactory>(factory: &F) {
    let limits = Limits {
        max_log_entry_bytes: 1_000,
        ..roomy()
    };
    let (store, _env) = open(factory, "log_refusals", limits).await;
    if !keeps_logs(&store, "log_append_refusals_write_nothing").await {
        return;
    }
    let owner = alice();
    let task = store.create(new_task(&owner)).await.expect("create");
    let mut bare = text("x");
    bare.kind = "progress".into();
    let mut spec = text("x");
    spec.kind = "io.modelcontextprotocol/status".into();
    for draft in [bare, spec] {
        let refused = store.append_log(&owner, &task.id, vec![draft]).await;
        assert!(
            matches!(refused, Err(StoreError::InvalidLogType { .. })),
            "{refused:?}"
        );
    }
    let big = store
        .append_log(&owner, &task.id, vec![text("a"), text(&"y".repeat(1_000))])
        .await;
    assert!(
        matches!(
            big,
            Err(StoreError::LimitExceeded {
                limit: Limit::LogEntryBytes,
                ..
            })
        ),
        "{big:?}"
    );
    store
        .complete(&owner, &task.id, Default::default())
        .await
        .expect("complete");
    let late = store.append_log(&owner, &task.id, vec![text("late")]).await;
    assert!(
        matches!(
            late,
            Err(StoreError::Terminal {
                status: TaskStatus::Completed
            })
        ),
        "{late:?}"
    );
    let entries = whole_log(&store, &task.id).await;
    assert_eq!(
        kinds_of(&entries),
        [kinds::STATUS, kinds::STATUS],
        "only the creation and the completion"
    );
}

/// An append is announced to every handle ([`TaskEvent::Logged`] with its last seq), so
/// a reader on another node wakes up.
pub async fn log_appends_wake_the_other_handle<F: StoreFactory>(factory: &F) {
    let (a, env) = open(factory, "log_wakes", roomy()).await;
    if !keeps_logs(&a, "log_appends_wake_the_other_handle").await {
        return;
    }
    let b = another(factory, &env).await;
    let mut feed = b.events();
    let owner = alice();
    let task = a.create(new_task(&owner)).await.expect("create");
    let seq = a
        .append_log(&owner, &task.id, vec![text("1"), text("2")])
        .await
        .expect("append");
    let heard = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match feed.recv().await {
                Ok(TaskEvent::Logged { key, seq }) if key.id == task.id => return seq,
                Ok(_) => continue,
                Err(crate::EventError::Lagged(_)) => continue,
                Err(e) => panic!("event feed failed: {e}"),
            }
        }
    })
    .await
    .expect("the append is announced within 10 s");
    assert_eq!(heard, seq);
    let page = b
        .read_log(&owner, &task.id, Some(0), 10)
        .await
        .expect("read");
    assert_eq!(
        page.entries.len(),
        2,
        "the other handle reads what was announced"
    );
}
