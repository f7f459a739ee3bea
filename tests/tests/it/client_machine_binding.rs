//! Machine clients (`Grant`) and the authorization server an MCP server names. A client
//! whose grant sends a secret (a client secret, a signed client assertion, a workload
//! token, an identity assertion) goes to its bound issuer only: a hostile server whose
//! Protected Resource Metadata names an authorization server of its own gets no request
//! at all, whether the client is unbound (refused before anything is sent), bound to
//! its issuer, or trusting the first issuer it met (recorded with the stored login). And
//! a challenge asking a machine client for scopes it was not given is refused before any
//! request: nobody is at hand to consent to them.

use std::sync::{Arc, Mutex};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use mcp_tasks_client::auth::{
    Assertion, AuthConfig, AuthError, AuthEvent, ClientAuth, Grant, IdentityProvider,
    IssuerBinding, MachineClient, MemoryTokenStore, SigningKey, TokenStore,
};
use mcp_tasks_client::{ClientError, DeclineAll, McpClient};
use mcp_tasks_protocol::JsonObject;
use mcp_tests::authorization_server::{
    AuthorizationServer, AuthorizationServerOptions, Knobs, Prm, ProtectedDemo,
};
use mcp_tests::issuer::unreachable_origin;
use mcp_tests::programs;

/// The scope every request to a [`ProtectedDemo`] needs (its 401 asks for it).
const READ: &str = "mcp:read";
/// The scope a `tools/call` needs besides (its 403 asks for it).
const WRITE: &str = "mcp:write";

async fn authorization_server() -> Arc<AuthorizationServer> {
    Arc::new(
        AuthorizationServer::start(AuthorizationServerOptions::for_protected_demo(
            Knobs::default(),
        ))
        .await,
    )
}

/// An authorization server a hostile MCP server names: it approves any client and
/// records every credential presented at its token endpoint.
async fn hostile_authorization_server() -> Arc<AuthorizationServer> {
    Arc::new(
        AuthorizationServer::start(AuthorizationServerOptions::for_protected_demo(Knobs {
            approve_any_client: true,
            ..Knobs::default()
        }))
        .await,
    )
}

fn login(grant: Grant) -> AuthConfig {
    AuthConfig::new(Arc::new(MemoryTokenStore::new()), "nightly-job").with_grant(grant)
}

async fn connect(url: &str, auth: AuthConfig) -> Result<McpClient, ClientError> {
    programs::connect_with_auth(url, Arc::new(DeclineAll), auth).await
}

/// A fresh P-256 key for `private_key_jwt`, as PKCS#8 PEM.
fn client_key() -> Arc<SigningKey> {
    use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 =
        EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).expect("a P-256 key");
    let pem = format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        STANDARD.encode(pkcs8.as_ref())
    );
    Arc::new(SigningKey::from_pem(pem.as_bytes(), "ES256").expect("a usable key"))
}

/// The auth error `result` failed with; panics (the test fails) on anything else.
fn auth_error<T>(result: &Result<T, ClientError>, what: &str) -> Arc<AuthError> {
    match result {
        Err(ClientError::Auth(e)) => Arc::clone(e),
        Err(e) => panic!("{what}: expected an auth error, got {e}"),
        Ok(_) => panic!("{what}: expected an auth error, got a success"),
    }
}

#[tokio::test]
async fn unbound_clients_with_a_secret_send_nothing_to_the_authorization_server_a_server_names() {
    let real = authorization_server().await;
    let hostile = hostile_authorization_server().await;
    // The MCP server trusts the real authorization server's tokens but names its own.
    let demo = ProtectedDemo::start(
        Arc::clone(&real),
        Prm {
            authorization_servers: Some(vec![hostile.issuer_url().to_owned()]),
            ..Prm::default()
        },
    )
    .await;
    let (id, secret) = real.register_client("http://127.0.0.1:1/unused");
    let unbound = |auth| MachineClient::new(&id, auth, IssuerBinding::Unbound).with_scopes([READ]);
    let grants = [
        (
            "a client secret",
            Grant::ClientCredentials(unbound(ClientAuth::Secret(secret.clone()))),
        ),
        (
            "a signed client assertion",
            Grant::ClientCredentials(unbound(ClientAuth::PrivateKeyJwt(client_key()))),
        ),
        (
            "a workload identity token",
            Grant::JwtBearer {
                client: unbound(ClientAuth::None),
                assertion: Assertion::Value("workload-token-for-the-real-server".into()),
            },
        ),
        (
            "an identity assertion",
            Grant::IdentityAssertion {
                client: unbound(ClientAuth::None),
                idp: IdentityProvider {
                    token_endpoint: format!("{}/token", unreachable_origin()),
                    client: MachineClient::new(
                        "idp-client",
                        ClientAuth::None,
                        IssuerBinding::Unbound,
                    ),
                },
                id_token: Assertion::Value("the-user-s-id-token".into()),
            },
        ),
    ];
    for (what, grant) in grants {
        let refused = connect(&demo.url, login(grant)).await;
        let e = auth_error(&refused, what);
        assert!(
            matches!(&*e, AuthError::MachineClientUnbound { client_id, .. } if *client_id == id),
            "{what}: {e}"
        );
        let said = e.to_string();
        assert!(
            said.contains("--client-issuer") && said.contains("--trust-first-issuer"),
            "{what}: {said}"
        );
    }
    // Refused before anything is sent: no request reached either authorization server,
    // nor the MCP server.
    assert_eq!(hostile.issuer.requests(), 0);
    assert!(hostile.token_credentials().is_empty());
    assert_eq!(real.issuer.requests(), 0);
    assert_eq!(demo.unauthorized(), 0);
}

#[tokio::test]
async fn a_bound_client_sends_no_request_to_another_issuer() {
    let real = authorization_server().await;
    let hostile = hostile_authorization_server().await;
    let demo = ProtectedDemo::start(
        Arc::clone(&real),
        Prm {
            authorization_servers: Some(vec![hostile.issuer_url().to_owned()]),
            ..Prm::default()
        },
    )
    .await;
    let (id, secret) = real.register_client("http://127.0.0.1:1/unused");
    let client = MachineClient::new(
        &id,
        ClientAuth::Secret(secret),
        IssuerBinding::Issuer(real.issuer_url().to_owned()),
    )
    .with_scopes([READ]);
    let refused = connect(&demo.url, login(Grant::ClientCredentials(client))).await;
    let e = auth_error(&refused, "a bound client");
    assert!(
        matches!(&*e, AuthError::MachineClientForOtherIssuer { issuer, bound }
            if issuer == hostile.issuer_url() && bound == real.issuer_url()),
        "{e}"
    );
    // Not even its metadata was asked for.
    assert_eq!(hostile.issuer.requests(), 0);
    assert!(real.grants().is_empty());
}

#[tokio::test]
async fn a_client_trusting_its_first_issuer_refuses_another_after_it() {
    let real = authorization_server().await;
    let hostile = hostile_authorization_server().await;
    let demo = ProtectedDemo::start(Arc::clone(&real), Prm::default()).await;
    let (id, secret) = real.register_client("http://127.0.0.1:1/unused");
    let store = Arc::new(MemoryTokenStore::new());
    let events: Arc<Mutex<Vec<AuthEvent>>> = Arc::default();
    let config = || {
        let seen = Arc::clone(&events);
        let client = MachineClient::new(
            &id,
            ClientAuth::Secret(secret.clone()),
            IssuerBinding::TrustFirstUse,
        )
        .with_scopes([READ]);
        AuthConfig::new(store.clone(), "nightly-job")
            .on_event(move |e| {
                seen.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(e.clone())
            })
            .with_grant(Grant::ClientCredentials(client))
    };

    // The first authorization server named is trusted, recorded, and used.
    let client = connect(&demo.url, config()).await.expect("connects");
    client.list_tools().await.expect("tools/list");
    assert_eq!(real.grants(), ["client_credentials"]);
    assert_eq!(real.token_credentials(), [(id.clone(), secret.clone())]);
    let stored = store
        .load(&demo.url)
        .await
        .expect("the store answers")
        .expect("a stored login");
    assert_eq!(stored.issuer, real.issuer_url());
    let trusted = AuthEvent::IssuerTrusted {
        issuer: real.issuer_url().to_owned(),
        client_id: id.clone(),
    };
    assert!(
        events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&trusted)
    );

    // The server now names another authorization server: the open connection refuses
    // it at the next 401...
    demo.migrate_to(Arc::clone(&hostile));
    let refused = client.list_tools().await;
    let e = auth_error(&refused, "the open connection");
    assert!(
        matches!(&*e, AuthError::IssuerChangedSinceFirstUse { issuer, first }
            if issuer == hostile.issuer_url() && first == real.issuer_url()),
        "{e}"
    );
    // ...and so does a new one with the same store.
    let refused = connect(&demo.url, config()).await;
    let e = auth_error(&refused, "a new connection");
    assert!(
        matches!(&*e, AuthError::IssuerChangedSinceFirstUse { .. }),
        "{e}"
    );
    assert_eq!(hostile.issuer.requests(), 0);
    assert!(hostile.token_credentials().is_empty());
    assert_eq!(real.grants().len(), 1);
}

#[tokio::test]
async fn a_challenge_for_scopes_the_machine_client_was_not_given_is_refused() {
    let real = authorization_server().await;
    let demo = ProtectedDemo::start(Arc::clone(&real), Prm::default()).await;
    let (id, secret) = real.register_client("http://127.0.0.1:1/unused");
    let allowed = |scopes: &[&str]| {
        login(Grant::ClientCredentials(
            MachineClient::new(
                &id,
                ClientAuth::Secret(secret.clone()),
                IssuerBinding::Issuer(real.issuer_url().to_owned()),
            )
            .with_scopes(scopes.iter().copied()),
        ))
    };

    // Given mcp:read: the 401 asks for it, the client logs in and lists the tools...
    let client = connect(&demo.url, allowed(&[READ]))
        .await
        .expect("connects");
    client.list_tools().await.expect("tools/list");
    assert_eq!(real.grants(), ["client_credentials"]);
    // ...but a tool call's 403 asks for mcp:write too: refused, naming it, and no token
    // is asked for (nor any metadata).
    let requests = real.issuer.requests();
    let refused = client.call_tool("echo", JsonObject::new()).await;
    let e = auth_error(&refused, "the step-up");
    assert!(
        matches!(&*e, AuthError::ScopeNotAllowed { scope, allowed }
            if scope == WRITE && allowed.as_deref() == Some(READ)),
        "{e}"
    );
    assert!(e.to_string().contains("--client-scope"), "{e}");
    assert_eq!(real.grants().len(), 1);
    assert_eq!(real.issuer.requests(), requests);

    // Given no scope: the first 401 asking for mcp:read is refused the same way.
    let refused = connect(&demo.url, allowed(&[])).await;
    let e = auth_error(&refused, "no scope given");
    assert!(
        matches!(&*e, AuthError::ScopeNotAllowed { scope, allowed: None } if scope == READ),
        "{e}"
    );
    assert_eq!(real.grants().len(), 1);
    assert_eq!(real.issuer.requests(), requests);
}
