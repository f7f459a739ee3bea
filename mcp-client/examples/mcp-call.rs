//! Calls one tool and follows it to the end, with a live status line.
//!
//! ```text
//! cargo run -p mcp-client --example mcp-call -- --http http://127.0.0.1:8000/mcp slow_compute '{"seconds":5}'
//! cargo run -p mcp-client --example mcp-call -- --stdio "target/debug/examples/demo --stdio --store memory" confirm_delete '{"filename":"a.txt"}'
//! cargo run -p mcp-client --example mcp-call -- --http URL slow_compute '{"seconds":60}' --detach > task.json
//! cargo run -p mcp-client --example mcp-call -- --resume @task.json
//! cargo run -p mcp-client --example mcp-call -- --http https://example.com/mcp --login
//! ```
//!
//! Elicitation requests are asked at the terminal, one field at a time; Ctrl-C cancels
//! the task.
//!
//! A server that asks for OAuth gets a login: the authorization URL is printed (and
//! opened with `xdg-open`/`open` when there is one, unless `--no-open`), the redirect
//! comes back to a loopback port (`--redirect-port`, default any free one), and the
//! tokens are kept in `--token-file` (default `~/.config/mcp-call/tokens.json`, mode
//! 0600) for next time, refreshed when they expire. The URL is printed on stderr alone
//! on its line, indented by two spaces, so a script (or a test playing the browser) can
//! read it.

use std::io::{BufRead, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use clap::Parser;
use mcp_client::auth::{AuthConfig, FileTokenStore, LoopbackRedirect};
use mcp_client::{
    ClientConfig, ClientError, ClientHandler, Endpoint, McpClient, Revision, Started, TaskHandle,
    TaskRef,
};
use mcp_protocol::JsonObject;
use mcp_protocol::jsonrpc::ErrorObject;
use mcp_protocol::types::{ElicitAction, ElicitResult, ElicitValue, PrimitiveSchemaDefinition};
use mcp_protocol::v2026::{CallToolResult, ElicitRequestParams};

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
    /// A client id registered beforehand with the authorization server (no dynamic
    /// registration).
    #[arg(long, requires = "http")]
    client_id: Option<String>,
    /// The secret of `--client-id`, if it has one.
    #[arg(long, requires = "client_id")]
    client_secret: Option<String>,
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
    /// Follow an existing task instead of calling a tool: its reference as `--detach`
    /// printed it (the JSON, or `@FILE` holding it; a bare task id also works, with
    /// `--http`/`--stdio`). Without `--http`/`--stdio`, the reference's endpoint is used.
    #[arg(long, value_name = "REF", conflicts_with = "tool")]
    resume: Option<String>,
    /// The tool to call.
    tool: Option<String>,
    /// Its arguments, as a JSON object.
    #[arg(default_value = "{}")]
    arguments: String,
}

/// Asks elicitation fields at the terminal.
struct Terminal;

/// Set while a question waits for its answer at the terminal: the status line is not
/// redrawn then (it would erase the question).
static PROMPTING: AtomicBool = AtomicBool::new(false);

fn prompt(question: &str) -> Option<String> {
    let mut err = std::io::stderr();
    let _ = write!(err, "\r\x1b[2K{question} ");
    let _ = err.flush();
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).ok()?;
    Some(line.trim_end_matches(['\r', '\n']).to_owned())
}

#[async_trait]
impl ClientHandler for Terminal {
    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        let ElicitRequestParams::Form(form) = params else {
            eprintln!("\r\x1b[2KThe server wants you to open a URL; this CLI declines.");
            return Ok(ElicitResult::new(ElicitAction::Decline));
        };
        PROMPTING.store(true, Ordering::SeqCst);
        let answered = tokio::task::spawn_blocking(move || {
            eprintln!("\r\x1b[2K{}", form.message);
            let mut content = indexmap::IndexMap::new();
            for (name, schema) in &form.requested_schema.properties {
                let value = match schema {
                    PrimitiveSchemaDefinition::Boolean(_) => {
                        let answer = prompt(&format!("  {name} [y/n]:"))?;
                        ElicitValue::Boolean(matches!(
                            answer.to_ascii_lowercase().as_str(),
                            "y" | "yes" | "true"
                        ))
                    }
                    PrimitiveSchemaDefinition::Number(_) => {
                        let answer = prompt(&format!("  {name} (number):"))?;
                        match answer.parse::<i64>() {
                            Ok(n) => ElicitValue::Integer(n),
                            Err(_) => ElicitValue::Number(answer.parse().unwrap_or(0.0)),
                        }
                    }
                    _ => ElicitValue::String(prompt(&format!("  {name}:"))?),
                };
                content.insert(name.clone(), value);
            }
            Some(ElicitResult::accept(content))
        })
        .await;
        PROMPTING.store(false, Ordering::SeqCst);
        answered
            .ok()
            .flatten()
            .map_or_else(|| Ok(ElicitResult::new(ElicitAction::Cancel)), Ok)
    }
}

fn render(result: &CallToolResult) -> String {
    let texts: Vec<String> = result
        .content
        .iter()
        .map(|c| {
            serde_json::to_value(c)
                .ok()
                .and_then(|v| v.get("text").and_then(|t| t.as_str()).map(str::to_owned))
                .unwrap_or_else(|| "[non-text content]".into())
        })
        .collect();
    let prefix = if result.is_error == Some(true) {
        "tool error: "
    } else {
        ""
    };
    format!("{prefix}{}", texts.join("\n"))
}

/// Follows `handle`, redrawing one status line, until it ends or Ctrl-C cancels it.
async fn follow(handle: TaskHandle) -> Result<CallToolResult, ClientError> {
    let mut updates = handle.updates();
    let spinner = async {
        let frames = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
        let mut i = 0;
        loop {
            if PROMPTING.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(120)).await;
                continue;
            }
            let line = match &*updates.borrow_and_update() {
                Some(task) => {
                    let message = task
                        .status_message()
                        .map(|m| format!(" — {m}"))
                        .unwrap_or_default();
                    format!(
                        "{} {} {}{}",
                        frames[i % frames.len()],
                        handle.id(),
                        task.status().as_str(),
                        message
                    )
                }
                None => format!("{} {} starting", frames[i % frames.len()], handle.id()),
            };
            eprint!("\r\x1b[2K{line}");
            i += 1;
            tokio::time::sleep(Duration::from_millis(120)).await;
        }
    };
    tokio::select! {
        r = handle.wait() => {
            eprint!("\r\x1b[2K");
            r
        }
        _ = spinner => unreachable!("the spinner never ends"),
        _ = tokio::signal::ctrl_c() => {
            eprintln!("\r\x1b[2KCancelling {}...", handle.id());
            handle.cancel().await?;
            handle.wait().await
        }
    }
}

/// The default token file: `$XDG_CONFIG_HOME/mcp-call/tokens.json`, else
/// `~/.config/mcp-call/tokens.json`.
fn default_token_file() -> Result<std::path::PathBuf, String> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".config")))
        .ok_or("no HOME to keep tokens in: give --token-file")?;
    Ok(base.join("mcp-call").join("tokens.json"))
}

/// Shows the authorization URL (alone on its line, indented by two spaces) and, if
/// `open`, tries to open it in a browser.
fn show_login(url: &str, open: bool) {
    if !open {
        eprintln!(
            "\r\x1b[2KThe server asks you to log in. Visit this URL in a browser:\n\n  {url}\n"
        );
        eprintln!("Waiting for the authorization...");
        return;
    }
    eprintln!("\r\x1b[2KThe server asks you to log in. Opening your browser at:\n\n  {url}\n");
    eprintln!("If it does not open, visit that URL yourself. Waiting for the authorization...");
    for opener in ["xdg-open", "open"] {
        let started = std::process::Command::new(opener)
            .arg(url)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
        if started.is_ok() {
            return;
        }
    }
}

/// How mcp-call logs in to a server that asks for OAuth.
async fn auth_config(args: &Args) -> Result<AuthConfig, String> {
    let path = match &args.token_file {
        Some(p) => p.clone(),
        None => default_token_file()?,
    };
    let store = Arc::new(FileTokenStore::new(&path));
    let mut auth = AuthConfig::new(store, "mcp-call");
    if !args.no_browser {
        let open = !args.no_open;
        let loopback = LoopbackRedirect::bind(args.redirect_port, move |url| show_login(url, open))
            .await
            .map_err(|e| e.to_string())?;
        auth = auth.with_authorize(Arc::new(loopback));
    }
    if let Some(id) = &args.client_id {
        auth = auth.with_pre_registered(id.clone(), args.client_secret.clone());
    }
    if let Some(url) = &args.client_metadata_url {
        auth = auth.with_client_metadata_url(url.clone());
    }
    Ok(auth)
}

/// What `--resume` names: a reference, or a bare task id.
enum Resume {
    Reference(TaskRef),
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
            .map(Resume::Reference)
            .map_err(|e| format!("--resume: not a task reference: {e}"));
    }
    Ok(Resume::Id(text.to_owned()))
}

async fn run(args: Args) -> Result<(), String> {
    let handler = Arc::new(Terminal);
    let mut config = ClientConfig::default();
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
    if args.http.is_some() && args.bearer.is_none() {
        config.auth = Some(auth_config(&args).await?);
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
            let mut parts = cmd.split_whitespace().map(str::to_owned);
            let program = parts.next().ok_or("--stdio needs a command")?;
            let rest: Vec<String> = parts.collect();
            McpClient::connect_stdio(&program, &rest, handler, config).await
        }
        (None, None) => return Err("give --http URL or --stdio CMD".into()),
    }
    .map_err(|e| e.to_string())?;
    if args.login {
        eprintln!("Connected; the login (if one was needed) is kept for next time.");
        return Ok(());
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
        match client
            .call_tool_as_task(&tool, arguments)
            .await
            .map_err(|e| e.to_string())?
        {
            Started::Done(result) => {
                println!("{}", render(&result));
                return Ok(());
            }
            Started::Task(handle) => *handle,
        }
    };
    if args.detach {
        println!("{}", handle.detach().to_json());
        return Ok(());
    }
    match follow(handle).await {
        Ok(result) => {
            println!("{}", render(&result));
            Ok(())
        }
        Err(e) => Err(e.to_string()),
    }
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    match run(Args::parse()).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcp-call: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
