//! An MCP server that runs tools as tasks, over stdio and Streamable HTTP.
//!
//! Status: not built yet (issue 4). Today this crate only fixes the crate boundary:
//! it depends on `mcp-protocol` (and, later, `mcp-tasks`) and never on `mcp-client`.
