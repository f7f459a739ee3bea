//! Logins without a person: the grants a program (a background agent, a workload) uses.
//!
//! - The client credentials grant (the MCP OAuth client credentials extension), the
//!   client authenticated with a secret (`client_secret_basic` or `client_secret_post`,
//!   as the authorization server lists them) or a signed JWT (`private_key_jwt`,
//!   RFC 7523 §2.2);
//! - the JWT bearer grant (RFC 7523 §2.1) with a workload's identity token, read from a
//!   file at each grant (workload identity federation: the platform rotates the file);
//! - enterprise-managed authorization: the user's ID token is exchanged at the
//!   enterprise identity provider for an identity assertion authorization grant
//!   (ID-JAG, RFC 8693 token exchange), which the JWT bearer grant trades for an
//!   access token at the MCP server's authorization server.
//!
//! Every token request carries the RFC 8707 `resource`; a refused grant is an
//! [`AuthError::TokenRefused`], never retried with another grant.
//!
//! The MCP server does not choose where a machine client's secrets go, nor what it asks
//! for: a client that sends anything secret (a client secret, a signed client assertion,
//! a workload token, an identity assertion) is bound to one issuer
//! ([`IssuerBinding`]), and asks only for the scopes it was given
//! ([`MachineClient::scopes`]).

mod grant;

pub use grant::run;

use std::path::PathBuf;
use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use jsonwebtoken::{Algorithm, EncodingKey, Header};

use super::error::AuthError;
use super::store::now_secs;

const CLIENT_CREDENTIALS: &str = "client_credentials";
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
const ID_TOKEN: &str = "urn:ietf:params:oauth:token-type:id_token";
const ID_JAG: &str = "urn:ietf:params:oauth:token-type:id-jag";
/// How long a client assertion is valid.
const ASSERTION_LIFETIME_SECS: u64 = 60;

/// A private key that signs client assertions (`private_key_jwt`).
#[derive(Clone)]
pub struct SigningKey {
    key: EncodingKey,
    algorithm: Algorithm,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("algorithm", &self.algorithm)
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// A PEM private key: `PRIVATE KEY` (PKCS#8) for EC and Ed25519 keys, `RSA PRIVATE
    /// KEY` (PKCS#1) for RSA keys, signing with `algorithm` (`ES256`, `ES384`, `EdDSA`,
    /// `RS256`, `PS256`...).
    pub fn from_pem(pem: &[u8], algorithm: &str) -> Result<SigningKey, AuthError> {
        let algorithm: Algorithm = algorithm
            .parse()
            .map_err(|_| AuthError::Key(format!("unknown signing algorithm {algorithm}")))?;
        let (label, der) = pem_der(pem)?;
        let key = match (algorithm, label.as_str()) {
            (Algorithm::ES256 | Algorithm::ES384, "PRIVATE KEY") => EncodingKey::from_ec_der(&der),
            (Algorithm::EdDSA, "PRIVATE KEY") => EncodingKey::from_ed_der(&der),
            (
                Algorithm::RS256
                | Algorithm::RS384
                | Algorithm::RS512
                | Algorithm::PS256
                | Algorithm::PS384
                | Algorithm::PS512,
                "RSA PRIVATE KEY",
            ) => EncodingKey::from_rsa_der(&der),
            (Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512, _) => {
                return Err(AuthError::Key(format!(
                    "{algorithm:?} is not an asymmetric algorithm: private_key_jwt needs one"
                )));
            }
            (_, label) => {
                return Err(AuthError::Key(format!(
                    "a {label} PEM block does not fit {algorithm:?}: EC and Ed25519 keys must be PKCS#8 (BEGIN PRIVATE KEY; convert with `openssl pkcs8 -topk8 -nocrypt`), RSA keys PKCS#1 (BEGIN RSA PRIVATE KEY)"
                )));
            }
        };
        let key = SigningKey { key, algorithm };
        // A key ring cannot read fails here, not at the first token request.
        client_assertion(&key, "probe", "probe")
            .map_err(|_| AuthError::Key("the client key is not a usable private key".into()))?;
        Ok(key)
    }

    /// Reads a PEM key file (see [`from_pem`](SigningKey::from_pem)).
    pub fn from_pem_file(
        path: impl AsRef<std::path::Path>,
        algorithm: &str,
    ) -> Result<SigningKey, AuthError> {
        let path = path.as_ref();
        let pem = std::fs::read(path)
            .map_err(|e| AuthError::Key(format!("cannot read {}: {e}", path.display())))?;
        SigningKey::from_pem(&pem, algorithm)
    }
}

/// How a machine client authenticates at the token endpoint.
#[derive(Debug, Clone)]
pub enum ClientAuth {
    /// A client secret: `client_secret_basic` when the authorization server lists it
    /// (or lists nothing), else `client_secret_post`.
    Secret(String),
    /// A JWT signed with the client's key (`private_key_jwt`, RFC 7523 §2.2): `iss` and
    /// `sub` the client id, `aud` the issuer.
    PrivateKeyJwt(Arc<SigningKey>),
    /// No authentication: the client id in the form (a public client).
    None,
}

/// Which authorization server a machine client's credentials may go to.
///
/// The MCP server names the authorization server in its Protected Resource Metadata
/// (RFC 9728); a server that names one of its own would receive whatever the client
/// sends there, and could replay it at the real one. So a client that sends anything
/// secret (see [`Grant::secret_sent`]) must be bound: [`Issuer`](IssuerBinding::Issuer), or
/// explicitly [`TrustFirstUse`](IssuerBinding::TrustFirstUse). Otherwise the login
/// fails with [`AuthError::MachineClientUnbound`] before any request is made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IssuerBinding {
    /// The issuer the client is registered with, exactly as its metadata writes
    /// `issuer`. Its credentials go to that authorization server only: a server naming
    /// another one gets no request at all ([`AuthError::MachineClientForOtherIssuer`]).
    Issuer(String),
    /// Trust on first use: the first authorization server the MCP server names (https
    /// or loopback) is recorded in the token store, with the login of that MCP server,
    /// before anything is sent to it ([`AuthEvent::IssuerTrusted`]); from then on the
    /// client's credentials go to that one only, and a server naming another gets no
    /// request ([`AuthError::IssuerChangedSinceFirstUse`]). Weaker than
    /// [`Issuer`](IssuerBinding::Issuer): the record is per MCP server (a server the
    /// client has not met yet chooses freely), and a hostile server met first wins.
    ///
    /// [`AuthEvent::IssuerTrusted`]: super::AuthEvent::IssuerTrusted
    TrustFirstUse,
    /// Not bound: the authorization server the MCP server names. Allowed only for a
    /// grant that sends nothing secret: the client credentials grant of a public client
    /// ([`ClientAuth::None`]). Also what an [`IdentityProvider`]'s client usually is: its
    /// token endpoint is configured, not named by the server.
    Unbound,
}

/// A client known to the authorization server beforehand, for the machine grants.
///
/// ```
/// use mcp_tasks_client::auth::{ClientAuth, IssuerBinding, MachineClient};
///
/// let client = MachineClient::new(
///     "nightly-job",
///     ClientAuth::Secret("s3cret".into()),
///     IssuerBinding::Issuer("https://auth.example.com".into()),
/// )
/// .with_scopes(["mcp:read", "mcp:write"]);
/// assert_eq!(client.scopes, ["mcp:read", "mcp:write"]);
/// ```
#[derive(Clone)]
pub struct MachineClient {
    /// The client id.
    pub client_id: String,
    /// How it authenticates.
    pub auth: ClientAuth,
    /// Which authorization server its credentials may go to.
    pub issuer: IssuerBinding,
    /// The scopes it may ask for (each entry one scope, or several separated by
    /// spaces). Nobody is at hand to consent to more, so a server's challenge (401 or
    /// 403 `insufficient_scope`) naming any other scope is refused before any request,
    /// with [`AuthError::ScopeNotAllowed`] naming the scopes it would need. When the
    /// challenge names no scope, the client asks for the scopes of the server's
    /// `scopes_supported` that are here, or for none. Empty (the default of
    /// [`new`](MachineClient::new)): it asks for no scope, and a challenge naming one
    /// is refused.
    pub scopes: Vec<String>,
}

impl std::fmt::Debug for MachineClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let auth = match &self.auth {
            ClientAuth::Secret(_) => "secret",
            ClientAuth::PrivateKeyJwt(_) => "private_key_jwt",
            ClientAuth::None => "none",
        };
        f.debug_struct("MachineClient")
            .field("client_id", &self.client_id)
            .field("auth", &auth)
            .field("issuer", &self.issuer)
            .field("scopes", &self.scopes)
            .finish()
    }
}

impl MachineClient {
    /// The client `client_id`, authenticating with `auth`, bound by `issuer`, allowed
    /// no scope yet ([`with_scopes`](MachineClient::with_scopes)).
    pub fn new(
        client_id: impl Into<String>,
        auth: ClientAuth,
        issuer: IssuerBinding,
    ) -> MachineClient {
        MachineClient {
            client_id: client_id.into(),
            auth,
            issuer,
            scopes: Vec::new(),
        }
    }

    /// Allows the client to ask for `scopes` (added to those it has).
    pub fn with_scopes<S: Into<String>>(
        mut self,
        scopes: impl IntoIterator<Item = S>,
    ) -> MachineClient {
        self.scopes.extend(scopes.into_iter().map(Into::into));
        self
    }

    /// Whether it may ask for the one scope `scope`.
    fn allows(&self, scope: &str) -> bool {
        self.scopes
            .iter()
            .flat_map(|s| s.split_whitespace())
            .any(|s| s == scope)
    }

    /// The scopes of the space-separated `scope` it may not ask for, each once, in
    /// order; `None` when it may ask for all of them.
    pub(crate) fn not_allowed(&self, scope: &str) -> Option<String> {
        let mut out: Vec<&str> = Vec::new();
        for s in scope.split_whitespace() {
            if !self.allows(s) && !out.contains(&s) {
                out.push(s);
            }
        }
        (!out.is_empty()).then(|| out.join(" "))
    }

    /// The scopes of the space-separated `scope` it may ask for, in order; `None` when
    /// there are none.
    pub(crate) fn allowed_part(&self, scope: &str) -> Option<String> {
        let mut out: Vec<&str> = Vec::new();
        for s in scope.split_whitespace() {
            if self.allows(s) && !out.contains(&s) {
                out.push(s);
            }
        }
        (!out.is_empty()).then(|| out.join(" "))
    }

    /// The scopes it may ask for, space-separated; `None` when none.
    pub(crate) fn scope_list(&self) -> Option<String> {
        self.allowed_part(&self.scopes.join(" "))
    }
}

/// A JWT the client presents: given, or read from a file at each use.
#[derive(Clone)]
pub enum Assertion {
    /// The token itself.
    Value(String),
    /// A file holding it (surrounding whitespace ignored), read at each grant.
    File(PathBuf),
}

impl std::fmt::Debug for Assertion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Assertion::Value(_) => f.write_str("Assertion::Value(…)"),
            Assertion::File(p) => f.debug_tuple("Assertion::File").field(p).finish(),
        }
    }
}

impl Assertion {
    fn read(&self) -> Result<String, AuthError> {
        let token = match self {
            Assertion::Value(v) => v.trim().to_owned(),
            Assertion::File(path) => std::fs::read_to_string(path)
                .map_err(|e| AuthError::Key(format!("cannot read {}: {e}", path.display())))?
                .trim()
                .to_owned(),
        };
        if token.is_empty() {
            return Err(AuthError::Key("the assertion to present is empty".into()));
        }
        Ok(token)
    }
}

/// The enterprise identity provider where ID tokens become ID-JAGs.
#[derive(Debug, Clone)]
pub struct IdentityProvider {
    /// Its token endpoint (https, or http on a loopback host). Configured here, never
    /// named by the MCP server: the ID token goes nowhere else.
    pub token_endpoint: String,
    /// The client registered there. Its `issuer`, when
    /// [`IssuerBinding::Issuer`], is the audience of its client assertion (else the
    /// token endpoint's origin); its `scopes` are not used (the scope asked for is the
    /// one the MCP server's client may ask for).
    pub client: MachineClient,
}

/// A login without a browser step.
#[derive(Debug, Clone)]
pub enum Grant {
    /// The client credentials grant.
    ClientCredentials(MachineClient),
    /// The JWT bearer grant with a workload identity token (workload identity
    /// federation).
    JwtBearer {
        /// The client (often a public one: [`ClientAuth::None`]).
        client: MachineClient,
        /// The workload's token.
        assertion: Assertion,
    },
    /// Enterprise-managed authorization: the ID token exchanged at the identity
    /// provider for an ID-JAG, then the JWT bearer grant with it.
    IdentityAssertion {
        /// The client at the MCP server's authorization server.
        client: MachineClient,
        /// Where the ID token is exchanged.
        idp: IdentityProvider,
        /// The user's ID token from that identity provider.
        id_token: Assertion,
    },
}

impl Grant {
    /// The client at the MCP server's authorization server.
    pub fn client(&self) -> &MachineClient {
        match self {
            Grant::ClientCredentials(c) => c,
            Grant::JwtBearer { client, .. } | Grant::IdentityAssertion { client, .. } => client,
        }
    }

    /// What secret this grant sends to the MCP server's authorization server, if any:
    /// the client's secret or signed assertion, the workload token, the identity
    /// assertion (each a credential the receiver could replay). `None` only for the
    /// client credentials grant of a public client ([`ClientAuth::None`]).
    pub fn secret_sent(&self) -> Option<&'static str> {
        match (self, &self.client().auth) {
            (_, ClientAuth::Secret(_)) => Some("its client secret"),
            (_, ClientAuth::PrivateKeyJwt(_)) => Some("a client assertion signed with its key"),
            (Grant::JwtBearer { .. }, ClientAuth::None) => Some("the workload identity token"),
            (Grant::IdentityAssertion { .. }, ClientAuth::None) => {
                Some("the identity assertion (ID-JAG) made for the user")
            }
            (Grant::ClientCredentials(_), ClientAuth::None) => None,
        }
    }
}

/// Checks that `grant` may be used at all: a grant that sends a secret ([`Grant::secret_sent`])
/// needs a client bound to an issuer ([`IssuerBinding`]). Run before any request.
pub(crate) fn check_configuration(grant: &Grant) -> Result<(), AuthError> {
    match (&grant.client().issuer, grant.secret_sent()) {
        (IssuerBinding::Unbound, Some(sends)) => Err(AuthError::MachineClientUnbound {
            client_id: grant.client().client_id.clone(),
            sends,
        }),
        _ => Ok(()),
    }
}

/// The label and DER bytes of the first PEM block of `pem`.
fn pem_der(pem: &[u8]) -> Result<(String, Vec<u8>), AuthError> {
    let bad = || AuthError::Key("the client key is not a PEM private key".into());
    let text = std::str::from_utf8(pem).map_err(|_| bad())?;
    let begin = text.find("-----BEGIN ").ok_or_else(bad)?;
    let rest = &text[begin + "-----BEGIN ".len()..];
    let label_end = rest.find("-----").ok_or_else(bad)?;
    let label = rest[..label_end].to_owned();
    let body = &rest[label_end + 5..];
    let end = body
        .find(&format!("-----END {label}-----"))
        .ok_or_else(bad)?;
    let b64: String = body[..end].split_whitespace().collect();
    let der = STANDARD.decode(b64).map_err(|_| bad())?;
    Ok((label, der))
}

/// A signed client assertion for `client_id` at `audience`.
fn client_assertion(
    key: &SigningKey,
    client_id: &str,
    audience: &str,
) -> Result<String, AuthError> {
    let now = now_secs();
    let mut jti = [0u8; 16];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut jti)
        .map_err(|_| AuthError::Key("no randomness for a client assertion".into()))?;
    let claims = serde_json::json!({
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now,
        "exp": now + ASSERTION_LIFETIME_SECS,
        "jti": URL_SAFE_NO_PAD.encode(jti),
    });
    jsonwebtoken::encode(&Header::new(key.algorithm), &claims, &key.key)
        .map_err(|e| AuthError::Key(format!("cannot sign the client assertion: {e}")))
}

/// Checks that `client` may be used at `issuer`, as far as its binding alone says (the
/// issuer recorded for [`IssuerBinding::TrustFirstUse`] is the caller's to check).
pub(crate) fn check_binding(client: &MachineClient, issuer: &str) -> Result<(), AuthError> {
    match &client.issuer {
        IssuerBinding::Issuer(bound) if bound != issuer => {
            Err(AuthError::MachineClientForOtherIssuer {
                issuer: issuer.to_owned(),
                bound: bound.clone(),
            })
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ec_pem() -> (String, Vec<u8>) {
        use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).expect("key");
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .expect("pair");
        let pem = format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            STANDARD.encode(pkcs8.as_ref())
        );
        (pem, pair.public_key().as_ref().to_vec())
    }

    #[test]
    fn a_client_assertion_is_signed_for_the_issuer() {
        let (pem, public) = ec_pem();
        let key = SigningKey::from_pem(pem.as_bytes(), "ES256").expect("key");
        let jwt = client_assertion(&key, "cid", "https://as.example").expect("signed");
        let x = URL_SAFE_NO_PAD.encode(&public[1..33]);
        let y = URL_SAFE_NO_PAD.encode(&public[33..]);
        let mut validation = jsonwebtoken::Validation::new(Algorithm::ES256);
        validation.set_audience(&["https://as.example"]);
        let claims = jsonwebtoken::decode::<serde_json::Value>(
            &jwt,
            &jsonwebtoken::DecodingKey::from_ec_components(&x, &y).expect("key"),
            &validation,
        )
        .expect("verifies")
        .claims;
        assert_eq!(claims["iss"], "cid");
        assert_eq!(claims["sub"], "cid");
        assert!(claims["jti"].as_str().is_some_and(|j| !j.is_empty()));
    }

    #[test]
    fn unusable_keys_are_refused_when_read() {
        let (pem, _) = ec_pem();
        assert!(matches!(
            SigningKey::from_pem(pem.as_bytes(), "RS256"),
            Err(AuthError::Key(_))
        ));
        assert!(matches!(
            SigningKey::from_pem(pem.as_bytes(), "HS256"),
            Err(AuthError::Key(_))
        ));
        assert!(matches!(
            SigningKey::from_pem(b"not a key", "ES256"),
            Err(AuthError::Key(_))
        ));
        let garbage = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
        assert!(matches!(
            SigningKey::from_pem(garbage.as_bytes(), "ES256"),
            Err(AuthError::Key(_))
        ));
    }

    #[test]
    fn a_bound_client_goes_to_its_issuer_only() {
        let client = MachineClient::new(
            "c",
            ClientAuth::Secret("s".into()),
            IssuerBinding::Issuer("https://as.example".into()),
        );
        assert!(check_binding(&client, "https://as.example").is_ok());
        assert!(matches!(
            check_binding(&client, "https://evil.example"),
            Err(AuthError::MachineClientForOtherIssuer { .. })
        ));
    }

    #[test]
    fn a_grant_that_sends_a_secret_needs_a_binding() {
        let (pem, _) = ec_pem();
        let key = Arc::new(SigningKey::from_pem(pem.as_bytes(), "ES256").expect("key"));
        let client =
            |auth: ClientAuth, issuer: IssuerBinding| MachineClient::new("c", auth, issuer);
        let workload = |issuer| Grant::JwtBearer {
            client: client(ClientAuth::None, issuer),
            assertion: Assertion::Value("jwt".into()),
        };
        let enterprise = |issuer| Grant::IdentityAssertion {
            client: client(ClientAuth::None, issuer),
            idp: IdentityProvider {
                token_endpoint: "https://idp.example/token".into(),
                client: client(ClientAuth::None, IssuerBinding::Unbound),
            },
            id_token: Assertion::Value("id".into()),
        };
        let secret =
            |issuer| Grant::ClientCredentials(client(ClientAuth::Secret("s".into()), issuer));
        let signed = |issuer| {
            Grant::ClientCredentials(client(ClientAuth::PrivateKeyJwt(key.clone()), issuer))
        };
        for make in [
            &secret as &dyn Fn(IssuerBinding) -> Grant,
            &signed,
            &workload,
            &enterprise,
        ] {
            assert!(matches!(
                check_configuration(&make(IssuerBinding::Unbound)),
                Err(AuthError::MachineClientUnbound { .. })
            ));
            assert!(check_configuration(&make(IssuerBinding::TrustFirstUse)).is_ok());
            let bound = IssuerBinding::Issuer("https://as.example".into());
            assert!(check_configuration(&make(bound)).is_ok());
        }
        // A public client's client credentials grant sends nothing secret.
        let public = Grant::ClientCredentials(client(ClientAuth::None, IssuerBinding::Unbound));
        assert_eq!(public.secret_sent(), None);
        assert!(check_configuration(&public).is_ok());
    }

    #[test]
    fn the_scopes_a_client_may_ask_for_are_its_own() {
        let client = MachineClient::new("c", ClientAuth::None, IssuerBinding::Unbound)
            .with_scopes(["a", "b c"]);
        assert_eq!(client.not_allowed("a c"), None);
        assert_eq!(client.not_allowed("a x y x").as_deref(), Some("x y"));
        assert_eq!(client.allowed_part("x c a c").as_deref(), Some("c a"));
        assert_eq!(client.allowed_part("x"), None);
        assert_eq!(client.scope_list().as_deref(), Some("a b c"));
        let none = MachineClient::new("c", ClientAuth::None, IssuerBinding::Unbound);
        assert_eq!(none.not_allowed("a").as_deref(), Some("a"));
        assert_eq!(none.not_allowed(" "), None);
        assert_eq!(none.scope_list(), None);
    }

    #[test]
    fn a_workload_token_file_is_read_at_each_use() {
        let path = std::env::temp_dir().join(format!("wif-{}.jwt", std::process::id()));
        std::fs::write(&path, "first\n").expect("write");
        let assertion = Assertion::File(path.clone());
        assert_eq!(assertion.read().expect("read"), "first");
        std::fs::write(&path, "second").expect("write");
        assert_eq!(assertion.read().expect("read"), "second");
        std::fs::write(&path, "  ").expect("write");
        assert!(matches!(assertion.read(), Err(AuthError::Key(_))));
        let _ = std::fs::remove_file(&path);
        assert!(matches!(assertion.read(), Err(AuthError::Key(_))));
    }
}
