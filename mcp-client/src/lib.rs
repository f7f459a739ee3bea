//! An MCP client that drives tasks to the end.
//!
//! Status: not built yet (issue 5). Today this crate only fixes the crate boundary:
//! it depends on `mcp-protocol` and never on `mcp-server`.
