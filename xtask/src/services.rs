//! The backend services the tests use (PostgreSQL, Redis): which answer, said before the
//! tests run, and the environment that tells the tests about them.
//!
//! A service is "up" when a TCP connection to its host and port succeeds within
//! [`CONNECT_TIMEOUT`]. An up service's URL is passed to the tests in its variable
//! (`MCP_TEST_POSTGRES_URL`, `MCP_TEST_REDIS_URL`). A service that is down is SKIPPED
//! (its tests return early, saying so on stderr) — except under `CI=true` (or with
//! `MCP_REQUIRE_SERVICES=1` already set), where that is an error before any test runs, and
//! the tests get `MCP_REQUIRE_SERVICES=1` so none of them can skip silently.

use std::net::{TcpStream, ToSocketAddrs};
use std::process::Command;
use std::time::Duration;

/// How long a service has to accept a TCP connection.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// Set to `1` for the tests: a backend test whose service is missing fails.
pub const REQUIRE_ENV: &str = "MCP_REQUIRE_SERVICES";

/// One backend service.
pub struct Service {
    pub name: &'static str,
    /// The variable naming its URL, for xtask and for the tests.
    pub env: &'static str,
    pub default_url: &'static str,
    pub default_port: u16,
}

/// The services the tests use (URL variables and defaults as in `mcp_tasks::conformance`).
pub const SERVICES: [Service; 2] = [
    Service {
        name: "PostgreSQL",
        env: "MCP_TEST_POSTGRES_URL",
        default_url: "postgres://postgres@127.0.0.1:5432/test",
        default_port: 5432,
    },
    Service {
        name: "Redis",
        env: "MCP_TEST_REDIS_URL",
        default_url: "redis://127.0.0.1:6379/",
        default_port: 6379,
    },
];

/// What the check found about one service.
pub struct Found {
    pub service: &'static Service,
    pub url: String,
    /// `Ok` when it answered; why not otherwise.
    pub answer: Result<(), String>,
}

/// Checks every service, prints one line each, and sets up `cmd`'s environment. Returns
/// an error (after printing) when a service is missing and one is required (`ci`, or
/// `MCP_REQUIRE_SERVICES=1` already set).
pub fn prepare(cmd: &mut Command, ci: bool) -> Result<Vec<Found>, String> {
    let required = ci || std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "1");
    let found: Vec<Found> = SERVICES
        .iter()
        .map(|service| {
            let url = std::env::var(service.env).unwrap_or_else(|_| service.default_url.into());
            let answer = probe(&url, service.default_port);
            Found {
                service,
                url,
                answer,
            }
        })
        .collect();
    println!("xtask: backend services:");
    for f in &found {
        let shown = redact(&f.url);
        match &f.answer {
            Ok(()) => println!(
                "xtask:   {:<10} {shown}: up; its backend tests will run",
                f.service.name
            ),
            Err(why) => println!(
                "xtask:   {:<10} {shown}: {}: {why} (start it, or set {} to a running one)",
                f.service.name,
                if required { "MISSING" } else { "SKIPPED" },
                f.service.env
            ),
        }
    }
    for f in &found {
        if f.answer.is_ok() {
            cmd.env(f.service.env, &f.url);
        }
    }
    let missing: Vec<&str> = found
        .iter()
        .filter(|f| f.answer.is_err())
        .map(|f| f.service.name)
        .collect();
    if required {
        cmd.env(REQUIRE_ENV, "1");
        if !missing.is_empty() {
            let why = if ci {
                "CI=true"
            } else {
                "MCP_REQUIRE_SERVICES=1"
            };
            return Err(format!(
                "{} not reachable, and {why} requires every backend to be tested",
                missing.join(" and ")
            ));
        }
    } else if !missing.is_empty() {
        println!(
            "xtask: the {} tests will be SKIPPED (under CI=true this is an error)",
            missing.join(" and ")
        );
    }
    Ok(found)
}

/// Whether `host:port` of `url` accepts a TCP connection in time.
pub fn probe(url: &str, default_port: u16) -> Result<(), String> {
    let (host, port) = host_port(url, default_port)
        .ok_or_else(|| format!("cannot find a host and port in {}", redact(url)))?;
    let addrs: Vec<_> = (host.as_str(), port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {host}: {e}"))?
        .collect();
    let mut last = format!("{host} has no address");
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT) {
            Ok(_) => return Ok(()),
            Err(e) => last = format!("no answer at {addr} ({e})"),
        }
    }
    Err(last)
}

/// The host and port of a `scheme://[user[:password]@]host[:port][/...]` URL, or of a
/// libpq key/value string (`host=... port=...`).
pub fn host_port(url: &str, default_port: u16) -> Option<(String, u16)> {
    let Some((_, rest)) = url.split_once("://") else {
        return key_value_host_port(url, default_port);
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    // A libpq URL may list several hosts: the first one is enough to say it answers.
    let hostport = hostport.split(',').next().unwrap_or(hostport);
    let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
        let (host, after) = v6.split_once(']')?;
        (host, after.strip_prefix(':'))
    } else {
        match hostport.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (hostport, None),
        }
    };
    let port = match port {
        Some(p) if !p.is_empty() => p.parse().ok()?,
        _ => default_port,
    };
    let host = if host.is_empty() { "localhost" } else { host };
    Some((host.to_owned(), port))
}

fn key_value_host_port(s: &str, default_port: u16) -> Option<(String, u16)> {
    let mut host = None;
    let mut port = default_port;
    for pair in s.split_whitespace() {
        match pair.split_once('=') {
            Some(("host", h)) => host = Some(h.to_owned()),
            Some(("port", p)) => port = p.parse().ok()?,
            _ => {}
        }
    }
    Some((host.unwrap_or_else(|| "localhost".into()), port))
}

/// `url` with a password replaced by `***`.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority = rest.split('/').next().unwrap_or(rest);
    match authority
        .rsplit_once('@')
        .and_then(|(userinfo, _)| userinfo.split_once(':'))
    {
        Some((user, password)) if !password.is_empty() => {
            let hidden = rest.replacen(&format!("{user}:{password}@"), &format!("{user}:***@"), 1);
            format!("{scheme}://{hidden}")
        }
        _ => url.to_owned(),
    }
}

/// The URL of each service that answers (by [`SERVICES`] order), for benchmarks that use
/// them when present; says which are left out.
pub fn answering() -> Vec<Option<String>> {
    SERVICES
        .iter()
        .map(|s| {
            let url = std::env::var(s.env).unwrap_or_else(|_| s.default_url.to_owned());
            match probe(&url, s.default_port) {
                Ok(()) => Some(url),
                Err(why) => {
                    eprintln!("{}: {why}; left out", s.name);
                    None
                }
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{host_port, redact};

    fn hp(url: &str) -> Option<(String, u16)> {
        host_port(url, 9)
    }

    #[test]
    fn finds_host_and_port() {
        assert_eq!(
            hp("postgres://postgres@127.0.0.1:5432/test"),
            Some(("127.0.0.1".into(), 5432))
        );
        assert_eq!(
            hp("redis://127.0.0.1:6379/"),
            Some(("127.0.0.1".into(), 6379))
        );
        assert_eq!(hp("redis://db.example"), Some(("db.example".into(), 9)));
        assert_eq!(
            hp("postgresql://u:p@w@h:1/x?sslmode=disable"),
            Some(("h".into(), 1))
        );
        assert_eq!(hp("redis://[::1]:7000/0"), Some(("::1".into(), 7000)));
        assert_eq!(hp("postgres:///test"), Some(("localhost".into(), 9)));
        assert_eq!(
            hp("host=10.0.0.2 port=6000 user=x"),
            Some(("10.0.0.2".into(), 6000))
        );
        assert_eq!(hp("redis://h:notaport/"), None);
    }

    #[test]
    fn hides_passwords() {
        assert_eq!(
            redact("postgres://u:secret@h:5432/db"),
            "postgres://u:***@h:5432/db"
        );
        assert_eq!(redact("redis://127.0.0.1:6379/"), "redis://127.0.0.1:6379/");
        assert_eq!(redact("postgres://u@h/db"), "postgres://u@h/db");
    }
}
