//! Calls one tool and follows it to the end, with a live status line.
//!
//! ```text
//! cargo run -p mcp-tasks-client --example mcp-call -- --http http://127.0.0.1:8000/mcp slow_compute '{"seconds":5}'
//! cargo run -p mcp-tasks-client --example mcp-call -- --stdio "target/debug/examples/demo --stdio --store memory" confirm_delete '{"filename":"a.txt"}'
//! cargo run -p mcp-tasks-client --example mcp-call -- --http URL slow_compute '{"seconds":60}' --detach > task.json
//! cargo run -p mcp-tasks-client --example mcp-call -- --resume @task.json
//! cargo run -p mcp-tasks-client --example mcp-call -- --http https://example.com/mcp --login
//! ```
//!
//! Elicitation requests are asked at the terminal, one field at a time, each named by its
//! schema's `title` (its key when it has none): a `[y/n]` or number question is asked
//! again on an answer it cannot read, at most three times (then a yes/no is taken as no,
//! a number declines the form); end of input declines it too. Ctrl-C cancels the task and
//! exits with status 130 (a second Ctrl-C exits at once, without waiting for the
//! cancellation). With `--client-tasks` the session is MCP 2025-11-25 and
//! declares client-hosted tasks (kept in memory): a server that asks for an elicitation
//! as a task of the client gets its task at once, and the question is asked at the
//! terminal all the same, its answer the task's result.
//!
//! A task's events (`tasks/stream`, draft SEP-2694) are shown on stderr as they arrive,
//! above the status line, when the server advertises event streams and the call became
//! a task (and for `--resume`, from the earliest event the server still keeps): a tool's
//! text output as its lines, any other event of the tool as its type and JSON payload;
//! the status changes stay on the status line. `--no-events` never shows them;
//! `--events` shows them also when the server does not advertise them (and says so when
//! it has none); of the two, the last given wins. The stream resumes by itself after a
//! dropped connection, nothing shown twice.
//!
//! The status line is drawn in place (a spinner) only when stderr is a terminal;
//! otherwise each change of status is one plain line, and the log lines (`RUST_LOG`) are
//! not coloured: no escape codes in a log file. Under
//! `--stdio` the server's stderr is piped through mcp-call and printed line by line above
//! the status line (held back while a question waits for its answer), so its logs never
//! overwrite the status line nor get erased by it.
//!
//! The exit status is 0 when the tool's result came back and is not an error, 130 after
//! Ctrl-C, 1 otherwise: a result with `isError: true` (its text printed on stdout as
//! `tool error: ...`), a failed or cancelled task, or any other failure (said on
//! stderr).
//!
//! A server that asks for OAuth gets a login: the authorization URL is printed (and
//! opened with `xdg-open`/`open` when there is one, unless `--no-open`), the redirect
//! comes back to a loopback port (`--redirect-port`, default any free one), and the
//! tokens are kept in `--token-file` (default `~/.config/mcp-call/tokens.json`, mode
//! 0600) for next time, refreshed shortly before they expire. The URL is printed on stderr alone
//! on its line, indented by two spaces, so a script (or a test playing the browser) can
//! read it. Each step of a login is one short line on stderr (discovering the
//! authorization server, registering, the URL and the redirect awaited, token received,
//! refreshed, saved to the token file); `--login` ends saying whether it logged in, only
//! refreshed, or found the stored login good. A client registered beforehand is given
//! with the issuer it belongs to (`--client-id ID [--client-secret SECRET]
//! --client-issuer ISSUER`) and used only with that authorization server. A program
//! with no person at hand logs in as a machine client, with the client credentials
//! grant: `--client-id ID --client-secret SECRET --client-issuer ISSUER
//! --client-credentials`, or `--client-id ID --client-key KEY.pem --client-issuer
//! ISSUER` for a signed client assertion (`private_key_jwt`); its credentials go to
//! that authorization server only. Without `--client-issuer` a secret or key is refused
//! (a usage error, exit status 2: the MCP server would choose where it goes), unless
//! `--trust-first-issuer` says to trust the first authorization server met: it is
//! recorded in the token file and any other is refused after it (a warning says so).
//! A machine client asks for the scopes given with `--client-scope` only (repeatable):
//! a server asking for another is refused, naming it. `--dpop`
//! binds the tokens to a key made for the run (RFC 9449). A server that
//! answers 401 without publishing OAuth metadata may take a static token instead: the
//! error says so, naming `--bearer TOKEN`; and when the token given with `--bearer` is
//! refused (401), the error says that too.

use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};

use clap::{CommandFactory, Parser};
use mcp_tasks_client::auth::AuthError;
use mcp_tasks_client::auth::{
    AuthConfig, AuthEvent, Authorize, ClientAuth, FileTokenStore, Grant, IssuerBinding,
    LoopbackRedirect, MachineClient, SigningKey,
};
use mcp_tasks_client::{
    ClientConfig, ClientError, Endpoint, McpClient, Revision, Started, TaskRef,
};
use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::v2026::CallToolResult;

#[derive(Parser, Debug)]
#[command(
    name = "mcp-call",
    about = "Call an MCP tool and follow its task to the end"
)]
struct Args {
    /// A Streamable HTTP endpoint.
    #[arg(long, conflicts_with = "stdio")]
    http: Option<String>,
    /// A command that serves MCP on stdio (split on spaces).
    #[arg(long)]
    stdio: Option<String>,
    /// Send `Authorization: Bearer TOKEN` with every HTTP request.
    #[arg(long, requires = "http")]
    bearer: Option<String>,
    /// Send this header with every HTTP request, as `NAME: VALUE` (repeatable).
    #[arg(long = "header", value_name = "NAME: VALUE", requires = "http")]
    headers: Vec<String>,
    /// Log in (if the server asks) and exit: no tool is called.
    #[arg(long, requires = "http", conflicts_with_all = ["tool", "resume"])]
    login: bool,
    /// Where logins are kept (default `~/.config/mcp-call/tokens.json`).
    #[arg(long, value_name = "PATH")]
    token_file: Option<std::path::PathBuf>,
    /// The loopback port the authorization server redirects to (default: any free one;
    /// fix it when the authorization server wants a registered redirect URI).
    #[arg(long, default_value_t = 0)]
    redirect_port: u16,
    /// A client id registered beforehand: with `--client-issuer` (and `--client-secret`
    /// if it has one), the client of the browser login there; with `--client-key`, or
    /// `--client-secret` and `--client-credentials`, a machine client that logs in with
    /// the client credentials grant, no browser (bound by `--client-issuer`, or else by
    /// `--trust-first-issuer`).
    #[arg(long, requires = "http")]
    client_id: Option<String>,
    /// The secret of `--client-id`, if it has one.
    #[arg(long, requires = "client_id")]
    client_secret: Option<String>,
    /// A private key file (PEM: PKCS#8 for EC keys, PKCS#1 for RSA) of `--client-id`:
    /// the client credentials grant with a signed client assertion (`private_key_jwt`).
    #[arg(
        long,
        value_name = "FILE",
        requires = "client_id",
        conflicts_with = "client_secret"
    )]
    client_key: Option<std::path::PathBuf>,
    /// The algorithm `--client-key` signs with.
    #[arg(
        long,
        value_name = "ALG",
        default_value = "ES256",
        requires = "client_key"
    )]
    client_key_alg: String,
    /// Log in with the client credentials grant (a machine client) with
    /// `--client-secret` and `--client-issuer` (the client's credentials then go to that
    /// authorization server only).
    #[arg(long, requires = "client_id")]
    client_credentials: bool,
    /// For a machine client without `--client-issuer`: send its secret or key to the
    /// first authorization server the MCP server names, record that issuer in the token
    /// file, and refuse any other after it. Weaker than `--client-issuer` (the server met
    /// first chooses): a warning says so.
    #[arg(long, requires = "client_id", conflicts_with = "client_issuer")]
    trust_first_issuer: bool,
    /// A scope the machine client may ask for (repeatable, or several separated by
    /// spaces): a server asking for any other is refused. None given: it asks for none.
    #[arg(long = "client-scope", value_name = "SCOPE", requires = "client_id")]
    client_scopes: Vec<String>,
    /// Use DPoP (RFC 9449): a key made for this run, tokens bound to it, a proof with
    /// every request.
    #[arg(long, requires = "http")]
    dpop: bool,
    /// The issuer of the authorization server `--client-id` is registered with, exactly
    /// as its metadata writes `issuer`. The id and secret are used there only: a server
    /// naming another authorization server never receives them (the login registers
    /// there, or uses `--client-metadata-url`, or fails saying so).
    #[arg(long, value_name = "ISSUER", requires = "client_id")]
    client_issuer: Option<String>,
    /// The HTTPS URL of this client's Client ID Metadata Document, used as client id
    /// where the authorization server accepts one.
    #[arg(long, requires = "http")]
    client_metadata_url: Option<String>,
    /// Never start a browser login: use the stored tokens (refreshed) only.
    #[arg(long, requires = "http")]
    no_browser: bool,
    /// Print the authorization URL but start no browser: open it yourself (on another
    /// machine, say, with the redirect port forwarded there).
    #[arg(long, requires = "http", conflicts_with = "no_browser")]
    no_open: bool,
    /// Print the task's reference (JSON, one line) and exit, leaving the task running.
    #[arg(long)]
    detach: bool,
    /// Show the task's events (`tasks/stream`) on stderr as they arrive, even when the
    /// server does not advertise event streams. The default shows them when it does.
    #[arg(long, overrides_with = "no_events")]
    events: bool,
    /// Do not show the task's events.
    #[arg(long, overrides_with = "events")]
    no_events: bool,
    /// Speak MCP 2025-11-25 and host the server's task-based elicitation requests as
    /// tasks of this client (`capabilities.tasks`, kept in memory); each is still asked
    /// at the terminal.
    #[arg(long)]
    client_tasks: bool,
    /// Follow an existing task instead of calling a tool: its reference as `--detach`
    /// printed it (the JSON, or `@FILE` holding it; a bare task id also works, with
    /// `--http`/`--stdio`). Without `--http`/`--stdio`, the reference's endpoint is used.
    #[arg(long, value_name = "REF", conflicts_with = "tool")]
    resume: Option<String>,
    /// The call's idempotency key (1 to 255 bytes): one task per key, whatever the retries.
    #[arg(long, value_name = "KEY", conflicts_with = "resume")]
    idempotency_key: Option<String>,
    /// Never send a call again when its answer was lost (a cut connection, HTTP 502/503/504/429).
    #[arg(long)]
    no_retry: bool,
    /// The tool to call.
    tool: Option<String>,
    /// Its arguments, as a JSON object.
    #[arg(default_value = "{}")]
    arguments: String,
}
#[path = "mcp-call/console.rs"]
mod console;
#[path = "mcp-call/events.rs"]
mod events;
#[path = "mcp-call/follow.rs"]
mod follow;
#[path = "mcp-call/login.rs"]
mod login;
#[path = "mcp-call/questions.rs"]
mod questions;
#[path = "mcp-call/retries.rs"]
mod retries;

use console::{clear_line, server_log};
use events::show_events;
use follow::{Shown, follow, render};
use login::{LoginSteps, default_token_file, login_report, progress, show_login};
use questions::Terminal;

/// How mcp-call logs in to a server that asks for OAuth: the config, the token file,
/// and what the login does as it goes.
async fn auth_config(
    args: &Args,
) -> Result<(AuthConfig, std::path::PathBuf, Arc<LoginSteps>), String> {
    let path = match &args.token_file {
        Some(p) => p.clone(),
        None => default_token_file()?,
    };
    let store = Arc::new(FileTokenStore::new(&path));
    let steps = Arc::new(LoginSteps::default());
    let (seen, file) = (Arc::clone(&steps), path.clone());
    let mut auth = AuthConfig::new(store, "mcp-call").on_event(move |event| {
        match event {
            AuthEvent::TokenReceived { .. } => seen.logins.fetch_add(1, Ordering::SeqCst),
            AuthEvent::Refreshed { .. } => seen.refreshes.fetch_add(1, Ordering::SeqCst),
            _ => 0,
        };
        if let Some(line) = progress(event, &file) {
            eprintln!("{}{line}", clear_line());
        }
    });
    if !args.no_browser {
        let open = !args.no_open;
        let redirect_uri: Arc<OnceLock<String>> = Arc::new(OnceLock::new());
        let uri = Arc::clone(&redirect_uri);
        let loopback = LoopbackRedirect::bind(args.redirect_port, move |url| {
            show_login(url, open, uri.get().map_or("", String::as_str))
        })
        .await
        .map_err(|e| e.to_string())?;
        let _ = redirect_uri.set(loopback.redirect_uri());
        auth = auth.with_authorize(Arc::new(loopback));
    }
    if let Some(id) = &args.client_id {
        if machine_client(args) {
            let client_auth = match (&args.client_key, &args.client_secret) {
                (Some(path), _) => ClientAuth::PrivateKeyJwt(Arc::new(
                    SigningKey::from_pem_file(path, &args.client_key_alg)
                        .map_err(|e| e.to_string())?,
                )),
                (None, Some(secret)) => ClientAuth::Secret(secret.clone()),
                (None, None) => {
                    return Err("--client-id needs --client-secret or --client-key for the client credentials grant, or --client-issuer for a browser login".into());
                }
            };
            // `usage` refused a secret or key with neither.
            let issuer = match &args.client_issuer {
                Some(issuer) => IssuerBinding::Issuer(issuer.clone()),
                None => {
                    eprintln!(
                        "mcp-call: warning: --trust-first-issuer: the client's {} goes to the first authorization server {} names, whichever it is; that issuer is then recorded in {} and any other is refused. Bind the client with --client-issuer ISSUER instead whenever you know its issuer.",
                        if args.client_key.is_some() {
                            "signed assertion"
                        } else {
                            "secret"
                        },
                        args.http.as_deref().unwrap_or("the server"),
                        path.display()
                    );
                    IssuerBinding::TrustFirstUse
                }
            };
            let client = MachineClient::new(id.clone(), client_auth, issuer)
                .with_scopes(args.client_scopes.iter().cloned());
            auth = auth.with_grant(Grant::ClientCredentials(client));
        } else if let Some(issuer) = &args.client_issuer {
            auth = auth.with_pre_registered(issuer.clone(), id.clone(), args.client_secret.clone());
        }
    }
    if args.dpop {
        auth = auth.with_dpop().map_err(|e| e.to_string())?;
    }
    if let Some(url) = &args.client_metadata_url {
        auth = auth.with_client_metadata_url(url.clone());
    }
    Ok((auth, path, steps))
}

/// Whether `--client-id` is a machine client (the client credentials grant, no
/// browser): with `--client-key`, with `--client-credentials`, or with a secret and no
/// `--client-issuer` (which [`usage`] then refuses without `--trust-first-issuer`).
fn machine_client(args: &Args) -> bool {
    args.client_credentials
        || args.client_key.is_some()
        || (args.client_issuer.is_none() && args.client_secret.is_some())
        || args.trust_first_issuer
}

/// What the flags cannot say together, beyond what clap checks: a usage error.
fn usage(args: &Args) -> Result<(), String> {
    if args.client_id.is_none() || !machine_client(args) {
        if !args.client_scopes.is_empty() {
            return Err("--client-scope is for a machine client (--client-key, or --client-secret with --client-credentials)".into());
        }
        return Ok(());
    }
    if args.client_issuer.is_none() && !args.trust_first_issuer {
        let what = if args.client_key.is_some() {
            "--client-key"
        } else if args.client_secret.is_some() {
            "--client-secret"
        } else {
            return Ok(());
        };
        return Err(format!(
            "{what} needs --client-issuer ISSUER, the issuer of the authorization server the client is registered with: otherwise the MCP server chooses where its credentials go (a hostile one names its own authorization server and replays them). To send them to the first authorization server met and refuse any other after it, give --trust-first-issuer instead."
        ));
    }
    Ok(())
}

/// Starts the `--stdio` server with its stderr piped: each line it logs is printed by
/// [`server_log`], above the status line.
fn start_server(cmd: &str) -> Result<tokio::process::Child, String> {
    let mut parts = cmd.split_whitespace();
    let program = parts.next().ok_or("--stdio needs a command")?;
    let mut child = tokio::process::Command::new(program)
        .args(parts)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start {program}: {e}"))?;
    if let Some(stderr) = child.stderr.take() {
        tokio::spawn(async move {
            use tokio::io::AsyncBufReadExt;
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            // Ends with the child (its stderr closes) or at an unreadable line.
            while let Ok(Some(line)) = lines.next_line().await {
                server_log(&line);
            }
        });
    }
    Ok(child)
}

/// How a run that reached the server ended.
enum Outcome {
    /// Done: a result that is not an error, a detached task, a login.
    Done,
    /// The tool's result is an error (`isError: true`); it has been printed.
    ToolError,
    /// Ctrl-C stopped it (exit status 130).
    Interrupted,
}

/// Prints `result` on stdout; says whether it is an error.
fn report(result: &CallToolResult) -> Outcome {
    println!("{}", render(result));
    if result.is_error == Some(true) {
        Outcome::ToolError
    } else {
        Outcome::Done
    }
}

/// What `--resume` names: a reference, or a bare task id.
enum Resume {
    Reference(Box<TaskRef>),
    Id(String),
}

/// Reads `--resume`'s value: the JSON of a [`TaskRef`], `@FILE` holding it, or a task id.
fn resume_arg(value: &str) -> Result<Resume, String> {
    let text = match value.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| format!("--resume {value}: cannot read {path}: {e}"))?,
        None => value.to_owned(),
    };
    let text = text.trim();
    if text.starts_with('{') {
        return serde_json::from_str(text)
            .map(|task| Resume::Reference(Box::new(task)))
            .map_err(|e| format!("--resume: not a task reference: {e}"));
    }
    Ok(Resume::Id(text.to_owned()))
}

async fn run(args: Args) -> Result<Outcome, String> {
    let handler = Arc::new(Terminal);
    let mut config = retries::configure(ClientConfig::default(), args.no_retry);
    let resume = args.resume.as_deref().map(resume_arg).transpose()?;
    let mut args = args;
    if let Some(Resume::Reference(task)) = &resume {
        config.revision = if task.revision.as_str() < "2026" {
            Revision::V2025_11_25
        } else {
            Revision::V2026_07_28
        };
        if args.http.is_none() && args.stdio.is_none() {
            match &task.endpoint {
                Some(Endpoint::Http { url }) => args.http = Some(url.clone()),
                Some(Endpoint::Stdio {
                    program,
                    args: rest,
                }) => {
                    args.stdio = Some(
                        std::iter::once(program.clone())
                            .chain(rest.iter().cloned())
                            .collect::<Vec<_>>()
                            .join(" "),
                    )
                }
                None => {
                    return Err(
                        "the task reference names no endpoint: give --http or --stdio".into(),
                    );
                }
            }
        }
    }
    if args.client_tasks {
        // Client-hosted tasks exist in MCP 2025-11-25 sessions (a task reference keeps
        // its own revision).
        if !matches!(resume, Some(Resume::Reference(_))) {
            config.revision = Revision::V2025_11_25;
        }
        config = config.with_client_tasks(Arc::new(mcp_tasks::MemoryStore::default()));
    }
    // With OAuth: the token file, what the login did, and whether a login was stored.
    let mut login = None;
    if let Some(url) = args.http.as_deref().filter(|_| args.bearer.is_none()) {
        let (auth, token_file, steps) = auth_config(&args).await?;
        let had_login = auth
            .store
            .load(url)
            .await
            .ok()
            .flatten()
            .is_some_and(|c| c.tokens.is_some());
        config.auth = Some(auth);
        login = Some((token_file, steps, had_login));
    }
    if let Some(token) = &args.bearer {
        config
            .http_headers
            .push(("Authorization".to_owned(), format!("Bearer {token}")));
    }
    for header in &args.headers {
        let Some((name, value)) = header.split_once(':') else {
            return Err(format!("--header takes NAME: VALUE, not {header:?}"));
        };
        config
            .http_headers
            .push((name.trim().to_owned(), value.trim().to_owned()));
    }
    let client = match (&args.http, &args.stdio) {
        (Some(url), _) => McpClient::connect_http(url, handler, config).await,
        (None, Some(cmd)) => {
            let child = start_server(cmd)?;
            McpClient::connect_child(child, handler, config).await
        }
        (None, None) => return Err("give --http URL or --stdio CMD".into()),
    }
    .map_err(|e| connect_error(&e, args.bearer.is_some()))?;
    if args.login {
        match (&login, &args.http) {
            (Some((token_file, steps, had_login)), Some(url)) => {
                eprintln!("{}", login_report(url, token_file, steps, *had_login));
            }
            _ => eprintln!("Connected with the bearer token given; nothing stored."),
        }
        return Ok(Outcome::Done);
    }

    let handle = if let Some(resume) = resume {
        match resume {
            Resume::Reference(task) => client.resume(&task).map_err(|e| e.to_string())?,
            Resume::Id(id) => client.resume_task(id),
        }
    } else {
        let tool = args.tool.ok_or("name a tool (or --resume ID)")?;
        let arguments: JsonObject = serde_json::from_str(&args.arguments)
            .map_err(|e| format!("arguments must be a JSON object: {e}"))?;
        match retries::call(&client, &tool, arguments, args.idempotency_key.clone())
            .await
            .map_err(|e| e.to_string())?
        {
            Started::Done(result) => return Ok(report(&result)),
            Started::Task(handle) => *handle,
        }
    };
    if args.detach {
        let mut reference = handle.detach();
        // A server we started ourselves: the reference names the command, so that
        // `--resume` can start it again.
        if reference.endpoint.is_none()
            && let Some(cmd) = &args.stdio
        {
            let mut parts = cmd.split_whitespace().map(str::to_owned);
            if let Some(program) = parts.next() {
                reference.endpoint = Some(Endpoint::Stdio {
                    program,
                    args: parts.collect(),
                });
            }
        }
        println!("{}", reference.to_json());
        return Ok(Outcome::Done);
    }
    // The events, when the server streams them (or `--events` says to try).
    let offered = client.server().is_some_and(|s| s.offers_event_streams());
    let shown = (!args.no_events && (args.events || offered)).then(|| {
        Shown::start(show_events(
            client.clone(),
            handle.id().to_owned(),
            args.events,
        ))
    });
    match follow(handle, shown).await {
        Some(Ok(result)) => Ok(report(&result)),
        Some(Err(e)) => Err(e.to_string()),
        None => Ok(Outcome::Interrupted),
    }
}

/// What mcp-call says when connecting failed: the error, and for a 401 what to try.
fn connect_error(e: &ClientError, bearer: bool) -> String {
    let missing_metadata = matches!(
        e.auth_error(),
        Some(
            AuthError::NoResourceMetadata { .. }
                | AuthError::NoAuthorizationServer { .. }
                | AuthError::NoServerMetadata { .. }
        )
    );
    if missing_metadata && !bearer {
        return format!(
            "{e}\n  If the server takes a static token instead of an OAuth login, pass it with \
             --bearer TOKEN."
        );
    }
    if bearer && matches!(e, ClientError::Transport(m) if m.starts_with("HTTP 401")) {
        return format!("{e}\n  The server refused the token given with --bearer.");
    }
    e.to_string()
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    // Logs to stderr (`RUST_LOG`; colours on a terminal only: no escape codes in a log
    // file or a pipe); with OTEL_EXPORTER_OTLP_ENDPOINT set, each request's CLIENT span
    // goes over OTLP and the server continues its trace. Kept until the end: dropping it
    // flushes the spans still buffered.
    let _telemetry = match mcp_tasks_client::telemetry::init("mcp-call") {
        Ok(t) => t,
        Err(e) => {
            eprintln!("mcp-call: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let args = Args::parse();
    if let Err(message) = usage(&args) {
        Args::command()
            .error(clap::error::ErrorKind::MissingRequiredArgument, message)
            .exit();
    }
    match run(args).await {
        Ok(Outcome::Done) => std::process::ExitCode::SUCCESS,
        Ok(Outcome::ToolError) => std::process::ExitCode::FAILURE,
        // Exits here rather than returning: a question may still wait for its line of
        // stdin in a blocking thread, which the runtime would wait for when dropped. What
        // `run` held (the connection, a `--stdio` server) is dropped by now.
        Ok(Outcome::Interrupted) => std::process::exit(130),
        Err(e) => {
            eprintln!("mcp-call: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
