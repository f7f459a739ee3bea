//! The demo's operator console settings: from its flags, a credentials file, or the
//! environment (never echoed back).

use mcp_tasks_server::console::{ConsoleAccess, ConsoleConfig};

use super::Args;

/// The environment variable the console's Basic credentials, `[ROLE=]USER:PASSWORD` one
/// per line, may be given in (when no console flag is given).
pub(crate) const CONSOLE_CREDENTIALS_ENV: &str = "MCP_CONSOLE_CREDENTIALS";

/// The console's settings, from `--console`, `--console-file`, `--console-scope` or
/// [`CONSOLE_CREDENTIALS_ENV`] (in that order; the flags exclude one another); `None`
/// when none gives them. Says on stderr when the password was put on the command line,
/// or is in a file others can read. `Err`: what is wrong, never the credentials.
pub(crate) fn console_config(args: &Args) -> Result<Option<ConsoleConfig>, String> {
    if let Some(console) = &args.console {
        eprintln!(
            "demo: warning: --console puts the console password on the command line, where \
             other users of this machine can read it (ps); give it in the environment \
             variable {CONSOLE_CREDENTIALS_ENV} or in a file (--console-file) instead"
        );
        return Ok(Some(console.clone()));
    }
    if let Some(path) = &args.console_file {
        let shown = path.display();
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the console credentials file {shown}: {e}"))?;
        let config = ConsoleConfig::parse_basic_list(&text)
            .map_err(|e| format!("the console credentials file {shown}: {e}"))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            if let Ok(meta) = std::fs::metadata(path)
                && meta.permissions().mode() & 0o044 != 0
            {
                eprintln!(
                    "demo: warning: other users can read the console credentials file \
                     {shown} (mode {:o}): chmod 600 it",
                    meta.permissions().mode() & 0o777
                );
            }
        }
        return Ok(Some(config));
    }
    if let Some(config) = &args.console_scope {
        let Some(read) = &args.console_read_scope else {
            return Ok(Some(config.clone()));
        };
        let ConsoleAccess::Scope { operator, .. } = &config.access else {
            return Err("--console-read-scope needs --console-scope".to_owned());
        };
        return ConsoleConfig::scopes(read.as_str(), operator.as_str())
            .map(Some)
            .map_err(|e| format!("--console-read-scope: {e}"));
    }
    if args.stdio || args.role == mcp_tasks_server::Role::Worker {
        return Ok(None);
    }
    match std::env::var(CONSOLE_CREDENTIALS_ENV) {
        Ok(pair) if !pair.is_empty() => ConsoleConfig::parse_basic_list(&pair)
            .map(Some)
            .map_err(|e| format!("{CONSOLE_CREDENTIALS_ENV}: {e}")),
        Ok(_) | Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => Err(format!(
            "{CONSOLE_CREDENTIALS_ENV}: expected USER:PASSWORD in UTF-8"
        )),
    }
}

/// `--console-scope`'s value: the OAuth scope that opens the console.
pub(crate) fn console_scope(
    scope: &str,
) -> Result<ConsoleConfig, mcp_tasks_server::console::ConsoleConfigError> {
    ConsoleConfig::scope(scope)
}
