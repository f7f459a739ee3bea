//! Caching hints on MCP 2026-07-28 results (SEP-2549) over Streamable HTTP: each kind
//! of result carries the `cacheScope` and `ttlMs` set for it with
//! `ServerBuilder::cache_hint`, every other kind the default (private, 0), and every
//! result still validates against the official schema.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use mcp_tasks_protocol::types::{ContentBlock, PromptMessage, Role};
use mcp_tasks_server::http::HttpConfig;
use mcp_tasks_server::{CacheHint, Cacheable, PromptDef, ResourceData, ResourceDef, Server};
use mcp_tests::schema_check::{Schema, spec_dir};
use mcp_tests::server_harness::{TestServer, demo_tools, meta};
use serde_json::{Value, json};

const URI: &str = "test://cached";

fn server(hints: &[(Cacheable, CacheHint)]) -> Server {
    let mut builder = Server::builder("cache-hints", "0")
        .resource(ResourceDef::new(URI, "cached", || async {
            Ok(ResourceData::text("cached text"))
        }))
        .prompt(PromptDef::new("cached_prompt", |(): ()| async {
            Ok(vec![PromptMessage::new(
                Role::User,
                ContentBlock::text("hi"),
            )])
        }));
    for tool in demo_tools() {
        builder = builder.tool(tool);
    }
    for (result, hint) in hints {
        builder = builder.cache_hint(*result, *hint);
    }
    builder.build()
}

/// Each cacheable request, the result type the schema names for it, and its kind.
fn requests() -> [(&'static str, Value, &'static str, Cacheable); 6] {
    [
        (
            "server/discover",
            json!({}),
            "DiscoverResult",
            Cacheable::Discover,
        ),
        ("tools/list", json!({}), "ListToolsResult", Cacheable::Tools),
        (
            "resources/list",
            json!({}),
            "ListResourcesResult",
            Cacheable::Resources,
        ),
        (
            "resources/templates/list",
            json!({}),
            "ListResourceTemplatesResult",
            Cacheable::ResourceTemplates,
        ),
        (
            "prompts/list",
            json!({}),
            "ListPromptsResult",
            Cacheable::Prompts,
        ),
        (
            "resources/read",
            json!({ "uri": URI }),
            "ReadResourceResult",
            Cacheable::ResourceRead,
        ),
    ]
}

#[tokio::test]
async fn every_cacheable_result_is_private_and_stale_by_default() {
    let s = TestServer::start_server(server(&[]), HttpConfig::default()).await;
    for (method, mut params, _, _) in requests() {
        params["_meta"] = meta(false);
        let reply = s.rpc(method, params).await;
        let result = reply.result();
        assert_eq!(result["cacheScope"], "private", "{method}: {result}");
        assert_eq!(result["ttlMs"], 0, "{method}: {result}");
    }
}

#[tokio::test]
async fn each_kind_of_result_carries_the_hint_set_for_it() {
    let spec = spec_dir("each_kind_of_result_carries_the_hint_set_for_it");
    let mut core = spec.map(|dir| Schema::load(dir.join("core-2026-07-28/schema.json")));
    // A different hint for each kind, so a result carrying another kind's hint shows.
    let hints: Vec<(Cacheable, CacheHint)> = requests()
        .iter()
        .enumerate()
        .map(|(i, (_, _, _, kind))| {
            let ttl = Duration::from_millis(1_000 * (i as u64 + 1) + 7);
            let hint = if i % 2 == 0 {
                CacheHint::public(ttl)
            } else {
                CacheHint::private(ttl)
            };
            (*kind, hint)
        })
        .collect();
    let s = TestServer::start_server(server(&hints), HttpConfig::default()).await;
    for ((method, mut params, type_name, _), (_, hint)) in requests().into_iter().zip(&hints) {
        params["_meta"] = meta(false);
        let reply = s.rpc(method, params).await;
        let result = reply.result();
        let scope = if hint.scope == mcp_tasks_server::CacheScope::Public {
            "public"
        } else {
            "private"
        };
        assert_eq!(result["cacheScope"], scope, "{method}: {result}");
        assert_eq!(result["ttlMs"], hint.ttl_ms(), "{method}: {result}");
        if let Some(core) = core.as_mut() {
            core.check(method, type_name, result);
        }
    }
}
