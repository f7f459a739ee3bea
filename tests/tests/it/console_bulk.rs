//! The operator console's search and bulk cancel, on an in-process server (memory store,
//! bearer-token owners, the console behind Basic):
//!
//! - `GET /console/api/tasks?text=...` lists the tasks whose status message holds the
//!   text (ASCII case ignored; `%` and `_` plain characters), with the other filters and
//!   in pages; its cursor is bound to the text; a text past 200 characters, or with a
//!   control character, is 400;
//! - `POST /console/api/tasks/cancel`: a dry run counts the unfinished tasks matching
//!   and cancels nothing; then the real one cancels them (alice's and bob's, whose own
//!   `tasks/get` then reads `cancelled`), leaves the others, audits each cancel with the
//!   operator as actor and the owner as principal, and each task's log names the
//!   operator as who asked; bad bodies are 400, a request without the CSRF header 403;
//! - 10,001 unfinished tasks matching (made straight in the memory store): the dry run
//!   says so, the cancel is 422 and cancels nothing.
//!
//! The helpers here (a server with the `says` tool, the bulk cancel) are shared with
//! `console_roles.rs`; the generic ones are in `mcp_tests::console`.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use mcp_tasks::{Limits, MemoryStore, NewTask, Origin, Owner, TaskStore, WireRevision};
use mcp_tasks_server::console::ConsoleConfig;
use mcp_tasks_server::http::HttpConfig;
use mcp_tasks_server::{CallToolResult, ContentBlock, TaskPolicy};
use mcp_tasks_server::{ToolContext, ToolDef};
use mcp_tests::console::{self, Got, basic, call, capture_audit, ok_as, rpc_as, task_of, wait_for};
use mcp_tests::server_harness::{TestServer, bearer_principal, demo_tools, task_params};
use serde_json::{Value, json};

/// The operator's user name and password.
pub(crate) const USER: &str = "admin";
pub(crate) const PASSWORD: &str = "bulk:pass";

/// The operator's `Authorization`.
pub(crate) fn operator() -> String {
    basic(USER, PASSWORD)
}

/// A tool that sets its status message to `message`, then waits `ms` (at most a
/// minute) and completes: a task that stays `working` with a message of the test's.
pub(crate) fn says_tool() -> ToolDef {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Args {
        message: String,
        #[serde(default)]
        ms: u64,
    }
    ToolDef::new(
        "says",
        TaskPolicy::Required,
        |ctx: ToolContext, args: Args| async move {
            ctx.status(&args.message).await?;
            tokio::time::sleep(Duration::from_millis(args.ms.min(60_000))).await;
            Ok(CallToolResult::new(vec![ContentBlock::Text(
                mcp_tasks_protocol::types::TextContent::new("said"),
            )]))
        },
    )
    .expect("tool")
}

/// The demo tools and `says` on `store`, bearer owners, the console as `console` says.
pub(crate) async fn server_with(
    store: Arc<dyn TaskStore>,
    console: ConsoleConfig,
    principal: bool,
) -> TestServer {
    let http = HttpConfig {
        principal: principal.then(bearer_principal),
        console: Some(console),
        ..HttpConfig::default()
    };
    let tools = demo_tools().into_iter().chain([says_tool()]);
    console::server_on("console-bulk", store, tools, http).await
}

/// [`server_with`] a fresh memory store, the console behind the operator's Basic.
pub(crate) async fn server() -> TestServer {
    let console = ConsoleConfig::basic(USER, PASSWORD).expect("valid");
    server_with(Arc::new(MemoryStore::default()), console, true).await
}

/// `POST /console/api/tasks/cancel` as `auth` with `body`.
pub(crate) async fn bulk(s: &TestServer, auth: &str, body: Value) -> Got {
    let path = "/console/api/tasks/cancel";
    call(s, reqwest::Method::POST, path, Some(auth), Some(&body)).await
}

/// Starts `says` as a task of `owner` with `message`, for `ms`; its id.
pub(crate) async fn says(s: &TestServer, owner: &str, message: &str, ms: u64) -> String {
    let args = json!({ "message": message, "ms": ms });
    task_of(s, owner, "says", args).await
}

/// Waits until `owner`'s task `id` shows its status message.
pub(crate) async fn wait_for_message(s: &TestServer, owner: &str, id: &str) {
    wait_for(s, owner, id, |t| t["statusMessage"].is_string()).await;
}

/// The ids of a list reply's tasks.
pub(crate) fn ids(page: &Value) -> BTreeSet<String> {
    page["tasks"]
        .as_array()
        .map(|tasks| {
            tasks
                .iter()
                .map(|t| t["id"].as_str().expect("id").to_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn set(list: &[&String]) -> BTreeSet<String> {
    list.iter().map(|s| (*s).clone()).collect()
}

/// `text` percent-encoded for a query string.
fn query_text(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

#[tokio::test]
async fn the_list_searches_the_status_message() {
    let s = server().await;
    let copy1 = says(&s, "alice", "Copying FILE 1 of 3", 60_000).await;
    let copy2 = says(&s, "bob", "copying file 2 of 3", 60_000).await;
    let percent = says(&s, "alice", "50% done", 60_000).await;
    let plain = says(&s, "bob", "50 done, a_b", 60_000).await;
    let html = says(&s, "bob", "<b>bold</b> & 'quoted'", 60_000).await;
    for (owner, id) in [
        ("alice", &copy1),
        ("bob", &copy2),
        ("alice", &percent),
        ("bob", &plain),
        ("bob", &html),
    ] {
        wait_for_message(&s, owner, id).await;
    }
    let auth = operator();
    let search =
        |text: &str, more: &str| format!("/console/api/tasks?text={}{more}", query_text(text));
    for (text, more, want) in [
        ("copying file", "", set(&[&copy1, &copy2])),
        ("COPYING", "&owner=bob", set(&[&copy2])),
        ("50%", "", set(&[&percent])),
        ("a_b", "", set(&[&plain])),
        ("a%b", "", BTreeSet::new()),
        ("<b>bold</b> & 'QUOTED'", "", set(&[&html])),
        ("of 3", "&tool=says&status=working", set(&[&copy1, &copy2])),
        ("of 3", "&status=completed", BTreeSet::new()),
        ("nothing like it", "", BTreeSet::new()),
    ] {
        let page = ok_as(&s, &auth, &search(text, more)).await;
        assert_eq!(ids(&page), want, "text={text:?}{more}: {page}");
        for row in page["tasks"].as_array().expect("tasks") {
            assert!(row["statusMessage"].is_string(), "{row}");
        }
    }
    // Pages of one, with the cursor: both, once each; the cursor is the text's.
    let first = ok_as(&s, &auth, &search("copying", "&limit=1")).await;
    let cursor = first["nextCursor"]
        .as_str()
        .expect("a second page")
        .to_owned();
    let second = ok_as(
        &s,
        &auth,
        &search("copying", &format!("&limit=1&cursor={cursor}")),
    )
    .await;
    let mut both = ids(&first);
    both.extend(ids(&second));
    assert_eq!(both, set(&[&copy1, &copy2]));
    assert_eq!(second["nextCursor"], Value::Null, "{second}");
    let foreign = format!("/console/api/tasks?limit=1&cursor={cursor}");
    let refused = call(&s, reqwest::Method::GET, &foreign, Some(&auth), None).await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    // Bounded, printable.
    for bad in ["x".repeat(201), "a\u{1}b".to_owned()] {
        let got = call(
            &s,
            reqwest::Method::GET,
            &search(&bad, ""),
            Some(&auth),
            None,
        )
        .await;
        assert_eq!(got.status, 400, "{bad:?}: {}", got.body);
        assert!(
            got.body["error"]
                .as_str()
                .is_some_and(|e| e.contains("text must be 1 to 200 characters")),
            "{}",
            got.body
        );
    }
    let longest = search(&"é".repeat(200), "");
    assert_eq!(ok_as(&s, &auth, &longest).await["tasks"], json!([]));
    s.stop().await;
}

// Current-thread: the server's tasks run on this thread, under its audit subscriber.
#[tokio::test(flavor = "current_thread")]
async fn a_dry_run_counts_then_the_cancel_cancels_every_owners_tasks() {
    let (audit, _guard) = capture_audit("info");
    let s = server().await;
    let mut batch = Vec::new();
    for (owner, n) in [("alice", 1), ("bob", 2), ("alice", 3), ("bob", 4)] {
        let id = says(&s, owner, &format!("Batch 7: part {n}"), 60_000).await;
        batch.push((owner, id));
    }
    let other = says(&s, "alice", "batch 8: part 1", 60_000).await;
    let finished = says(&s, "bob", "batch 7: done early", 0).await;
    for (owner, id) in &batch {
        wait_for_message(&s, owner, id).await;
    }
    wait_for_message(&s, "alice", &other).await;
    wait_for(&s, "bob", &finished, |t| t["status"] == "completed").await;
    let auth = operator();
    let filter = json!({ "text": "batch 7", "tool": "says" });

    // The dry run: the four unfinished, nothing cancelled.
    let dry = bulk(&s, &auth, json!({ "filter": filter, "dryRun": true })).await;
    assert_eq!(dry.status, 200, "{}", dry.body);
    assert_eq!(
        dry.body,
        json!({ "matched": 4, "max": 10000, "overMax": false })
    );
    for (owner, id) in &batch {
        let task = rpc_as(&s, owner, "tasks/get", task_params(id, true)).await;
        assert_eq!(
            task["status"], "working",
            "a dry run cancels nothing: {task}"
        );
    }

    // The cancel.
    let done = bulk(&s, &auth, json!({ "filter": filter, "dryRun": false })).await;
    assert_eq!(done.status, 200, "{}", done.body);
    assert_eq!(
        done.body,
        json!({ "matched": 4, "cancelled": 4, "alreadyTerminal": 0, "failed": [] })
    );
    for (owner, id) in &batch {
        wait_for(&s, owner, id, |t| t["status"] == "cancelled").await;
    }
    let untouched = rpc_as(&s, "alice", "tasks/get", task_params(&other, true)).await;
    assert_eq!(untouched["status"], "working", "{untouched}");
    let early = rpc_as(&s, "bob", "tasks/get", task_params(&finished, true)).await;
    assert_eq!(early["status"], "completed", "{early}");

    // Each cancel audited: the operator as actor, the owner as principal, the task.
    for (owner, id) in &batch {
        let lines = audit.lines_with(&[
            "op=\"console: bulk cancel\"",
            "actor=admin",
            &format!("principal={owner}"),
            &format!("task_id=\"{id}\""),
        ]);
        assert_eq!(lines.len(), 1, "{id}: {}", audit.text());
    }
    let summary = audit.lines_with(&["op=\"console: bulk cancel\"", "cancelled=4"]);
    assert_eq!(summary.len(), 1, "{}", audit.text());
    // The task's own log names the operator as who asked.
    for (_, id) in &batch {
        let history = ok_as(&s, &auth, &format!("/console/api/tasks/{id}/history")).await;
        let entries = history["entries"].as_array().cloned().unwrap_or_default();
        assert!(
            entries
                .iter()
                .any(|e| e["actor"] == "operator" && e["type"] == "rs.mcp-tasks.cancel"),
            "{history}"
        );
    }

    // Again: nothing left to cancel.
    let again = bulk(&s, &auth, json!({ "filter": filter, "dryRun": false })).await;
    assert_eq!(
        again.body,
        json!({ "matched": 0, "cancelled": 0, "alreadyTerminal": 0, "failed": [] })
    );

    // Bad requests change nothing.
    for (body, says_what) in [
        (json!({ "filter": filter }), "dryRun"),
        (
            json!({ "filter": { "colour": "red" }, "dryRun": false }),
            "colour",
        ),
        (
            json!({ "filter": { "status": "bogus" }, "dryRun": false }),
            "status",
        ),
        (
            json!({ "filter": { "text": "x".repeat(201) }, "dryRun": false }),
            "text",
        ),
        (
            json!({ "filter": { "tool": 7 }, "dryRun": false }),
            "filter.tool",
        ),
        (json!([1, 2]), "JSON"),
    ] {
        let got = bulk(&s, &auth, body.clone()).await;
        assert_eq!(got.status, 400, "{body}: {}", got.body);
        assert!(
            got.body["error"]
                .as_str()
                .is_some_and(|e| e.contains(says_what)),
            "{body}: {}",
            got.body
        );
    }
    let untouched = rpc_as(&s, "alice", "tasks/get", task_params(&other, true)).await;
    assert_eq!(untouched["status"], "working", "{untouched}");
    // Without the CSRF header: 403 at the access layer.
    let no_csrf = console::send(
        &s,
        reqwest::Method::POST,
        "/console/api/tasks/cancel",
        &[("authorization", &auth)],
        Some(&json!({ "filter": {}, "dryRun": false })),
    )
    .await;
    assert_eq!(no_csrf.status, 403, "{}", no_csrf.text);
    // Another method: 405 as JSON.
    let got = call(
        &s,
        reqwest::Method::GET,
        "/console/api/tasks/cancel",
        Some(&auth),
        None,
    )
    .await;
    assert_eq!(got.status, 405, "{}", got.body);
    assert!(got.body["error"].is_string(), "{}", got.body);
    let untouched = rpc_as(&s, "alice", "tasks/get", task_params(&other, true)).await;
    assert_eq!(untouched["status"], "working", "{untouched}");
    s.stop().await;
}

/// One past the maximum: 10,001 unfinished tasks made straight in the memory store
/// (no tool runs them, so they stay `working`).
#[tokio::test]
async fn more_than_ten_thousand_matching_is_refused_and_nothing_is_cancelled() {
    let store = Arc::new(MemoryStore::new(Limits {
        max_live_tasks_per_owner: usize::MAX,
        max_live_tasks_total: usize::MAX,
        ..Limits::default()
    }));
    for i in 0..10_001 {
        let owner = if i % 2 == 0 { "alice" } else { "bob" };
        store
            .create(NewTask {
                owner: Owner::new(owner),
                ttl_ms: None,
                poll_interval_ms: None,
                origin: Origin {
                    method: "tools/call".into(),
                    tool: Some("imported".into()),
                    revision: WireRevision::V2026_07_28,
                },
                status_message: Some(format!("imported {i}")),
                job: None,
                trace_context: None,
                idempotency: None,
            })
            .await
            .expect("create");
    }
    let console = ConsoleConfig::basic(USER, PASSWORD).expect("valid");
    let s = server_with(store.clone(), console, true).await;
    let auth = operator();
    let all = json!({ "tool": "imported" });
    let dry = bulk(&s, &auth, json!({ "filter": all, "dryRun": true })).await;
    assert_eq!(
        dry.body,
        json!({ "matched": 10001, "max": 10000, "overMax": true })
    );
    let refused = bulk(&s, &auth, json!({ "filter": all, "dryRun": false })).await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    let message = refused.body["error"].as_str().unwrap_or_default();
    assert!(
        message.contains("more than 10000") && message.contains("narrow the filter"),
        "{message}"
    );
    let counts = store.operator_counts().await.expect("counts");
    assert_eq!(counts.working, 10_001, "nothing cancelled: {counts:?}");
    // Narrowed to bob's: within the maximum, and cancelled.
    let bobs = json!({ "tool": "imported", "owner": "bob" });
    let done = bulk(&s, &auth, json!({ "filter": bobs, "dryRun": false })).await;
    assert_eq!(done.status, 200, "{}", done.body);
    assert_eq!(done.body["cancelled"], 5000, "{}", done.body);
    // No worker runs them: each is asked to stop (`cancelRequested`), bob's only.
    for (owner, asked) in [("bob", true), ("alice", false)] {
        let filter = mcp_tasks::OperatorFilter {
            owner: Some(Owner::new(owner)),
            ..Default::default()
        };
        let page = store.operator_list(&filter, None, 500).await.expect("list");
        assert_eq!(page.tasks.len(), 500);
        assert!(
            page.tasks.iter().all(|t| t.cancel_requested == asked),
            "{owner}"
        );
    }
    s.stop().await;
}
