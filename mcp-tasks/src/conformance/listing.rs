//! Rule 13: listing with a keyset cursor.

use std::collections::HashSet;
use std::sync::Arc;

use super::env::StoreFactory;
use super::helpers::{alice, another, new_task, open, roomy};
use crate::{Limits, NewTask, StoreError, TaskId, TaskStore};

async fn all_pages<S: TaskStore>(store: &S, owner: &crate::Owner, page: usize) -> Vec<TaskId> {
    let mut ids = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..100_000 {
        let p = store
            .list(owner, cursor.as_deref(), page)
            .await
            .expect("list");
        assert!(p.tasks.len() <= page);
        ids.extend(p.tasks.into_iter().map(|t| t.id));
        match p.next_cursor {
            Some(c) => cursor = Some(c),
            None => return ids,
        }
    }
    panic!("listing did not end");
}

/// Pages cover every task once, oldest first.
pub async fn list_pages_have_no_duplicates_and_no_gaps<F: StoreFactory>(factory: &F) {
    let (store, env) = open(factory, "list_pages", roomy()).await;
    let owner = alice();
    let mut created = Vec::new();
    for i in 0..53 {
        if i % 5 == 0 {
            env.clock.advance(1);
        }
        created.push(store.create(new_task(&owner)).await.expect("create"));
    }
    let mut expected = created.clone();
    expected.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
    let expected: Vec<TaskId> = expected.into_iter().map(|t| t.id).collect();
    for page in [1, 7, 53, 100] {
        assert_eq!(
            all_pages(&store, &owner, page).await,
            expected,
            "page size {page}"
        );
    }
}

/// Tasks present for the whole listing are each listed once, while others are inserted
/// (on another handle) and others expire.
pub async fn list_is_stable_under_concurrent_inserts_and_expiry<F: StoreFactory>(factory: &F) {
    let (store, env) = open(factory, "list_stable", roomy()).await;
    let writer = Arc::new(another(factory, &env).await);
    let owner = alice();
    let short: Vec<TaskId> = {
        let mut ids = Vec::new();
        for _ in 0..20 {
            ids.push(
                store
                    .create(NewTask {
                        trace_context: None,
                        ttl_ms: Some(50),
                        ..new_task(&owner)
                    })
                    .await
                    .expect("create")
                    .id,
            );
        }
        ids
    };
    let mut stable = HashSet::new();
    for _ in 0..60 {
        stable.insert(
            store
                .create(NewTask {
                    trace_context: None,
                    ttl_ms: Some(3_600_000),
                    ..new_task(&owner)
                })
                .await
                .expect("create")
                .id,
        );
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut round = 0;
    loop {
        let page = store
            .list(&owner, cursor.as_deref(), 9)
            .await
            .expect("list");
        seen.extend(page.tasks.iter().map(|t| t.id.clone()));
        // Meanwhile: inserts on another node, and the clock passes the short TTLs.
        for _ in 0..3 {
            writer.create(new_task(&owner)).await.expect("insert");
        }
        round += 1;
        if round == 2 {
            env.clock.advance(100);
            store.sweep().await.expect("sweep");
        }
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
        assert!(round < 1_000, "listing did not end");
    }
    let unique: HashSet<&TaskId> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len(), "a task was listed twice");
    for id in &stable {
        assert!(
            unique.contains(id),
            "task {id} present throughout was missed"
        );
    }
    for id in short.iter().filter(|id| unique.contains(id)) {
        assert!(short.contains(id));
    }
}

/// A cursor the store did not issue is refused.
pub async fn list_rejects_foreign_cursor<F: StoreFactory>(factory: &F) {
    let (store, _env) = open(factory, "list_bad_cursor", roomy()).await;
    let owner = alice();
    store.create(new_task(&owner)).await.expect("create");
    for bad in [
        "",
        "garbage",
        "c1.zz.nothex",
        "optional-cursor-value",
        "c1.1.short",
    ] {
        assert!(
            matches!(
                store.list(&owner, Some(bad), 10).await,
                Err(StoreError::InvalidCursor)
            ),
            "{bad:?}"
        );
    }
}

/// 10,000 tasks of one owner are listed completely.
pub async fn list_10000_tasks_completely<F: StoreFactory>(factory: &F) {
    let limits = Limits {
        max_live_tasks_per_owner: 20_000,
        ..roomy()
    };
    let (store, env) = open(factory, "list_10000", limits).await;
    let owner = alice();
    let mut expected = HashSet::new();
    for i in 0..10_000 {
        if i % 100 == 0 {
            env.clock.advance(1);
        }
        expected.insert(store.create(new_task(&owner)).await.expect("create").id);
    }
    let listed = all_pages(&store, &owner, 500).await;
    assert_eq!(listed.len(), 10_000);
    assert_eq!(listed.into_iter().collect::<HashSet<_>>(), expected);
}
