//! Durable MCP task storage: the `TaskStore` trait with its written contract, its
//! backends, and the conformance kit every backend must pass.
//!
//! Status: not built yet (issue 3). Today this crate only fixes the crate boundary:
//! it may depend on `mcp-protocol` and never on `mcp-server` or `mcp-client`.
