//! Rule 25: idempotent create. At most one task per `(owner, key)` while that task is
//! kept; a repeat with the same fingerprint gets it (`AlreadyExists`, its current
//! record), one with another is refused (`IdempotencyConflict`); neither writes or counts
//! anything; atomic across handles; scoped by owner; free again once the task expired.
//! A store that keeps no keys says so ([`TaskStore::supports_idempotency`]), refuses a
//! create carrying one with `Unsupported`, and is reported as not applicable.

use super::env::StoreFactory;
use super::helpers::{alice, another, mallory, new_task, open, roomy};
use crate::{Idempotency, Limits, NewTask, Owner, StoreError, TaskRecord, TaskStore};

/// True when the store keeps idempotency keys; otherwise checks that it refuses them
/// plainly (never creating a task) and reports the behaviour as not applicable.
async fn keeps_keys<S: TaskStore>(store: &S, behaviour: &str) -> bool {
    if store.supports_idempotency() {
        return true;
    }
    let owner = alice();
    let refused = store.create(keyed(&owner, "k", "f")).await;
    assert!(
        matches!(refused, Err(StoreError::Unsupported { .. })),
        "{behaviour}: a store without idempotency keys answers Unsupported, got {refused:?}"
    );
    let page = store.list(&owner, None, 10).await.expect("list");
    assert!(
        page.tasks.is_empty(),
        "{behaviour}: a refused create stored a task"
    );
    super::report_not_applicable(&format!("{behaviour}: the store keeps no idempotency keys"));
    false
}

fn keyed(owner: &Owner, key: &str, fingerprint: &str) -> NewTask {
    NewTask {
        idempotency: Some(Idempotency::new(key, fingerprint).expect("a valid key")),
        ..new_task(owner)
    }
}

/// The task an `AlreadyExists` carries; panics on anything else.
fn existing(result: Result<TaskRecord, StoreError>, what: &str) -> TaskRecord {
    match result {
        Err(StoreError::AlreadyExists { task }) => *task,
        other => panic!("{what}: expected AlreadyExists, got {other:?}"),
    }
}

async fn count<S: TaskStore>(store: &S, owner: &Owner) -> usize {
    store
        .list(owner, None, 1_000)
        .await
        .expect("list")
        .tasks
        .len()
}

/// A repeat with the same key and fingerprint creates nothing and answers
/// `AlreadyExists` with the first task as it stands now (through `create` and
/// `create_leased`, on another handle too, also once the task changed or finished).
pub async fn idempotent_create_returns_the_first_task<F: StoreFactory>(factory: &F) {
    let (a, env) = open(factory, "idem_same", roomy()).await;
    if !keeps_keys(&a, "idempotent_create_returns_the_first_task").await {
        return;
    }
    let b = another(factory, &env).await;
    let owner = alice();
    let first = a.create(keyed(&owner, "k1", "fp")).await.expect("create");
    assert_eq!(
        first.idempotency,
        Some(Idempotency::new("k1", "fp").expect("key")),
        "the record keeps its key"
    );
    let again = existing(a.create(keyed(&owner, "k1", "fp")).await, "repeat");
    assert_eq!(again, first, "the repeat gets the first task as it stands");
    let leased = existing(
        b.create_leased(keyed(&owner, "k1", "fp"), "w1", 30_000)
            .await,
        "create_leased repeat on another handle",
    );
    assert_eq!(leased.id, first.id);
    assert!(leased.lease.is_none(), "the repeat leased nothing");

    let changed = a
        .set_status_message(&owner, &first.id, Some("halfway".into()))
        .await
        .expect("status message");
    let again = existing(b.create(keyed(&owner, "k1", "fp")).await, "after a change");
    assert_eq!(again.id, first.id);
    assert_eq!(again.revision, changed.revision, "its current record");
    assert_eq!(again.status_message.as_deref(), Some("halfway"));

    a.complete(&owner, &first.id, Default::default())
        .await
        .expect("complete");
    let again = existing(a.create(keyed(&owner, "k1", "fp")).await, "after the end");
    assert_eq!(again.id, first.id, "a finished task still holds its key");
    assert!(again.is_terminal());

    // Another key is another task; no key at all is an ordinary create.
    let other = a.create(keyed(&owner, "k2", "fp")).await.expect("k2");
    assert_ne!(other.id, first.id);
    let plain = a.create(new_task(&owner)).await.expect("no key");
    assert!(plain.idempotency.is_none());
    assert_eq!(count(&a, &owner).await, 3, "the repeats created nothing");
}

/// Another fingerprint with a used key is `IdempotencyConflict`; neither it nor a repeat
/// counts against the live-task limit or writes anything.
pub async fn idempotency_conflict_on_other_arguments<F: StoreFactory>(factory: &F) {
    let limits = Limits {
        max_live_tasks_per_owner: 1,
        ..roomy()
    };
    let (store, _env) = open(factory, "idem_conflict", limits).await;
    if !keeps_keys(&store, "idempotency_conflict_on_other_arguments").await {
        return;
    }
    let owner = alice();
    let first = store
        .create(keyed(&owner, "k", "args-1"))
        .await
        .expect("create");
    let conflict = store.create(keyed(&owner, "k", "args-2")).await;
    assert!(
        matches!(conflict, Err(StoreError::IdempotencyConflict)),
        "other arguments: expected IdempotencyConflict, got {conflict:?}"
    );
    let leased = store
        .create_leased(keyed(&owner, "k", "args-2"), "w1", 30_000)
        .await;
    assert!(
        matches!(leased, Err(StoreError::IdempotencyConflict)),
        "create_leased with other arguments: got {leased:?}"
    );
    // At the limit, a repeat still finds its task rather than the limit.
    let again = existing(store.create(keyed(&owner, "k", "args-1")).await, "repeat");
    assert_eq!(again, first, "nothing changed the first task");
    assert!(matches!(
        store.create(keyed(&owner, "k2", "args-1")).await,
        Err(StoreError::LimitExceeded { .. })
    ));
    assert_eq!(count(&store, &owner).await, 1);
}

/// Keys are scoped by owner: two owners with one key get two tasks, each its own.
pub async fn idempotency_keys_are_scoped_by_owner<F: StoreFactory>(factory: &F) {
    let (store, _env) = open(factory, "idem_owners", roomy()).await;
    if !keeps_keys(&store, "idempotency_keys_are_scoped_by_owner").await {
        return;
    }
    let (a, m) = (alice(), mallory());
    let alices = store.create(keyed(&a, "shared", "fp-a")).await.expect("a");
    let mallorys = store
        .create(keyed(&m, "shared", "fp-m"))
        .await
        .expect("another owner's key never collides");
    assert_ne!(alices.id, mallorys.id);
    assert_eq!(mallorys.owner, m);
    let again = existing(store.create(keyed(&m, "shared", "fp-m")).await, "mallory");
    assert_eq!(again.id, mallorys.id, "each owner gets its own task");
    let again = existing(store.create(keyed(&a, "shared", "fp-a")).await, "alice");
    assert_eq!(again.id, alices.id);
    assert_eq!(count(&store, &a).await, 1);
    assert_eq!(count(&store, &m).await, 1);
}

/// Sixteen concurrent creates with one key, over eight handles: exactly one creates the
/// task, every other answers `AlreadyExists` with it.
pub async fn concurrent_idempotent_creates_make_one_task<F: StoreFactory>(factory: &F) {
    let (first, env) = open(factory, "idem_race", roomy()).await;
    if !keeps_keys(&first, "concurrent_idempotent_creates_make_one_task").await {
        return;
    }
    let mut handles = vec![first];
    for _ in 1..8 {
        handles.push(another(factory, &env).await);
    }
    let owner = alice();
    let calls = (0..16).map(|i| {
        let store = &handles[i % handles.len()];
        let new = keyed(&owner, "race", "fp");
        async move {
            if i % 2 == 0 {
                store.create(new).await
            } else {
                store.create_leased(new, &format!("w{i}"), 30_000).await
            }
        }
    });
    let results = futures::future::join_all(calls).await;
    let mut created = Vec::new();
    let mut found = Vec::new();
    for result in results {
        match result {
            Ok(task) => created.push(task.id),
            Err(StoreError::AlreadyExists { task }) => found.push(task.id),
            Err(e) => panic!("a concurrent create failed: {e:?}"),
        }
    }
    assert_eq!(created.len(), 1, "exactly one create stores the task");
    assert!(
        found.iter().all(|id| *id == created[0]),
        "every other create gets that task"
    );
    assert_eq!(count(&handles[3], &owner).await, 1);
}

/// Once the task expired the key is free again: before the sweep (an expired task reads
/// as unknown) and after it.
pub async fn idempotency_key_is_free_after_expiry<F: StoreFactory>(factory: &F) {
    let (a, env) = open(factory, "idem_expiry", roomy()).await;
    if !keeps_keys(&a, "idempotency_key_is_free_after_expiry").await {
        return;
    }
    let b = another(factory, &env).await;
    let owner = alice();
    let short = |fp: &str| NewTask {
        ttl_ms: Some(1_000),
        ..keyed(&owner, "k", fp)
    };
    let first = a.create(short("fp")).await.expect("create");
    env.clock.advance(999);
    assert_eq!(
        existing(b.create(short("fp")).await, "before the TTL ends").id,
        first.id
    );
    env.clock.advance(1);
    // Expired, not yet swept: the key is free, whatever the fingerprint.
    let second = b.create(short("other")).await.expect("free after expiry");
    assert_ne!(second.id, first.id);
    assert_eq!(
        existing(a.create(short("other")).await, "the new task holds it").id,
        second.id
    );
    assert!(matches!(
        a.create(short("fp")).await,
        Err(StoreError::IdempotencyConflict)
    ));
    env.clock.advance(1_000);
    let report = a.sweep().await.expect("sweep");
    assert!(report.purged >= 2, "both tasks swept: {report:?}");
    let third = a.create(short("fp")).await.expect("free after the sweep");
    assert_ne!(third.id, second.id);
    assert_eq!(
        existing(b.create(short("fp")).await, "the third holds it").id,
        third.id
    );
    assert_eq!(count(&a, &owner).await, 1);
}

/// A key that is empty or longer than 255 bytes is refused, by `Idempotency::new` and
/// by the store (the fields are public), and nothing is created.
pub async fn invalid_idempotency_keys_are_refused<F: StoreFactory>(factory: &F) {
    assert!(matches!(
        Idempotency::new("", "fp"),
        Err(StoreError::InvalidIdempotencyKey { .. })
    ));
    assert!(matches!(
        Idempotency::new("x".repeat(256), "fp"),
        Err(StoreError::InvalidIdempotencyKey { .. })
    ));
    assert!(Idempotency::new("x".repeat(255), "fp").is_ok());
    let (store, _env) = open(factory, "idem_invalid", roomy()).await;
    if !keeps_keys(&store, "invalid_idempotency_keys_are_refused").await {
        return;
    }
    let owner = alice();
    for key in [String::new(), "é".repeat(128)] {
        let new = NewTask {
            idempotency: Some(Idempotency {
                key,
                fingerprint: "fp".into(),
            }),
            ..new_task(&owner)
        };
        let refused = store.create(new.clone()).await;
        assert!(
            matches!(refused, Err(StoreError::InvalidIdempotencyKey { .. })),
            "got {refused:?}"
        );
        let refused = store.create_leased(new, "w", 1_000).await;
        assert!(
            matches!(refused, Err(StoreError::InvalidIdempotencyKey { .. })),
            "got {refused:?}"
        );
    }
    let longest = store
        .create(keyed(&owner, &"x".repeat(255), "fp"))
        .await
        .expect("a 255-byte key");
    assert_eq!(count(&store, &owner).await, 1);
    assert_eq!(
        existing(
            store.create(keyed(&owner, &"x".repeat(255), "fp")).await,
            "255 bytes"
        )
        .id,
        longest.id
    );
}
