//! The conformance kit against [`RedisStore`](mcp_tasks::RedisStore) on the server at
//! `$MCP_TEST_REDIS_URL` (default `redis://127.0.0.1:6379/`), one key prefix per
//! behaviour's namespace. Skipped when no server answers, unless `MCP_REQUIRE_SERVICES=1`.

mcp_tasks::conformance_tests!(optional: mcp_tasks::conformance::RedisFactory::from_env());
