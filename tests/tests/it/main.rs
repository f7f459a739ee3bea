//! The cross-crate tests, one module per subject, built as one test binary.
//!
//! One binary instead of one per file: each of these links the whole stack (engine,
//! server, client, every store backend), so sixty-odd binaries cost minutes of linking
//! and gigabytes of disk for nothing. `cargo test -p mcp-tests --test it <module>` runs
//! one subject. Two tests stay binaries of their own: `chaos` (heavy, one run at a time,
//! kills processes) and `fuzz` (run in release by `cargo xtask fuzz`).

mod announce_order;
mod batches_refused;
mod client_2025;
mod client_bad_server;
mod client_credentials_cli;
mod client_demo;
mod client_early_task_messages;
mod client_headers;
mod client_hosted_cli;
mod client_hosted_common;
mod client_hosted_server;
mod client_hosted_tasks;
mod client_hosted_ts_sdk;
mod client_machine_binding;
mod client_oauth;
mod client_oauth_cli;
mod client_oauth_hardening;
mod client_rmcp;
mod client_store_outage;
mod client_task_api;
mod conformance_fixture;
mod console_api;
mod console_browser;
mod crash;
mod custom_executor;
mod deadline_promotion;
mod demo_cli;
mod demo_try_it;
mod engine_bad_input;
mod engine_decoder_fuzz;
mod engine_duplex;
mod engine_stdio;
mod ext_tasks_interop;
mod legacy_http;
mod legacy_session_answers;
mod legacy_session_limits;
mod legacy_sse_resume;
mod legacy_stdio;
mod legacy_ts_sdk;
mod mcp_call_cli;
mod multi_node;
mod oauth_demo;
mod oauth_dpop;
mod oauth_dpop_http;
mod oauth_end_to_end;
mod oauth_introspection;
mod oauth_keys;
mod oauth_resource;
mod runtime_event_lag;
mod runtime_store_outage;
mod scale_out;
mod server_asking_wire;
mod server_bad_input_http;
mod server_cache_hints;
mod server_limits_http;
mod server_owner_isolation_http;
mod server_param_headers;
mod server_push;
mod server_resources_prompts;
mod server_results_schema;
mod server_rmcp_client;
mod server_shutdown;
mod server_stdio;
mod server_stdio_fixture_wire;
mod server_tasks_http;
mod session_id_redaction;
mod session_versions_http;
mod shared_input_errors;
mod shared_resource_updates;
mod shared_sessions;
mod shared_sessions_ts_sdk;
mod spec_in_repo;
mod status_push_2025;
mod stdio_eof_answers;
mod store_outage;
mod task_context;
mod telemetry_bounds;
mod telemetry_metrics;
mod telemetry_otlp;
mod third_party_backend;
