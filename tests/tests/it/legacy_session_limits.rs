//! MCP 2025-11-25 sessions per principal (issue 35, finding 7): one caller cannot take
//! every session of the server. Past `HttpConfig::max_sessions_per_principal`, its next
//! `initialize` is refused with -32029 (HTTP 429) naming the limit, while another
//! principal still gets a session; anonymous callers together count as one principal; a
//! `DELETE` gives the caller its room back.

use mcp_tasks_protocol::error_codes;
use mcp_tasks_server::http::HttpConfig;
use mcp_tests::legacy::init_params;
use mcp_tests::server_harness::{Reply, TestServer, bearer_principal, request};

const PER_PRINCIPAL: usize = 2;

async fn initialize(s: &TestServer, auth: Option<&str>) -> Reply {
    let headers: Vec<(&str, &str)> = auth.map(|a| ("authorization", a)).into_iter().collect();
    s.post(&request(s.id(), "initialize", init_params()), &headers)
        .await
}

/// A session opened by `auth`: its id.
async fn open(s: &TestServer, auth: Option<&str>) -> String {
    let reply = initialize(s, auth).await;
    assert_eq!(reply.status, 200, "{auth:?}: {}", reply.text);
    reply
        .headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_else(|| panic!("a session id: {reply:?}"))
        .to_owned()
}

fn assert_over_the_limit(reply: &Reply, who: &str) {
    assert_eq!(reply.status, 429, "{who}: {}", reply.text);
    assert_eq!(
        reply.body["error"]["code"],
        error_codes::LIMIT_EXCEEDED,
        "{who}: {}",
        reply.text
    );
    assert!(
        reply.text.contains("max_sessions_per_principal"),
        "{who}: names the limit: {}",
        reply.text
    );
    assert!(
        reply.headers.get("mcp-session-id").is_none(),
        "{who}: no session"
    );
}

#[tokio::test]
async fn one_principal_cannot_take_every_session() {
    let s = TestServer::start_http(HttpConfig {
        principal: Some(bearer_principal()),
        max_sessions_per_principal: PER_PRINCIPAL,
        ..HttpConfig::default()
    })
    .await;
    let mut alices = Vec::new();
    for _ in 0..PER_PRINCIPAL {
        alices.push(open(&s, Some("Bearer alice")).await);
    }
    assert_over_the_limit(&initialize(&s, Some("Bearer alice")).await, "alice");

    // Another principal is not affected, and has its own share.
    for _ in 0..PER_PRINCIPAL {
        open(&s, Some("Bearer bob")).await;
    }
    assert_over_the_limit(&initialize(&s, Some("Bearer bob")).await, "bob");

    // Anonymous callers share one.
    for _ in 0..PER_PRINCIPAL {
        open(&s, None).await;
    }
    assert_over_the_limit(&initialize(&s, None).await, "anonymous");

    // Alice's sessions still work; ending one gives her room again.
    let deleted = s
        .client
        .delete(&s.url)
        .header("authorization", "Bearer alice")
        .header("mcp-session-id", alices[0].as_str())
        .send()
        .await
        .expect("DELETE");
    assert_eq!(deleted.status(), 204);
    open(&s, Some("Bearer alice")).await;
    assert_over_the_limit(&initialize(&s, Some("Bearer alice")).await, "alice again");
    s.stop().await;
}

/// The default leaves room for a caller's ordinary needs, well under `max_sessions`.
#[test]
fn the_default_is_a_share_of_the_total() {
    let config = HttpConfig::default();
    assert_eq!(config.max_sessions_per_principal, 100);
    assert!(config.max_sessions_per_principal < config.max_sessions);
}
