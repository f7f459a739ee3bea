//! The demo server: the conformance fixture tools, served over Streamable HTTP (default
//! 127.0.0.1:8000/mcp) or stdio, on the SQLite store at ./mcp-tasks.db by default.
//!
//! ```text
//! cargo run -p mcp-tasks-server --example demo
//! cargo run -p mcp-tasks-server --example demo -- --http 127.0.0.1:0 --store memory
//! cargo run -p mcp-tasks-server --example demo -- --stdio
//! ```
//!
//! # Stores
//!
//! - `--store memory`: in this process only.
//! - `--store sqlite:PATH` (the default, `sqlite:./mcp-tasks.db`): one file, one server.
//!   SQLite serves a **single node**, so on start the server recovers every task the file
//!   holds unfinished (see `SqliteStore::recover_unfinished`): its previous process is
//!   gone, so at-least-once tasks (`slow_compute`) run again and the others fail ("worker
//!   lost"). A second server on the same file is refused, naming the first.
//! - `--store postgres://USER@HOST:PORT/DB` (or `postgresql://`) and
//!   `--store redis://HOST:PORT/`: shared stores. Any number of instances may serve the same
//!   tasks: a task created through one is readable, answerable and cancellable through any
//!   other, and events (input answers, cancel requests) reach the instance running it. An
//!   instance that dies stops renewing its tasks' leases; another instance's sweep then
//!   fails them ("worker lost") about one lease period later.
//!
//! `--namespace NAME` isolates a deployment inside a shared store: the PostgreSQL schema
//! (default `mcp_tasks`; `[a-z0-9_]`, at most 63 bytes, not starting with a digit) or the
//! Redis key prefix (default `mcp-tasks`; no `{` or `}`). Instances share tasks exactly when
//! they use the same store URL and namespace. It is refused with `memory` and `sqlite:`.
//!
//! ```text
//! demo --http 127.0.0.1:8001 --store postgres://postgres@127.0.0.1:5432/test --node-id a
//! demo --http 127.0.0.1:8002 --store postgres://postgres@127.0.0.1:5432/test --node-id b
//! demo --http 127.0.0.1:8003 --store redis://127.0.0.1:6379/ --namespace staging --lease-ms 2000
//! ```
//!
//! # Roles (shared stores)
//!
//! `--role all` (the default) serves MCP and runs the tasks it creates. `--role api`
//! serves MCP but runs no tools: each task it creates waits (`working`) in the store
//! until a worker claims it. `--role worker` serves nothing: it claims tasks from the
//! store (the oldest first), runs them under a lease, and obeys cancel requests and
//! input answers that reach it through the store's events; it prints one line when it
//! is running. Workers also look for work at least once a second.
//!
//! ```text
//! demo --role api    --http 127.0.0.1:8001 --store postgres://postgres@127.0.0.1:5432/test
//! demo --role api    --http 127.0.0.1:8002 --store postgres://postgres@127.0.0.1:5432/test
//! demo --role worker --store postgres://postgres@127.0.0.1:5432/test --node-id w1
//! demo --role worker --store postgres://postgres@127.0.0.1:5432/test --node-id w2
//! ```
//!
//! `slow_compute` is delivered at least once: when its worker dies, another runs it
//! again (3 runs at most; the status message names the run). The other tools are
//! delivered at most once: their task fails as worker lost.
//!
//! `--node-id` names the instance in its leases (default: random); `--lease-ms` is how long
//! a task's lease lasts without renewal (default 30000; renewed every third of it), i.e.
//! about how long a task of a dead instance stays `working` before it is failed.
//!
//! # Telemetry
//!
//! Logs go to stderr (`RUST_LOG`, default `info`): at `info`, one line a task when it ends
//! (`task finished` with its id, status, tool, `duration_ms`, `error` if it failed), the
//! audit trail's cancels, answers, refusals and operator acts, and rare events; each
//! request's or poll's lines (a creation's audit included) are DEBUG. `--audit-log PATH`
//! appends the whole audit trail but the successful reads to a file, whatever `RUST_LOG`
//! says.
//!
//! With `OTEL_EXPORTER_OTLP_ENDPOINT`
//! set, the request and task spans go over OTLP/HTTP too (the standard `OTEL_*`
//! variables; see `mcp_tasks_server::telemetry`); the service is `mcp-tasks-demo` unless
//! `OTEL_SERVICE_NAME` says otherwise. `--metrics ADDR` serves the metrics in the
//! Prometheus text format at `http://ADDR/metrics`; `--live-tasks-every-ms` is how often
//! the store's tasks are counted by status for the `mcp_task_live` gauge (default 30000).
//! `--trace-parents` says whose `traceparent` a request span continues: `authenticated`
//! (the default: a caller without credentials gets a trace of its own, linked to the one
//! it sent), `everyone` or `nobody`.
//!
//! ```text
//! OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 demo --http 127.0.0.1:8000
//! demo --http 127.0.0.1:8000 --audit-log /var/log/mcp-tasks/audit.log
//! ```
//!
//! # Who may call
//!
//! - Nothing said: every HTTP caller is one anonymous principal.
//! - `--bearer NAME:TOKEN` (repeatable): a static token table, for local use.
//! - `--oauth-issuer URL`: an OAuth 2.1 resource server. Access tokens are JWTs of that
//!   authorization server (its RFC 8414 or OpenID metadata gives the JWKS), for the
//!   audience `--oauth-resource URL` (default: this server's own `http://ADDR/mcp`);
//!   `--oauth-scope SCOPE` (repeatable) is required of every request. The protected
//!   resource metadata is served at `/.well-known/oauth-protected-resource/mcp`.
//!   `--oauth-introspection-client-id ID` with `--oauth-introspection-client-secret
//!   SECRET`: opaque (non-JWT) tokens are checked at the authorization server's RFC 7662
//!   `introspection_endpoint`, as that client. A DPoP-bound token (`cnf.jkt`, RFC 9449)
//!   passes only with its proof; `--oauth-require-dpop` refuses bearer tokens, and
//!   `--oauth-dpop-nonce` has proofs carry a nonce of this server. `--bearer` and
//!   `--oauth-issuer` cannot be combined.
//!
//! ```text
//! demo --http 127.0.0.1:8000 --oauth-issuer https://auth.example.com --oauth-scope mcp
//! ```
//!
//! # Operator console
//!
//! The operator console at `http://ADDR/console`: every principal's tasks, their counts
//! and activity, live, cancel and re-run. It is served behind HTTP Basic authentication
//! when its credentials are given in one of three ways, each credential
//! `[ROLE=]USER:PASSWORD` (the role `operator`, the default, may cancel and re-run;
//! `viewer` may only read; any other role is refused at startup):
//!
//! - the environment variable `MCP_CONSOLE_CREDENTIALS`, one credential per line (read
//!   only when neither flag below nor `--console-scope` is given, and only where the
//!   console can be served: not with `--stdio` or `--role worker`);
//! - `--console-file PATH`: one credential per line of that file, the whitespace around
//!   each trimmed, blank lines and lines starting with `#` skipped (keep the file
//!   readable by the server's user only; the demo warns when others can read it);
//! - `--console [ROLE=]USER:PASSWORD`: one credential on the command line, where other
//!   users of the machine can read it (`ps`); the demo warns on stderr.
//!
//! Basic credentials travel in clear text: use it only on a loopback address or behind
//! TLS (a proxy that terminates it). With `--oauth-issuer`, `--console-scope SCOPE` serves
//! it instead to callers whose access token holds `SCOPE` (and every `--oauth-scope`), as
//! operators; add `--console-read-scope SCOPE` to let in viewers, whose tokens hold that
//! scope instead (the conventional pair: `console:write` and `console:read`).
//! `--console`, `--console-file` and `--console-scope` cannot be combined; none applies to
//! `--stdio` or `--role worker`.
//!
//! ```text
//! MCP_CONSOLE_CREDENTIALS=admin:change-me demo --http 127.0.0.1:8000
//! MCP_CONSOLE_CREDENTIALS=$'admin:change-me\nviewer=support:another' demo --http 127.0.0.1:8000
//! demo --http 127.0.0.1:8000 --console-file /run/secrets/mcp-console
//! demo --http 127.0.0.1:8000 --oauth-issuer https://auth.example.com \
//!     --console-scope console:write --console-read-scope console:read
//! ```

use std::io::Write;
use std::sync::Arc;

use std::time::Duration;

use clap::Parser;
use mcp_tasks::Limits;
use mcp_tasks_server::auth::{BearerTokens, IntrospectionClient, OAuthConfig, OAuthResourceServer};
use mcp_tasks_server::console::{CONSOLE_PATH, ConsoleAccess, ConsoleConfig};
use mcp_tasks_server::http::{HttpConfig, local_url};
use mcp_tasks_server::store_url;
use mcp_tasks_server::telemetry::{self, TelemetryConfig};
use mcp_tasks_server::{RuntimeConfig, Server, demo};

#[path = "demo/console.rs"]
mod console;
#[path = "demo/try_it.rs"]
mod try_it;

use console::{console_config, console_scope};
use try_it::try_it;

#[derive(Parser, Debug)]
#[command(
    name = "demo",
    about = "MCP tasks demo server (the conformance fixture tools)"
)]
struct Args {
    /// Serve Streamable HTTP on this address: `HOST:PORT`, the host a name (resolved,
    /// e.g. `localhost:8000`) or an IP address.
    #[arg(long, default_value = "127.0.0.1:8000", conflicts_with = "stdio")]
    http: String,
    /// Serve on stdin/stdout instead of HTTP.
    #[arg(long)]
    stdio: bool,
    /// Where tasks live: `memory`, `sqlite:PATH`, `postgres://...` / `postgresql://...`,
    /// `redis://HOST:PORT/`.
    #[arg(long, default_value = "sqlite:./mcp-tasks.db")]
    store: String,
    /// The deployment inside a shared store: the PostgreSQL schema or the Redis key prefix.
    #[arg(long)]
    namespace: Option<String>,
    /// This instance's name in task leases (default: random).
    #[arg(long)]
    node_id: Option<String>,
    /// How long a task's lease lasts without renewal, in milliseconds (renewed every
    /// third of it).
    #[arg(long, default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(30..))]
    lease_ms: u64,
    /// Fault injection: the store reads time this many milliseconds off the system's
    /// clock (negative: behind), as on a machine whose clock is skewed; leases, TTLs and
    /// event times are stamped with it. For tests of clock skew; default 0.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    clock_offset_ms: i64,
    /// How often this instance writes its heartbeat to the store's node registry (and a
    /// worker reads whether it is asked to drain), in milliseconds; it is listed lost
    /// after three intervals without one.
    #[arg(long, default_value_t = 5_000, value_parser = clap::value_parser!(u64).range(10..))]
    heartbeat_ms: u64,
    /// The most events a task's log keeps (`tasks/stream`, the console's timeline); the
    /// oldest go first. Default: `Limits::max_log_entries` (1,000).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    max_log_entries: Option<u64>,
    /// The most bytes a task's log keeps. Default: `Limits::max_log_bytes` (1 MiB).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    max_log_bytes: Option<u64>,
    /// What this instance does with tasks: `all` (serve MCP and run the tasks it
    /// creates), `api` (serve MCP; tasks wait for a worker) or `worker` (run tasks only).
    #[arg(long, default_value = "all", conflicts_with = "stdio")]
    role: mcp_tasks_server::Role,
    /// Serve the metrics in the Prometheus text format at `http://ADDR/metrics`
    /// (`HOST:PORT`).
    #[arg(long)]
    metrics: Option<String>,
    /// How often to count the store's tasks by status for the `mcp_task_live` gauge, in
    /// milliseconds (with `--metrics` or OTLP metrics).
    #[arg(long, default_value_t = 30_000)]
    live_tasks_every_ms: u64,
    /// Whose W3C trace context a request span continues (else it only links it):
    /// `authenticated` (callers with credentials, and stdio), `everyone` or `nobody`.
    #[arg(long, default_value = "authenticated")]
    trace_parents: telemetry::TraceParents,
    /// Append the audit trail (tasks created, answered, cancelled; refusals; operator
    /// acts) to this file, whatever RUST_LOG says. Created readable by this user only.
    #[arg(long, value_name = "PATH")]
    audit_log: Option<std::path::PathBuf>,
    /// A caller allowed in, as `NAME:TOKEN` (send `Authorization: Bearer TOKEN`); repeat for
    /// more. With none, every HTTP caller is one anonymous principal.
    #[arg(long = "bearer", value_parser = BearerTokens::parse_pair)]
    bearer: Vec<(String, String)>,
    /// The OAuth authorization server (its issuer URL) whose JWT access tokens are
    /// accepted; its metadata gives the keys. Every request then needs a token.
    #[arg(long, conflicts_with_all = ["bearer", "stdio"])]
    oauth_issuer: Option<String>,
    /// The audience tokens must name (RFC 8707): this server's canonical URL. Default:
    /// its own `http://ADDR/mcp`.
    #[arg(long, requires = "oauth_issuer")]
    oauth_resource: Option<String>,
    /// A scope every request needs (repeatable).
    #[arg(long = "oauth-scope", requires = "oauth_issuer")]
    oauth_scope: Vec<String>,
    /// The client id this server introspects opaque access tokens as (RFC 7662, at the
    /// metadata's `introspection_endpoint`, client_secret_basic).
    #[arg(long, requires_all = ["oauth_issuer", "oauth_introspection_client_secret"])]
    oauth_introspection_client_id: Option<String>,
    /// That client's secret.
    #[arg(long, requires = "oauth_introspection_client_id")]
    oauth_introspection_client_secret: Option<String>,
    /// Accept DPoP-bound access tokens only (RFC 9449), each request with its proof.
    /// (A token bound to a key always needs its proof, with or without this flag.)
    #[arg(long, requires = "oauth_issuer")]
    oauth_require_dpop: bool,
    /// DPoP proofs must carry a nonce of this server (`use_dpop_nonce`, `DPoP-Nonce`).
    #[arg(long, requires = "oauth_issuer")]
    oauth_dpop_nonce: bool,
    /// Serve the operator console at `/console` behind HTTP Basic authentication with
    /// this credential, `[ROLE=]USER:PASSWORD` (ROLE: `operator`, the default, or
    /// `viewer`, who may only read). On the command line the password can be read by
    /// other users (`ps`): prefer the environment variable MCP_CONSOLE_CREDENTIALS (one
    /// credential per line, read when no console flag is given) or `--console-file`.
    /// Basic auth sends them in clear text: only on a loopback address or behind TLS.
    #[arg(long, value_name = "[ROLE=]USER:PASSWORD", value_parser = ConsoleConfig::parse_basic, conflicts_with = "stdio")]
    console: Option<ConsoleConfig>,
    /// Serve the operator console as `--console` does, with the credentials read from
    /// this file: one `[ROLE=]USER:PASSWORD` per line, the whitespace around it trimmed,
    /// blank lines and lines starting with `#` skipped. Keep the file readable by the
    /// server's user only.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["stdio", "console"])]
    console_file: Option<std::path::PathBuf>,
    /// Serve the operator console at `/console` to callers whose OAuth access token
    /// holds this scope (with `--oauth-issuer`), as operators (e.g. `console:write`).
    #[arg(long, value_name = "SCOPE", value_parser = console_scope, requires = "oauth_issuer", conflicts_with_all = ["console", "console_file"])]
    console_scope: Option<ConsoleConfig>,
    /// With `--console-scope`: callers whose token holds this scope instead are let in
    /// as viewers, who may only read (e.g. `console:read`).
    #[arg(long, value_name = "SCOPE", requires = "console_scope")]
    console_read_scope: Option<String>,
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => return ctrl_c.await.unwrap_or_default(),
            };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}

/// Says on stderr, before a shutdown that has tasks to wait for, how many and for how long.
fn say_shutdown_wait(server: &Server, grace: Duration) {
    let running = server.runtime().running_count();
    if running > 0 {
        let tasks = if running == 1 { "task" } else { "tasks" };
        eprintln!(
            "demo: shutting down: waiting up to {} s for {running} running {tasks} to finish; \
             any still running then are cancelled",
            grace.as_secs_f64()
        );
    }
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let console = match console_config(&args) {
        Ok(console) => console,
        Err(e) => {
            use clap::CommandFactory;
            Args::command()
                .error(clap::error::ErrorKind::ValueValidation, e)
                .exit();
        }
    };
    if console.is_some() && args.role == mcp_tasks_server::Role::Worker {
        use clap::CommandFactory;
        Args::command()
            .error(
                clap::error::ErrorKind::ArgumentConflict,
                "the operator console is served over HTTP: not with --role worker",
            )
            .exit();
    }
    // Logs to stderr; traces and metrics over OTLP when the OTEL_* variables name an
    // endpoint. Kept until the end: dropping it flushes what is still buffered.
    let telemetry = match telemetry::init(&TelemetryConfig {
        default_log_filter: "info".into(),
        service_name: "mcp-tasks-demo".into(),
        prometheus: args.metrics.is_some(),
        live_tasks_every: Duration::from_millis(args.live_tasks_every_ms),
        trace_parents: args.trace_parents,
        audit_file: args.audit_log.clone(),
    }) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("demo: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    if let (Some(addr), Some(prometheus)) = (&args.metrics, telemetry.prometheus()) {
        let listener = match tokio::net::TcpListener::bind(addr.as_str()).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("demo: cannot serve the metrics on {addr}: {e}");
                return std::process::ExitCode::FAILURE;
            }
        };
        if let Ok(at) = listener.local_addr() {
            tracing::info!("metrics on {}", local_url(at, "/metrics"));
        }
        tokio::spawn(async move {
            if let Err(e) = prometheus.serve(listener, std::future::pending()).await {
                tracing::warn!(error = %e, "the metrics endpoint stopped");
            }
        });
    }
    let mut limits = Limits::default();
    if let Some(n) = args.max_log_entries {
        limits.max_log_entries = usize::try_from(n).unwrap_or(usize::MAX);
    }
    if let Some(n) = args.max_log_bytes {
        limits.max_log_bytes = usize::try_from(n).unwrap_or(usize::MAX);
    }
    let clock = Arc::new(store_url::OffsetClock {
        offset_ms: args.clock_offset_ms,
    });
    let store =
        match store_url::open_with_clock(&args.store, args.namespace.as_deref(), limits, clock)
            .await
        {
            Ok(s) => s,
            Err(e) => {
                eprintln!("demo: {e}");
                return std::process::ExitCode::FAILURE;
            }
        };
    let tools = match demo::tools() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("demo: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let lease = Duration::from_millis(args.lease_ms);
    let mut runtime = RuntimeConfig {
        lease,
        renew_every: lease / 3,
        ..RuntimeConfig::default()
    };
    if let Some(node_id) = args.node_id {
        runtime.node_id = node_id;
    }
    let grace = runtime.shutdown_grace;
    tracing::info!(node_id = %runtime.node_id, lease_ms = args.lease_ms, role = ?args.role, "task runtime");
    let node_id = runtime.node_id.clone();
    let mut builder = Server::builder("mcp-tasks-demo", env!("CARGO_PKG_VERSION"))
        .store(store)
        .runtime(runtime)
        .role(args.role)
        .node(mcp_tasks_server::NodeConfig {
            heartbeat: Duration::from_millis(args.heartbeat_ms),
        })
        .instructions("Demo tools for MCP tasks: slow_compute runs as a task; confirm_delete asks before it acts.");
    for tool in tools {
        builder = builder.tool(tool);
    }
    let server = builder.build();

    if args.role == mcp_tasks_server::Role::Worker {
        // Errors ignored: whoever reads our stdout may stop reading early.
        let mut out = std::io::stdout().lock();
        let _ = writeln!(
            out,
            "MCP tasks demo worker {node_id} running (store: {})",
            store_label(&args.store, args.namespace.as_deref())
        );
        let _ = out.flush();
        drop(out);
        shutdown_signal().await;
        tracing::info!("shutting down");
        server.shutdown().await;
        return std::process::ExitCode::SUCCESS;
    }

    if args.stdio {
        tracing::info!(store = %store_url::shown(&args.store), "serving MCP on stdio");
        let served = mcp_tasks_server::stdio::serve(&server).await;
        say_shutdown_wait(&server, grace);
        server.shutdown().await;
        return match served {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("demo: {e}");
                std::process::ExitCode::FAILURE
            }
        };
    }

    // A host name is resolved; the first address it resolves to is bound.
    let listener = match tokio::net::TcpListener::bind(args.http.as_str()).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!(
                "demo: cannot listen on {} (expected HOST:PORT, e.g. 127.0.0.1:8000 or localhost:8000): {e}",
                args.http
            );
            return std::process::ExitCode::FAILURE;
        }
    };
    let Ok(addr) = listener.local_addr() else {
        eprintln!("demo: the listener on {} has no address", args.http);
        return std::process::ExitCode::FAILURE;
    };
    let url = local_url(addr, "/mcp");
    let mut http = HttpConfig::default();
    if !args.bearer.is_empty() {
        http.principal = Some(Arc::new(BearerTokens::new(args.bearer.clone())));
    }
    if let Some(issuer) = &args.oauth_issuer {
        let resource = args.oauth_resource.clone().unwrap_or_else(|| url.clone());
        let mut config = OAuthConfig::new(issuer.clone(), resource.clone())
            .require_scopes(args.oauth_scope.clone());
        if let (Some(id), Some(secret)) = (
            &args.oauth_introspection_client_id,
            &args.oauth_introspection_client_secret,
        ) {
            config.introspection = Some(IntrospectionClient::new(id.clone(), secret.clone()));
        }
        config.dpop.required = args.oauth_require_dpop;
        config.dpop.require_nonce = args.oauth_dpop_nonce;
        match OAuthResourceServer::new(config) {
            Ok(auth) => {
                let introspection = args.oauth_introspection_client_id.as_deref();
                tracing::info!(%issuer, %resource, scopes = ?args.oauth_scope, ?introspection, "OAuth resource server");
                http.principal = Some(Arc::new(auth));
            }
            Err(e) => {
                eprintln!("demo: {e}");
                return std::process::ExitCode::FAILURE;
            }
        }
    }
    http.console = console;
    // Errors ignored: whoever reads our stdout may stop reading early.
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "MCP tasks demo server on {url} (store: {})",
        store_label(&args.store, args.namespace.as_deref())
    );
    if let Some(console) = &http.console {
        let who = match &console.access {
            ConsoleAccess::Basic(users) => {
                let names: Vec<String> = users
                    .iter()
                    .map(|u| format!("{} ({})", u.user, u.role))
                    .collect();
                format!("HTTP Basic authentication as {}", names.join(", "))
            }
            ConsoleAccess::Scope {
                operator,
                viewer: None,
            } => format!("OAuth access tokens with scope {operator}"),
            ConsoleAccess::Scope {
                operator,
                viewer: Some(viewer),
            } => format!(
                "OAuth access tokens with scope {operator} (operators) or {viewer} (viewers)"
            ),
        };
        let _ = writeln!(
            out,
            "Operator console on {} ({who})",
            local_url(addr, CONSOLE_PATH)
        );
        if matches!(console.access, ConsoleAccess::Basic(_)) && !addr.ip().is_loopback() {
            tracing::warn!(
                "the console's Basic credentials travel in clear text: serve it on a \
                 loopback address or behind TLS"
            );
        }
    }
    let _ = writeln!(out, "Try it:");
    let _ = writeln!(out, "{}", try_it(&url));
    let _ = out.flush();
    drop(out);
    let token = server.shutdown_token();
    let stop = async move {
        shutdown_signal().await;
        tracing::info!("shutting down");
        token.cancel();
    };
    let served = mcp_tasks_server::http::serve(&server, listener, http, stop).await;
    say_shutdown_wait(&server, grace);
    server.shutdown().await;
    match served {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("demo: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// The store as the start line shows it: its URL without a password, and the deployment
/// inside it when `--namespace` names one.
fn store_label(store: &str, namespace: Option<&str>) -> String {
    let shown = store_url::shown(store);
    match namespace {
        Some(namespace) => format!("{shown}, namespace {namespace}"),
        None => shown,
    }
}
