//! The operator console's roles, on an in-process server (memory store, bearer-token
//! owners):
//!
//! - Basic with two users, an operator and a viewer (made with `with_user`, and read
//!   from a credentials list): both read everything and `GET /console/api/me` names them
//!   with their role; the viewer's cancel, bulk cancel (dry run included) and a `POST`
//!   to a path that does not exist are 403 with a message naming the role, change
//!   nothing, and are audited as refusals (`reason="read-only role"`); the operator's
//!   cancel and bulk cancel work;
//! - OAuth (a test issuer): `console:read` gives a viewer, `console:write` an operator;
//!   a viewer's `POST` is 403 `insufficient_scope` naming `console:write`; a token with
//!   neither is 403 on every path; `ConsoleConfig::scope(s)` alone lets holders of `s`
//!   in as operators and nobody as a viewer;
//! - the demo refuses `MCP_CONSOLE_CREDENTIALS` with an unknown role, a user given twice
//!   or no credential at startup (a usage error naming the line, never a password).

use std::sync::Arc;

use mcp_tasks::MemoryStore;
use mcp_tasks_server::console::{ConsoleConfig, ConsoleRole};
use mcp_tasks_server::http::HttpConfig;
use mcp_tests::issuer::{TestIssuer, protect_with};
use mcp_tests::server_harness::{TestServer, task_params};
use reqwest::Method;
use serde_json::json;

use mcp_tests::console::{Got, basic, call, capture_audit, ok_as, rpc_as, scope_server, wait_for};

use super::console_bulk::{PASSWORD, USER, bulk, operator, says, server_with, wait_for_message};

const VIEWER: &str = "support";
const VIEWER_PASSWORD: &str = "read:only";

fn viewer() -> String {
    basic(VIEWER, VIEWER_PASSWORD)
}

/// POST `path` (with the CSRF header) as `auth`.
async fn post(s: &TestServer, auth: &str, path: &str) -> Got {
    call(s, Method::POST, path, Some(auth), None).await
}

fn assert_read_only(got: &Got, who: &str, what: &str) {
    assert_eq!(got.status, 403, "{what}: {}", got.body);
    let message = got.body["error"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!("{who} is a console viewer"))
            && message.contains("operator role"),
        "{what}: {message}"
    );
}

/// The viewer and the operator on `s`: what each may do.
async fn roles_hold(s: &TestServer, operator_auth: &str, viewer_auth: &str) {
    let id = says(s, "alice", "long job", 60_000).await;
    wait_for_message(s, "alice", &id).await;

    for (auth, name, role) in [
        (operator_auth, USER, "operator"),
        (viewer_auth, VIEWER, "viewer"),
    ] {
        let me = ok_as(s, auth, "/console/api/me").await;
        assert_eq!(me, json!({ "name": name, "role": role }));
        // Both read everything.
        for path in [
            "/console/api/tasks".to_owned(),
            format!("/console/api/tasks/{id}"),
            "/console/api/counts".to_owned(),
            "/console/api/activity".to_owned(),
        ] {
            ok_as(s, auth, &path).await;
        }
        let page = call(s, Method::GET, "/console", Some(auth), None).await;
        assert_eq!(page.status, 200, "the page for the {role}");
    }

    // The viewer changes nothing, whatever the route, even one that does not exist.
    let cancel = format!("/console/api/tasks/{id}/cancel");
    assert_read_only(&post(s, viewer_auth, &cancel).await, VIEWER, "cancel");
    for dry_run in [true, false] {
        let got = bulk(s, viewer_auth, json!({ "filter": {}, "dryRun": dry_run })).await;
        assert_read_only(&got, VIEWER, "bulk cancel");
    }
    let nowhere = "/console/api/no-such-route";
    assert_read_only(&post(s, viewer_auth, nowhere).await, VIEWER, "any POST");
    let task = rpc_as(s, "alice", "tasks/get", task_params(&id, true)).await;
    assert_eq!(task["status"], "working", "{task}");
    assert_eq!(post(s, operator_auth, nowhere).await.status, 404);

    // The operator does.
    let dry = bulk(s, operator_auth, json!({ "filter": {}, "dryRun": true })).await;
    assert_eq!(dry.body["matched"], 1, "{}", dry.body);
    let cancelled = post(s, operator_auth, &cancel).await;
    assert_eq!(cancelled.status, 200, "{}", cancelled.body);
    wait_for(s, "alice", &id, |t| t["status"] == "cancelled").await;
}

// Current-thread: the server's tasks run on this thread, under its audit subscriber.
#[tokio::test(flavor = "current_thread")]
async fn a_basic_viewer_reads_and_changes_nothing() {
    let (audit, _guard) = capture_audit("info");
    let console = ConsoleConfig::basic(USER, PASSWORD)
        .and_then(|c| c.with_user(VIEWER, VIEWER_PASSWORD, ConsoleRole::Viewer))
        .expect("valid");
    let s = server_with(Arc::new(MemoryStore::default()), console, true).await;
    roles_hold(&s, &operator(), &viewer()).await;
    // Each refusal of the viewer audited, with the path and the reason, never the
    // password.
    for path in [
        "/cancel",
        "/console/api/tasks/cancel",
        "/console/api/no-such-route",
    ] {
        let lines = audit.lines_with(&[
            "op=\"console: refused\"",
            "status=403",
            "reason=\"read-only role\"",
            path,
        ]);
        assert!(!lines.is_empty(), "{path}: {}", audit.text());
    }
    assert!(!audit.text().contains(VIEWER_PASSWORD));
    s.stop().await;
}

#[tokio::test]
async fn roles_from_a_credentials_list() {
    let text = format!("# who\n{USER}:{PASSWORD}\n\nviewer={VIEWER}:{VIEWER_PASSWORD}\n");
    let console = ConsoleConfig::parse_basic_list(&text).expect("valid");
    let s = server_with(Arc::new(MemoryStore::default()), console, true).await;
    roles_hold(&s, &operator(), &viewer()).await;
    // A wrong password for a known name is no one.
    let wrong = basic(VIEWER, PASSWORD);
    let got = call(&s, Method::GET, "/console/api/me", Some(&wrong), None).await;
    assert_eq!(got.status, 401, "{}", got.body);
    s.stop().await;
}

#[tokio::test]
async fn oauth_scopes_give_roles() {
    let issuer = TestIssuer::start().await;
    let http = HttpConfig {
        console: Some(
            ConsoleConfig::scopes(ConsoleConfig::READ_SCOPE, ConsoleConfig::WRITE_SCOPE)
                .expect("scopes"),
        ),
        ..HttpConfig::default()
    };
    let p = protect_with(&issuer, |_| {}, http).await;
    let s = &p.server;
    let token =
        |sub: &str, scopes: &[&str]| format!("Bearer {}", issuer.token(sub, &p.resource, scopes));
    let reader = token("vera", &["console:read"]);
    let writer = token("otto", &["console:write"]);
    let both = token("bea", &["console:read", "console:write", "mcp"]);
    let neither = token("nina", &["mcp"]);

    for (auth, name, role) in [
        (&reader, "vera", "viewer"),
        (&writer, "otto", "operator"),
        (&both, "bea", "operator"),
    ] {
        let me = ok_as(s, auth, "/console/api/me").await;
        assert_eq!(me["role"], role, "{me}");
        // The principal: the issuer's subject.
        let shown = me["name"].as_str().unwrap_or_default();
        assert!(shown.ends_with(&format!("#{name}")), "{me}");
        ok_as(s, auth, "/console/api/tasks").await;
    }
    // Neither scope: 403 on every path, the challenge naming the readers' scope.
    let refused = call(s, Method::GET, "/console/api/tasks", Some(&neither), None).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    let challenge = refused.header("www-authenticate");
    assert!(
        challenge.contains("insufficient_scope") && challenge.contains("console:read"),
        "{challenge}"
    );
    // The viewer's POST: 403 insufficient_scope naming the operators' scope.
    let dry = json!({ "filter": {}, "dryRun": true });
    let got = bulk(s, &reader, dry.clone()).await;
    assert_read_only(&got, "#vera", "bulk cancel");
    let challenge = got.header("www-authenticate");
    assert!(
        challenge.contains("insufficient_scope") && challenge.contains("console:write"),
        "{challenge}"
    );
    let got = post(s, &reader, "/console/api/tasks/0123/cancel").await;
    assert_read_only(&got, "#vera", "cancel");
    // The operator's POST passes the access layer.
    let got = bulk(s, &writer, dry).await;
    assert_eq!(got.status, 200, "{}", got.body);
    assert_eq!(got.body["matched"], 0, "{}", got.body);
    let got = post(s, &writer, "/console/api/tasks/0123/cancel").await;
    assert_eq!(got.status, 404, "past the access layer: {}", got.body);
}

#[tokio::test]
async fn one_scope_is_operators_only() {
    let issuer = TestIssuer::start().await;
    let p = scope_server(&issuer).await;
    let s = &p.server;
    let admin = format!("Bearer {}", issuer.token("dave", &p.resource, &["console"]));
    let me = ok_as(s, &admin, "/console/api/me").await;
    assert_eq!(me["role"], "operator", "{me}");
    assert!(
        me["name"].as_str().is_some_and(|n| n.ends_with("#dave")),
        "{me}"
    );
    let reader = format!(
        "Bearer {}",
        issuer.token("vera", &p.resource, &["console:read"])
    );
    let got = call(s, Method::GET, "/console/api/me", Some(&reader), None).await;
    assert_eq!(
        got.status, 403,
        "no viewers without a viewer scope: {}",
        got.body
    );
}

/// The demo refuses credentials with an unknown role, or a bad line, at startup: a
/// usage error naming the line, never the password.
#[tokio::test]
async fn the_demo_refuses_an_unknown_role_at_startup() {
    const DEMO: &str = env!("CARGO_BIN_EXE_demo-server");
    for (credentials, says) in [
        (
            "admin:pw-one\nroot=bob:secret-two",
            "line 2: unknown console role \"root\": expected viewer or operator",
        ),
        (
            "admin:pw-one\nadmin:secret-two",
            "line 2: the console user \"admin\" is given twice",
        ),
        ("# nobody\n", "no console credentials"),
    ] {
        let out = tokio::time::timeout(
            mcp_tests::server_harness::WAIT,
            tokio::process::Command::new(DEMO)
                .args(["--http", "127.0.0.1:0", "--store", "memory"])
                .env("MCP_CONSOLE_CREDENTIALS", credentials)
                .stdin(std::process::Stdio::null())
                .kill_on_drop(true)
                .output(),
        )
        .await
        .expect("exits in time")
        .expect("runs");
        assert_eq!(
            out.status.code(),
            Some(2),
            "a usage error for {credentials:?}"
        );
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(
            said.contains("MCP_CONSOLE_CREDENTIALS") && said.contains(says),
            "{said}"
        );
        assert!(
            !said.contains("secret-two") && !said.contains("pw-one"),
            "{said}"
        );
    }
}
