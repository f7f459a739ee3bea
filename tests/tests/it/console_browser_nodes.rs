//! The console page's Nodes section in a real browser (a headless Chromium driven by
//! `chromedriver`, [`mcp_tests::browser`]) over two demo processes on one PostgreSQL
//! schema: an API node `A` (the console on with Basic credentials) and a worker `W1`,
//! both beating every 200 ms.
//!
//! - the nodes table lists both, with their roles, `active`; the API node offers no
//!   "Drain", the worker does;
//! - while W1 runs a `slow_compute` task (the table shows it held), a first click on its
//!   "Drain" arms the button and changes nothing, a second one drains it: its state shows
//!   `draining`, and once the task completed, `drained`.
//!
//! Skipped (named) without `chromium` and `chromedriver` (`MCP_TEST_CHROMIUM`,
//! `MCP_TEST_CHROMEDRIVER`, else `PATH`) or without PostgreSQL; under `CI=true` or
//! `MCP_REQUIRE_SERVICES=1` a missing one fails the test.

use std::path::Path;
use std::time::Duration;

use base64::Engine as _;
use mcp_tasks::conformance::report_skip;
use mcp_tests::browser::{self, Browser};
use mcp_tests::node_harness::{Cluster, Node, NodeStore, slow};
use serde_json::{Value, json};

const DEMO: &str = env!("CARGO_BIN_EXE_demo-server");
const CREDENTIALS: &str = "operator:nodes-browser-pass";
const BEAT: [&str; 2] = ["--heartbeat-ms", "200"];
/// How long the page may take to show a change.
const SHOWN: Duration = Duration::from_secs(20);

fn required() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
        || std::env::var("MCP_REQUIRE_SERVICES").as_deref() == Ok("1")
}

/// Waits until `script` (given `args`) returns true.
async fn until(page: &Browser, what: &str, script: &str, args: Value) {
    page.wait_for(what, SHOWN, script, args)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
}

/// What the row of node `id` shows: `[role, state, tasks held, drain button visible,
/// drain button armed]`, or null without a row.
async fn row(page: &Browser, id: &str) -> Value {
    page.script(
        "const r = document.querySelector(`#nodes-rows tr[data-node-id=\"${arguments[0]}\"]`); \
         if (r === null) return null; \
         const f = (n) => r.querySelector(`[data-field=\"${n}\"]`).textContent; \
         const b = r.querySelector('button[data-action=\"drain\"]'); \
         return [f('role'), f('state'), f('held'), !b.hidden, b.dataset.armed === 'true'];",
        json!([id]),
    )
    .await
    .expect("script")
}

/// Waits until node `id`'s state cell says `state`.
async fn state_is(page: &Browser, id: &str, state: &str) {
    until(
        page,
        &format!("node {id} {state}"),
        "const r = document.querySelector(`#nodes-rows tr[data-node-id=\"${arguments[0]}\"]`); \
         return r !== null && r.querySelector('[data-field=\"state\"]').textContent === arguments[1];",
        json!([id, state]),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_table_and_drain_from_the_page() {
    let (chromium, chromedriver) = match browser::programs() {
        Ok(found) => found,
        Err(why) if required() => panic!("console nodes browser test: {why}"),
        Err(why) => {
            report_skip(&format!("console nodes browser test: {why}"));
            return;
        }
    };
    let Some(store) = NodeStore::postgres("console_browser_nodes").await else {
        return;
    };
    let env = [("MCP_CONSOLE_CREDENTIALS", CREDENTIALS)];
    let mut api = store.args(0).to_vec();
    api.extend(["--role", "api"]);
    api.extend(BEAT);
    let mut worker = store.args(1).to_vec();
    worker.extend(BEAT);
    let (node, _w1) = tokio::join!(
        Node::start_with_env(Path::new(DEMO), "A", &api, &env),
        Node::start_worker(Path::new(DEMO), "W1", &worker),
    );
    let cluster = Cluster::new(vec![node.url.clone()]);
    let console_url = node.url.replace("/mcp", "/console");

    let page = Browser::start(&chromium, &chromedriver, 1280, 1000)
        .await
        .unwrap_or_else(|e| panic!("the browser: {e}"));
    let basic = base64::engine::general_purpose::STANDARD.encode(CREDENTIALS.as_bytes());
    page.cdp("Network.enable", json!({}))
        .await
        .expect("Network.enable");
    page.cdp(
        "Network.setExtraHTTPHeaders",
        json!({ "headers": { "Authorization": format!("Basic {basic}") } }),
    )
    .await
    .expect("Network.setExtraHTTPHeaders");
    page.navigate(&console_url).await.expect("load the console");

    // Both nodes listed, active; only the worker can be drained.
    state_is(&page, "A", "active").await;
    state_is(&page, "W1", "active").await;
    assert_eq!(
        row(&page, "A").await,
        json!(["api", "active", "0", false, false])
    );
    assert_eq!(
        row(&page, "W1").await,
        json!(["worker", "active", "0", true, false])
    );

    // W1 runs a task.
    let id = cluster
        .create_task(0, "slow_compute", slow(4.0, "held"))
        .await;
    until(
        &page,
        "W1 holds the task",
        "const r = document.querySelector('#nodes-rows tr[data-node-id=\"W1\"]'); \
         return r !== null && r.querySelector('[data-field=\"held\"]').textContent === '1' \
           && r.querySelector('[data-field=\"leases\"]').textContent.includes(arguments[0]);",
        json!([id]),
    )
    .await;

    // A first click arms the button; nothing is asked yet.
    let drain = "#nodes-rows tr[data-node-id=\"W1\"] button[data-action=\"drain\"]";
    page.click(drain).await.expect("arm the drain");
    let armed = row(&page, "W1").await;
    assert_eq!(armed[1], "active", "{armed}");
    assert_eq!(armed[4], true, "{armed}");
    // The second one drains.
    page.click(drain).await.expect("drain");
    state_is(&page, "W1", "draining").await;
    assert_eq!(row(&page, "W1").await[3], false, "no Drain button any more");
    // The task completes; then W1 says drained.
    cluster
        .poll_status(&id, "completed", Duration::from_secs(30))
        .await;
    state_is(&page, "W1", "drained").await;
    assert_eq!(
        row(&page, "W1").await,
        json!(["worker", "drained", "0", false, false])
    );
    page.quit().await;
}
