//! A machine client (issue 34): the real `mcp-call` binary with `--client-id` and
//! `--client-secret`, no browser, against a server protected by an OAuth resource server
//! that trusts the test authorization server (JWT access tokens). It logs in with the
//! client credentials grant, steps up for the tool's scope with the same grant, runs the
//! tool as a task owned by the client (`{issuer}#{client_id}`), and a second run uses
//! the token kept in the token file. A wrong secret is said and nothing is run. In the
//! library: the token is obtained again in the last part of its lifetime, ahead of a
//! 401, as refreshes are, and a client bound to another issuer sends nothing.

use std::path::Path;
use std::sync::Arc;

use mcp_tasks_client::auth::{
    AuthConfig, AuthError, ClientAuth, Grant, MachineClient, MemoryTokenStore,
};
use mcp_tasks_client::{ClientError, DeclineAll, McpClient};
use mcp_tests::authorization_server::{
    AccessTokens, AuthorizationServer, AuthorizationServerOptions, Knobs,
};
use mcp_tests::issuer::{ADMIN_SCOPE, protect};
use mcp_tests::programs;

const MCP_CALL: &str = env!("CARGO_BIN_EXE_mcp-call");
const SCOPE: &str = "mcp";

#[derive(Debug)]
struct Run {
    success: bool,
    stdout: String,
    stderr: String,
}

/// `mcp-call --http URL --token-file FILE ARGS`, stdin closed, bounded in time.
async fn mcp_call(url: &str, token_file: &Path, args: &[&str]) -> Run {
    let output =
        programs::output_in_time(programs::mcp_call(MCP_CALL, url, token_file).args(args)).await;
    Run {
        success: output.status.success(),
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

    let run = mcp_call(
        url,
        &file,
        &["--client-id", &id, "--client-secret", &secret, "whoami"],
    )
    .await;
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
    let again = mcp_call(
        url,
        &file,
        &["--client-id", &id, "--client-secret", &secret, "whoami"],
    )
    .await;
    assert!(again.success, "{again:?}");
    assert_eq!(auth.grants().len(), 2, "{again:?}");
    assert_eq!(protected.store.len(), 2, "{again:?}");

    // A wrong secret: refused at the token endpoint, said, nothing run.
    let other = dir.join("other.json");
    let wrong = mcp_call(
        url,
        &other,
        &["--client-id", &id, "--client-secret", "wrong", "whoami"],
    )
    .await;
    assert!(!wrong.success, "{wrong:?}");
    assert!(wrong.stderr.contains("invalid_client"), "{wrong:?}");
    assert!(!wrong.stdout.contains("principal"), "{wrong:?}");
    assert_eq!(protected.store.len(), 2, "{wrong:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn machine(id: &str, secret: &str, issuer: Option<&str>) -> AuthConfig {
    AuthConfig::new(Arc::new(MemoryTokenStore::new()), "nightly-job").with_grant(
        Grant::ClientCredentials(MachineClient {
            client_id: id.to_owned(),
            auth: ClientAuth::Secret(secret.to_owned()),
            issuer: issuer.map(str::to_owned),
        }),
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

    let client = connect(url, machine(&id, &secret, Some(auth.issuer_url())))
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
    let refused = connect(url, machine(&id, &secret, Some("https://as.example.com"))).await;
    let Err(ClientError::Auth(e)) = &refused else {
        panic!("expected an auth error: {refused:?}");
    };
    assert!(
        matches!(&**e, AuthError::MachineClientForOtherIssuer { .. }),
        "{e}"
    );
    assert_eq!(auth.token_credentials().len(), before);
}
