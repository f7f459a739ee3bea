//! The [`SessionStore`] contract: MCP 2025-11-25 session records, on every handle, with
//! the idle expiry on the injected clock and the session limit counted across handles.
//! A backend without a session store (`TaskStore::sessions` is `None`) reports each
//! behaviour skipped.

use std::collections::BTreeSet;

use serde_json::json;

use super::env::StoreFactory;
use super::helpers::{alice, another, open, roomy};
use super::report_not_applicable;
use crate::{Limit, SessionChange, SessionRecord, SessionStore, StoreError, TaskStore};
use mcp_tasks_protocol::types::LoggingLevel;

const IDLE_MS: u64 = 60_000;

fn record(id: &str) -> SessionRecord {
    SessionRecord {
        id: id.to_owned(),
        owner: alice(),
        principal: Some("alice".to_owned()),
        protocol_version: "2025-11-25".to_owned(),
        client_capabilities: json!({"elicitation": {"form": {}}, "tasks": {}}),
        client_info: json!({"name": "kit", "version": "1.0.0"}),
        log_level: None,
        subscriptions: BTreeSet::new(),
        asking: Default::default(),
        // The store sets both (rule 2).
        created_at: -1,
        last_seen: -1,
        idle_timeout_ms: IDLE_MS,
    }
}

/// A fresh session id: 128 random bits as hex, as a server makes them.
fn fresh_id() -> String {
    crate::TaskId::random()
        .expect("random id")
        .as_str()
        .to_owned()
}

fn sessions_of<'a, S: TaskStore>(store: &'a S, behaviour: &str) -> Option<&'a dyn SessionStore> {
    let sessions = store.sessions();
    if sessions.is_none() {
        report_not_applicable(&format!(
            "{behaviour}: the backend keeps no session records"
        ));
    }
    sessions
}

/// Rules 2 and 8: an opened session reads the same on a second handle, times from the
/// store's clock; unknown ids read as absent.
pub async fn session_open_is_visible_from_second_handle<F: StoreFactory>(factory: &F) {
    let (a, env) = open(factory, "session_open", roomy()).await;
    let b = another(factory, &env).await;
    let Some(sa) = sessions_of(&a, "session_open_is_visible_from_second_handle") else {
        return;
    };
    let sb = b.sessions().expect("the second handle keeps sessions too");
    env.clock.set(1_000_000);
    let id = fresh_id();
    let opened = sa.open_session(record(&id), 10).await.expect("open");
    assert_eq!(
        (opened.created_at, opened.last_seen),
        (1_000_000, 1_000_000)
    );
    let read = sb.session(&id).await.expect("read").expect("visible");
    assert_eq!(read, opened);
    assert_eq!(read.client_info, json!({"name": "kit", "version": "1.0.0"}));
    assert_eq!(sb.session(&fresh_id()).await.expect("read"), None);
    assert_eq!(sb.session_count().await.expect("count"), 1);
}

/// Rules 4 and 5: idle for the timeout, a session is gone and stays gone; a touch in
/// time moves its expiry.
pub async fn session_expires_when_idle_and_touch_extends_it<F: StoreFactory>(factory: &F) {
    let (a, env) = open(factory, "session_idle", roomy()).await;
    let b = another(factory, &env).await;
    let Some(sa) = sessions_of(&a, "session_expires_when_idle_and_touch_extends_it") else {
        return;
    };
    let sb = b.sessions().expect("the second handle keeps sessions too");
    env.clock.set(1_000_000);
    let id = fresh_id();
    sa.open_session(record(&id), 10).await.expect("open");
    env.clock.advance(IDLE_MS - 1);
    assert!(
        sb.touch_session(&id).await.expect("touch"),
        "touched in time"
    );
    let seen = sa.session(&id).await.expect("read").expect("still open");
    assert_eq!(seen.last_seen, 1_000_000 + IDLE_MS as i64 - 1);
    env.clock.advance(IDLE_MS - 1);
    assert!(
        sa.session(&id).await.expect("read").is_some(),
        "the touch kept it"
    );
    env.clock.advance(1);
    assert_eq!(sa.session(&id).await.expect("read"), None, "idle too long");
    assert!(!sb.touch_session(&id).await.expect("touch"), "no revival");
    let change = SessionChange::LogLevel(LoggingLevel::Error);
    assert_eq!(sb.change_session(&id, change).await.expect("change"), None);
    assert_eq!(sa.session_count().await.expect("count"), 0);
}

/// Rule 6: changes land on the record, none lost between handles.
pub async fn session_changes_are_kept_across_handles<F: StoreFactory>(factory: &F) {
    let (a, env) = open(factory, "session_change", roomy()).await;
    let b = another(factory, &env).await;
    let Some(sa) = sessions_of(&a, "session_changes_are_kept_across_handles") else {
        return;
    };
    let sb = b.sessions().expect("the second handle keeps sessions too");
    let id = fresh_id();
    sa.open_session(record(&id), 10).await.expect("open");
    let level = SessionChange::LogLevel(LoggingLevel::Warning);
    sb.change_session(&id, level).await.expect("change");
    let uris: Vec<String> = (0..8).map(|i| format!("demo://r/{i}")).collect();
    let writes = uris.iter().enumerate().map(|(i, uri)| {
        let store = if i % 2 == 0 { sa } else { sb };
        store.change_session(&id, SessionChange::Subscribe(uri.clone()))
    });
    for written in futures::future::join_all(writes).await {
        assert!(written.expect("change").is_some());
    }
    let unsubscribe = SessionChange::Unsubscribe(uris[0].clone());
    sa.change_session(&id, unsubscribe).await.expect("change");
    let read = sb.session(&id).await.expect("read").expect("open");
    assert_eq!(read.log_level, Some(LoggingLevel::Warning));
    let expected: BTreeSet<String> = uris[1..].iter().cloned().collect();
    assert_eq!(read.subscriptions, expected, "no concurrent change lost");
}

/// Rule 6 for input claims: of two handles claiming one question at once, one holds it;
/// the other's claim and release change nothing; the holder renews and releases; a claim
/// not renewed lapses on the store's clock and another may take it.
pub async fn session_input_claims_have_one_holder<F: StoreFactory>(factory: &F) {
    let (a, env) = open(factory, "session_claims", roomy()).await;
    let b = another(factory, &env).await;
    let Some(sa) = sessions_of(&a, "session_input_claims_have_one_holder") else {
        return;
    };
    let sb = b.sessions().expect("the second handle keeps sessions too");
    env.clock.set(1_000_000);
    let id = fresh_id();
    sa.open_session(record(&id), 10).await.expect("open");
    let claim = |by: &str| SessionChange::ClaimInput {
        marker: "t1/q".to_owned(),
        by: by.to_owned(),
        lease_ms: 1_000,
    };
    let release = |by: &str| SessionChange::ReleaseInput {
        marker: "t1/q".to_owned(),
        by: by.to_owned(),
    };
    let holder = |r: Option<SessionRecord>| {
        r.expect("open")
            .asking
            .get("t1/q")
            .map(|c| (c.by.clone(), c.until))
    };
    let (x, y) = futures::join!(
        sa.change_session(&id, claim("x")),
        sb.change_session(&id, claim("y"))
    );
    let (x, y) = (holder(x.expect("claim")), holder(y.expect("claim")));
    assert_eq!(x, y, "both see one holder");
    let (first, second) = match x.as_ref().map(|h| h.0.as_str()) {
        Some("x") => ("x", "y"),
        Some("y") => ("y", "x"),
        other => panic!("one of the two holds the claim: {other:?}"),
    };
    let r = sa
        .change_session(&id, release(second))
        .await
        .expect("release");
    assert_eq!(
        holder(r).map(|h| h.0),
        Some(first.to_owned()),
        "not its claim"
    );
    env.clock.advance(500);
    let r = sb.change_session(&id, claim(first)).await.expect("renew");
    assert_eq!(holder(r), Some((first.to_owned(), 1_001_500)), "renewed");
    let r = sa
        .change_session(&id, release(first))
        .await
        .expect("release");
    assert_eq!(holder(r), None, "released");
    let r = sb.change_session(&id, claim(second)).await.expect("claim");
    assert_eq!(holder(r).map(|h| h.0), Some(second.to_owned()));
    env.clock.advance(1_000);
    let r = sa.change_session(&id, claim(first)).await.expect("claim");
    assert_eq!(
        holder(r).map(|h| h.0),
        Some(first.to_owned()),
        "a lapsed claim is taken"
    );
    let read = sb.session(&id).await.expect("read").expect("open");
    assert_eq!(read.asking.len(), 1, "{:?}", read.asking);
}

/// Rule 7: ended on one handle, absent on every handle, and not counted.
pub async fn session_end_is_seen_everywhere<F: StoreFactory>(factory: &F) {
    let (a, env) = open(factory, "session_end", roomy()).await;
    let b = another(factory, &env).await;
    let Some(sa) = sessions_of(&a, "session_end_is_seen_everywhere") else {
        return;
    };
    let sb = b.sessions().expect("the second handle keeps sessions too");
    let id = fresh_id();
    sa.open_session(record(&id), 10).await.expect("open");
    assert!(sb.end_session(&id).await.expect("end"), "it existed");
    assert_eq!(sa.session(&id).await.expect("read"), None);
    assert!(!sa.touch_session(&id).await.expect("touch"));
    assert!(!sa.end_session(&id).await.expect("end"), "ended once");
    assert_eq!(sa.session_count().await.expect("count"), 0);
}

/// Rule 3: the limit counts the sessions of every handle; an expired or ended session
/// frees its place; a refusal stores nothing.
pub async fn session_limit_counts_every_handle<F: StoreFactory>(factory: &F) {
    let (a, env) = open(factory, "session_limit", roomy()).await;
    let b = another(factory, &env).await;
    let Some(sa) = sessions_of(&a, "session_limit_counts_every_handle") else {
        return;
    };
    let sb = b.sessions().expect("the second handle keeps sessions too");
    env.clock.set(1_000_000);
    let first = fresh_id();
    sa.open_session(record(&first), 2).await.expect("first");
    env.clock.advance(1_000);
    sb.open_session(record(&fresh_id()), 2)
        .await
        .expect("second");
    let refused = fresh_id();
    match sa.open_session(record(&refused), 2).await {
        Err(StoreError::LimitExceeded {
            limit: Limit::Sessions,
            max: 2,
        }) => {}
        other => panic!("a third session over a limit of 2: {other:?}"),
    }
    assert_eq!(
        sb.session(&refused).await.expect("read"),
        None,
        "nothing stored"
    );
    // The first idles out (the second was opened a second later): room for one.
    env.clock.advance(IDLE_MS - 1_000);
    sb.open_session(record(&refused), 2)
        .await
        .expect("room again");
    assert!(sb.end_session(&refused).await.expect("end"));
    sa.open_session(record(&fresh_id()), 2)
        .await
        .expect("an ended session frees its place");
    assert_eq!(sb.session_count().await.expect("count"), 2);
}

/// Rule 9: a resource announced on one handle reaches the feeds of every handle opened
/// before it, the announcing one's included, once each, in order.
pub async fn session_resource_announcements_reach_every_handle<F: StoreFactory>(factory: &F) {
    let (a, env) = open(factory, "session_resources", roomy()).await;
    let b = another(factory, &env).await;
    let Some(sa) = sessions_of(&a, "session_resource_announcements_reach_every_handle") else {
        return;
    };
    let sb = b.sessions().expect("the second handle keeps sessions too");
    let mut on_a = sa.resource_updates();
    let mut on_b = sb.resource_updates();
    sa.announce_resource_updated("test://kit/one")
        .await
        .expect("announce");
    sb.announce_resource_updated("test://kit/two")
        .await
        .expect("announce");
    for (feed, name) in [(&mut on_a, "a"), (&mut on_b, "b")] {
        let mut heard = Vec::new();
        for _ in 0..2 {
            let uri = tokio::time::timeout(ANNOUNCE_WAIT, feed.recv())
                .await
                .unwrap_or_else(|_| panic!("handle {name} heard {heard:?} only"))
                .expect("the feed is open");
            heard.push(uri);
        }
        heard.sort();
        assert_eq!(heard, ["test://kit/one", "test://kit/two"], "handle {name}");
        // Once each: nothing more arrives (a bounded look).
        let more = tokio::time::timeout(std::time::Duration::from_millis(200), feed.recv()).await;
        assert!(more.is_err(), "handle {name} heard more: {more:?}");
    }
}

/// How long an announcement may take to reach another handle (across processes, through
/// the backend's notifications).
const ANNOUNCE_WAIT: std::time::Duration = std::time::Duration::from_secs(10);
