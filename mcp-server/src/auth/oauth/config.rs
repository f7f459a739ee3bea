//! How a resource server is set up: [`OAuthConfig`] (the issuer, the resource, the scopes,
//! the algorithms, the timing of fetches and caches), [`IntrospectionClient`] (the
//! credentials opaque tokens are introspected with), and [`OAuthConfigError`], why a
//! configuration is refused.
//!
//! **Invariant.** Plain data and the checks of its values: nothing here makes a request,
//! and an [`IntrospectionClient`]'s secret is never printed.

use std::time::Duration;

use jsonwebtoken::Algorithm;
use reqwest::Url;

use super::dpop::DpopPolicy;

/// The algorithms accepted by default: every asymmetric one jsonwebtoken verifies.
pub const DEFAULT_ALGORITHMS: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// How a resource server is set up.
#[derive(Debug, Clone)]
pub struct OAuthConfig {
    /// The authorization server's issuer identifier (an `http(s)` URL without query or
    /// fragment): tokens' `iss` must equal it, and its metadata is found from it.
    pub issuer: String,
    /// This MCP server's canonical URL (e.g. `https://mcp.example.com/mcp`): tokens' `aud`
    /// must contain it (RFC 8707), and the metadata document names it.
    pub resource: String,
    /// Scopes every request needs (403 `insufficient_scope` without them); named in the
    /// 401 challenge's `scope`.
    pub required_scopes: Vec<String>,
    /// Scopes advertised in the metadata's `scopes_supported` besides the required ones
    /// and those tools require.
    pub scopes_supported: Vec<String>,
    /// Accepted signature algorithms; HMAC ones are refused when the server is built
    /// ([`OAuthConfigError::Algorithm`]).
    pub algorithms: Vec<Algorithm>,
    /// Clock skew allowed on `exp` and `nbf`. Default: 60 seconds.
    pub leeway: Duration,
    /// The keys are fetched again, on a token whose `kid` is unknown, at most this often;
    /// a failed metadata discovery is tried again no sooner either, and a 503 for an
    /// authorization server out of reach says to retry after it (`Retry-After`, whole
    /// seconds rounded up). Default: 60 seconds.
    pub jwks_refetch_interval: Duration,
    /// The JWKS URL, when the authorization server publishes no metadata (discovery is
    /// then skipped). Default: discovered.
    pub jwks_uri: Option<String>,
    /// Bound of each request to the authorization server. Default: 10 seconds.
    pub http_timeout: Duration,
    /// The client this server introspects opaque tokens as (RFC 7662); `None` (the
    /// default): a token that is not a JWT is refused.
    pub introspection: Option<IntrospectionClient>,
    /// How long an accepted introspection outcome is kept at most (no longer than the
    /// token's `exp`); it also bounds refusals. At most 10,000 accepted tokens are kept at
    /// once, refusals apart. Default: 60 seconds.
    pub introspection_cache_max: Duration,
    /// How long a refused token (`active: false`, or an answer failing a check) is kept
    /// at most, and never longer than [`introspection_cache_max`](Self::introspection_cache_max).
    /// Default: 10 seconds.
    pub introspection_refusal_cache_max: Duration,
    /// How many refused tokens are kept at once, apart from accepted ones (so that made-up
    /// tokens, which cost one introspection each anyway, never push out or keep out a
    /// valid one); when full, expired refusals make room, else the oldest. Zero: refusals
    /// are not kept. Default: 1,000.
    pub introspection_refusal_cache_size: usize,
    /// DPoP (RFC 9449): whether tokens must be DPoP-bound, whether proofs need a
    /// nonce, the proofs' time window and replay cache. A token bound to a key
    /// (`cnf.jkt`) always needs a valid proof, whatever this says.
    pub dpop: DpopPolicy,
}

/// The credentials a resource server introspects tokens with (`client_secret_basic`).
/// Its `Debug` hides the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct IntrospectionClient {
    /// The client id the authorization server registered for this resource server.
    pub client_id: String,
    /// Its secret.
    pub client_secret: String,
}

impl IntrospectionClient {
    /// `client_id` with `client_secret`.
    pub fn new(
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> IntrospectionClient {
        IntrospectionClient {
            client_id: client_id.into(),
            client_secret: client_secret.into(),
        }
    }
}

impl std::fmt::Debug for IntrospectionClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IntrospectionClient")
            .field("client_id", &self.client_id)
            .field("client_secret", &"(hidden)")
            .finish()
    }
}

impl OAuthConfig {
    /// Tokens of `issuer` for `resource`, with the defaults.
    pub fn new(issuer: impl Into<String>, resource: impl Into<String>) -> OAuthConfig {
        OAuthConfig {
            issuer: issuer.into(),
            resource: resource.into(),
            required_scopes: Vec::new(),
            scopes_supported: Vec::new(),
            algorithms: DEFAULT_ALGORITHMS.to_vec(),
            leeway: Duration::from_secs(60),
            jwks_refetch_interval: Duration::from_secs(60),
            jwks_uri: None,
            http_timeout: Duration::from_secs(10),
            introspection: None,
            introspection_cache_max: Duration::from_secs(60),
            introspection_refusal_cache_max: Duration::from_secs(10),
            introspection_refusal_cache_size: 1_000,
            dpop: DpopPolicy::default(),
        }
    }

    /// Adds scopes every request needs.
    pub fn require_scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.required_scopes
            .extend(scopes.into_iter().map(Into::into));
        self
    }
}

/// Why a resource server cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum OAuthConfigError {
    /// The issuer URL is not usable.
    #[error("the issuer {0:?} is not an http(s) URL without query or fragment")]
    Issuer(String),
    /// The resource URL is not usable.
    #[error("the resource {0:?} is not an http(s) URL without fragment")]
    Resource(String),
    /// The JWKS URL is not usable.
    #[error("the JWKS URL {0:?} is not an http(s) URL")]
    JwksUri(String),
    /// A symmetric (or `none`) algorithm was allowed.
    #[error(
        "algorithm {0:?} is not allowed: only asymmetric signatures can be checked with public keys"
    )]
    Algorithm(Algorithm),
    /// The algorithm allowlist is empty.
    #[error("no algorithm allowed")]
    NoAlgorithm,
    /// A required scope is not a valid scope token.
    #[error(
        "scope {0:?} is not a valid scope token (printable ASCII, no space, quote or backslash)"
    )]
    Scope(String),
    /// The introspection client has an empty id or secret.
    #[error("the introspection client needs a client id and a secret")]
    IntrospectionClient,
    /// The HTTP client for metadata and JWKS fetches could not be built.
    #[error("cannot build the HTTP client: {0}")]
    Client(#[source] reqwest::Error),
}

/// `text` as an `http(s)` URL with a host and no fragment.
pub(super) fn http_url(text: &str) -> Option<Url> {
    Url::parse(text)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
        .filter(|u| u.fragment().is_none())
}

/// Whether `scope` is a valid scope token (RFC 6749, 3.3).
pub(super) fn valid_scope(scope: &str) -> bool {
    !scope.is_empty()
        && scope
            .bytes()
            .all(|b| (0x21..=0x7e).contains(&b) && b != b'"' && b != b'\\')
}
