//! What mcp-call tells its user about a login: the authorization URL and the redirect
//! awaited, one line per [`AuthEvent`], and what `--login` did.

use std::sync::atomic::{AtomicU32, Ordering};

use mcp_tasks_client::auth::AuthEvent;

use super::console::clear_line;

/// The default token file: `$XDG_CONFIG_HOME/mcp-call/tokens.json`, else
/// `~/.config/mcp-call/tokens.json`.
pub(crate) fn default_token_file() -> Result<std::path::PathBuf, String> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".config")))
        .ok_or("no HOME to keep tokens in: give --token-file")?;
    Ok(base.join("mcp-call").join("tokens.json"))
}

/// Shows the authorization URL (alone on its line, indented by two spaces) and, if
/// `open`, tries to open it in a browser; says where the redirect is awaited.
pub(crate) fn show_login(url: &str, open: bool, redirect_uri: &str) {
    let waiting = format!("Waiting for the browser's redirect to {redirect_uri} ...");
    if !open {
        eprintln!(
            "{}The server asks you to log in. Visit this URL in a browser:\n\n  {url}\n",
            clear_line()
        );
        eprintln!("{waiting}");
        return;
    }
    eprintln!(
        "{}The server asks you to log in. Opening your browser at:\n\n  {url}\n",
        clear_line()
    );
    eprintln!("If it does not open, visit that URL yourself. {waiting}");
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

/// What the login did during this run, counted from its [`AuthEvent`]s.
#[derive(Debug, Default)]
pub(crate) struct LoginSteps {
    /// Tokens received from a browser login.
    pub(crate) logins: AtomicU32,
    /// Access tokens refreshed.
    pub(crate) refreshes: AtomicU32,
}

/// The line mcp-call prints for a step of the login, if any (the browser step's URL is
/// printed by [`show_login`]).
pub(crate) fn progress(event: &AuthEvent, token_file: &std::path::Path) -> Option<String> {
    let scope = |s: &Option<String>| s.as_deref().unwrap_or("none").to_owned();
    Some(match event {
        AuthEvent::Discovering { server } => {
            format!("{server} asks for authorization: discovering its authorization server...")
        }
        AuthEvent::Discovered { issuer } => format!("Authorization server: {issuer}"),
        AuthEvent::Migrated { from, to } => format!(
            "The stored login was made at {from}, but the server now uses {to}: dropped, registering again."
        ),
        AuthEvent::Refreshing { .. } => "Refreshing the access token...".to_owned(),
        AuthEvent::Refreshed { expires_in } => match expires_in {
            Some(secs) => format!("Access token refreshed (valid for {secs} s)."),
            None => "Access token refreshed.".to_owned(),
        },
        AuthEvent::RefreshRefused { error } => {
            format!("The stored refresh token was refused ({error}): the login is dropped.")
        }
        AuthEvent::PreRegisteredNotUsed {
            issuer,
            registered_with,
        } => format!(
            "The server names the authorization server {issuer}; --client-id is for {registered_with}: not used there (its secret is not sent)."
        ),
        AuthEvent::Registering { endpoint } => format!("Registering mcp-call at {endpoint}..."),
        AuthEvent::Registered { client_id } => format!("Registered as client {client_id}."),
        AuthEvent::Authorizing { scope: s, .. } => {
            format!("Logging in, asking for scope: {}", scope(s))
        }
        AuthEvent::TokenReceived {
            scope: s,
            refresh_token,
        } => format!(
            "Token received (scope: {}{}).",
            scope(s),
            if *refresh_token {
                ", with a refresh token"
            } else {
                ", no refresh token"
            }
        ),
        AuthEvent::Saved => format!("Saved to {}", token_file.display()),
        AuthEvent::IssuerTrusted { issuer, client_id } => format!(
            "Trusting {issuer} as the authorization server of client {client_id} (--trust-first-issuer): recorded in {}; any other will be refused.",
            token_file.display()
        ),
        _ => return None,
    })
}

/// What `--login` says once connected: whether a login happened.
pub(crate) fn login_report(
    url: &str,
    token_file: &std::path::Path,
    steps: &LoginSteps,
    had_login: bool,
) -> String {
    let file = token_file.display();
    if steps.logins.load(Ordering::SeqCst) > 0 {
        format!("Logged in to {url}; the login is kept in {file}.")
    } else if steps.refreshes.load(Ordering::SeqCst) > 0 {
        format!("The stored login for {url} was refreshed; kept in {file}. No new login needed.")
    } else if had_login {
        format!("Already logged in to {url} (the token in {file} was accepted); nothing to do.")
    } else {
        format!("{url} did not ask for authorization; nothing to do.")
    }
}
