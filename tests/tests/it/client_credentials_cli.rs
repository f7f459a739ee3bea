//! A machine client (issue 34): the real `mcp-call` binary with `--client-id` and
//! `--client-secret`, no browser, against a server protected by an OAuth resource server
//! that trusts the test authorization server (JWT access tokens). It logs in with the
//! client credentials grant, steps up for the tool's scope with the same grant, runs the
//! tool as a task owned by the client (`{issuer}#{client_id}`), and a second run uses
//! the token kept in the token file. A wrong secret is said and nothing is run. A secret
//! or key without `--client-issuer` is a usage error (the MCP server would choose where
//! it goes), unless `--trust-first-issuer`: then the first authorization server met is
//! recorded in the token file and another is refused after it. In the library: the
//! token is obtained again in the last part of its lifetime, ahead of a 401, as
//! refreshes are, and a client bound to another issuer sends nothing.

use std::path::Path;
use std::sync::Arc;

use mcp_tasks_client::auth::{
    AuthConfig, AuthError, ClientAuth, Grant, IssuerBinding, MachineClient, MemoryTokenStore,
};
use mcp_tasks_client::{ClientError, DeclineAll, McpClient};
use mcp_tests::authorization_server::{
    AccessTokens, AuthorizationServer, AuthorizationServerOptions, Knobs, Prm, ProtectedDemo,
};
use mcp_tests::issuer::{ADMIN_SCOPE, protect};
use mcp_tests::programs;

const MCP_CALL: &str = env!("CARGO_BIN_EXE_mcp-call");
const SCOPE: &str = "mcp";

#[derive(Debug)]
struct Run {
    success: bool,
    /// The exit status (`None`: killed by a signal).
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// `mcp-call --http URL --token-file FILE ARGS`, stdin closed, bounded in time.
async fn mcp_call(url: &str, token_file: &Path, args: &[&str]) -> Run {
    let output =
        programs::output_in_time(programs::mcp_call(MCP_CALL, url, token_file).args(args)).await;
    Run {
        success: output.status.success(),
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

#[tokio::test]
async fn mcp_call_logs_in_with_client_credentials_and_runs_a_task_as_the_client() {
    let auth = AuthorizationServer::start(AuthorizationServerOptions {
        tokens: AccessTokens::Jwt,
        scopes_supported: vec![SCOPE.to_owned(), ADMIN_SCOPE.to_owned()],
        ..AuthorizationServerOptions::default()
    })
    .await;
    let protected = protect(&auth.issuer, |c| c.required_scopes = vec![SCOPE.into()]).await;
    // A client registered out of band; its redirect URI is never used.
    let (id, secret) = auth.register_client("http://127.0.0.1:1/unused");
    let dir = std::env::temp_dir().join(format!("mcp-cc-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("tokens.json");
    let url = protected.server.url.as_str();

    let issuer = auth.issuer_url();
    let machine_args = |secret: &str| -> Vec<String> {
        [
            "--client-id",
            &id,
            "--client-secret",
            secret,
            "--client-issuer",
            issuer,
            "--client-credentials",
            "--client-scope",
            SCOPE,
            "--client-scope",
            ADMIN_SCOPE,
            "whoami",
        ]
        .map(str::to_owned)
        .to_vec()
    };
    let args = machine_args(&secret);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = mcp_call(url, &file, &args).await;
    assert!(run.success, "{run:?}");
    // It ran as a task (kept in the server's store).
    assert_eq!(protected.store.len(), 1, "{run:?}");
    // The tool ran as the client: its principal is the client id at the issuer.
    let principal = format!("{}#{id}", auth.issuer_url());
    assert!(
        run.stdout
            .contains(&format!("\"principal\":\"{principal}\"")),
        "{run:?}"
    );
    assert!(run.stdout.contains(ADMIN_SCOPE), "{run:?}");
    // Only client credentials grants: the first for the server's scope, the second
    // stepping up for the tool's; no browser step.
    assert_eq!(
        auth.grants(),
        ["client_credentials", "client_credentials"],
        "{run:?}"
    );
    assert!(auth.authorizations().is_empty());
    assert!(
        auth.token_credentials()
            .iter()
            .all(|(i, s)| *i == id && *s == secret)
    );

    // The token is kept: a second run needs no grant.
    let again = mcp_call(url, &file, &args).await;
    assert!(again.success, "{again:?}");
    assert_eq!(auth.grants().len(), 2, "{again:?}");
    assert_eq!(protected.store.len(), 2, "{again:?}");

    // A wrong secret: refused at the token endpoint, said, nothing run.
    let other = dir.join("other.json");
    let wrong_args = machine_args("wrong");
    let wrong_args: Vec<&str> = wrong_args.iter().map(String::as_str).collect();
    let wrong = mcp_call(url, &other, &wrong_args).await;
    assert!(!wrong.success, "{wrong:?}");
    assert!(wrong.stderr.contains("invalid_client"), "{wrong:?}");
    assert!(!wrong.stdout.contains("principal"), "{wrong:?}");
    assert_eq!(protected.store.len(), 2, "{wrong:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn machine(id: &str, secret: &str, issuer: &str) -> AuthConfig {
    AuthConfig::new(Arc::new(MemoryTokenStore::new()), "nightly-job").with_grant(
        Grant::ClientCredentials(
            MachineClient::new(
                id,
                ClientAuth::Secret(secret.to_owned()),
                IssuerBinding::Issuer(issuer.to_owned()),
            )
            .with_scopes([SCOPE]),
        ),
    )
}

async fn connect(url: &str, auth: AuthConfig) -> Result<McpClient, ClientError> {
    programs::connect_with_auth(url, Arc::new(DeclineAll), auth).await
}

#[tokio::test]
async fn a_machine_token_is_renewed_ahead_of_its_expiry_and_bound_clients_stay_home() {
    let auth = AuthorizationServer::start(AuthorizationServerOptions {
        tokens: AccessTokens::Jwt,
        scopes_supported: vec![SCOPE.to_owned()],
        knobs: Knobs {
            // Announced only: the token keeps working, so a renewal seen is one made
            // ahead of the expiry, not after a 401.
            token_lifetime_secs: Some(2),
            ..Knobs::default()
        },
        ..AuthorizationServerOptions::default()
    })
    .await;
    let protected = protect(&auth.issuer, |c| c.required_scopes = vec![SCOPE.into()]).await;
    let (id, secret) = auth.register_client("http://127.0.0.1:1/unused");
    let url = protected.server.url.as_str();

    let client = connect(url, machine(&id, &secret, auth.issuer_url()))
        .await
        .expect("connects");
    client.list_tools().await.expect("tools/list");
    assert_eq!(auth.grants(), ["client_credentials"]);
    // Past half of the announced lifetime: the next request renews first.
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    client.list_tools().await.expect("tools/list");
    assert_eq!(auth.grants(), ["client_credentials", "client_credentials"]);

    // Bound to another issuer: the secret is never sent, the connection says why.
    let before = auth.token_credentials().len();
    let refused = connect(url, machine(&id, &secret, "https://as.example.com")).await;
    let Err(ClientError::Auth(e)) = &refused else {
        panic!("expected an auth error: {refused:?}");
    };
    assert!(
        matches!(&**e, AuthError::MachineClientForOtherIssuer { .. }),
        "{e}"
    );
    assert_eq!(auth.token_credentials().len(), before);
}

/// A fresh temporary folder for token files, named after the test.
fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("mcp-cc-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

#[tokio::test]
async fn mcp_call_refuses_a_client_secret_or_key_without_its_issuer() {
    let auth = AuthorizationServer::start(AuthorizationServerOptions {
        tokens: AccessTokens::Jwt,
        scopes_supported: vec![SCOPE.to_owned()],
        ..AuthorizationServerOptions::default()
    })
    .await;
    let protected = protect(&auth.issuer, |c| c.required_scopes = vec![SCOPE.into()]).await;
    let (id, secret) = auth.register_client("http://127.0.0.1:1/unused");
    let dir = temp_dir("unbound");
    let file = dir.join("tokens.json");
    let url = protected.server.url.as_str();
    // The key file is not read: the flags are refused first.
    let key = dir.join("no-such-key.pem");
    let key = key.to_str().expect("a UTF-8 path");
    for (flag, value) in [("--client-secret", secret.as_str()), ("--client-key", key)] {
        let run = mcp_call(url, &file, &["--client-id", &id, flag, value, "whoami"]).await;
        // A usage error (clap's status 2), naming both ways out.
        assert_eq!(run.code, Some(2), "{flag}: {run:?}");
        assert!(
            run.stderr
                .contains(&format!("{flag} needs --client-issuer ISSUER")),
            "{flag}: {run:?}"
        );
        assert!(
            run.stderr.contains("--trust-first-issuer"),
            "{flag}: {run:?}"
        );
        assert!(run.stdout.is_empty(), "{flag}: {run:?}");
    }
    // Nothing was sent anywhere, nothing run, nothing stored.
    assert_eq!(auth.issuer.requests(), 0);
    assert_eq!(protected.store.len(), 0);
    assert!(!file.exists());
    // A scope for a browser login is a usage error too.
    let run = mcp_call(
        url,
        &file,
        &[
            "--client-id",
            &id,
            "--client-issuer",
            auth.issuer_url(),
            "--client-scope",
            SCOPE,
            "--login",
        ],
    )
    .await;
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(
        run.stderr
            .contains("--client-scope is for a machine client"),
        "{run:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn mcp_call_trusting_the_first_issuer_refuses_another_after_it() {
    let real = Arc::new(
        AuthorizationServer::start(AuthorizationServerOptions::for_protected_demo(
            Knobs::default(),
        ))
        .await,
    );
    // What a hostile server would name: it approves any client and records every
    // credential presented.
    let hostile = Arc::new(
        AuthorizationServer::start(AuthorizationServerOptions::for_protected_demo(Knobs {
            approve_any_client: true,
            ..Knobs::default()
        }))
        .await,
    );
    let demo = ProtectedDemo::start(Arc::clone(&real), Prm::default()).await;
    let (id, secret) = real.register_client("http://127.0.0.1:1/unused");
    let dir = temp_dir("first-issuer");
    let file = dir.join("tokens.json");
    let args = [
        "--client-id",
        &id,
        "--client-secret",
        &secret,
        "--trust-first-issuer",
        "--client-scope",
        "mcp:read",
        "--login",
    ];

    let first = mcp_call(&demo.url, &file, &args).await;
    assert!(first.success, "{first:?}");
    assert!(
        first.stderr.contains("warning: --trust-first-issuer"),
        "{first:?}"
    );
    assert!(
        first.stderr.contains(&format!(
            "Trusting {} as the authorization server of client {id}",
            real.issuer_url()
        )),
        "{first:?}"
    );
    assert_eq!(real.grants(), ["client_credentials"]);
    let stored = std::fs::read_to_string(&file).expect("the token file");
    assert!(stored.contains(real.issuer_url()), "{stored}");

    // The server now names another authorization server: refused, nothing sent there.
    demo.migrate_to(Arc::clone(&hostile));
    let second = mcp_call(&demo.url, &file, &args).await;
    assert!(!second.success, "{second:?}");
    assert!(
        second.stderr.contains(&format!(
            "names the authorization server {}, but the machine client was first used with {}",
            hostile.issuer_url(),
            real.issuer_url()
        )),
        "{second:?}"
    );
    assert_eq!(hostile.issuer.requests(), 0);
    assert!(hostile.token_credentials().is_empty());
    assert_eq!(real.grants().len(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}
