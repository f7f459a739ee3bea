//! The conformance kit against [`PostgresStore`](mcp_tasks::PostgresStore), one schema
//! per behaviour's namespace. Skipped (each test passes after printing why) when
//! PostgreSQL is not reachable at `MCP_TEST_POSTGRES_URL`, unless `MCP_REQUIRE_SERVICES=1`.

mcp_tasks::conformance_tests!(optional: mcp_tasks::conformance::PostgresFactory::from_env());
