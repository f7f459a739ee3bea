//! The conformance kit against [`SqliteStore`](mcp_tasks::SqliteStore), one temporary
//! database file per behaviour's namespace.

mcp_tasks::conformance_tests!(mcp_tasks::conformance::SqliteFactory::temporary());
