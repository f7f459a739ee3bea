//! The conformance kit against [`MemoryStore`](mcp_tasks::MemoryStore).

mcp_tasks::conformance_tests!(mcp_tasks::conformance::MemoryFactory::default());
