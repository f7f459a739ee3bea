//! An OAuth 2.1 resource server (the MCP authorization spec's role for an MCP server):
//! [`OAuthResourceServer`] validates access tokens issued by one authorization server (JWTs,
//! and opaque ones by RFC 7662 introspection when configured) and publishes the RFC 9728
//! metadata that tells clients where to get them.
//!
//! A request passes when its `Authorization: Bearer` token is a JWT that
//! - names an algorithm of the allowlist (asymmetric only: RS*, PS*, ES256/384, EdDSA;
//!   never `none`, never HMAC, whose key would be the public key anyone can read);
//! - is signed by a key of the issuer's JWKS, found through its RFC 8414 metadata (or
//!   OpenID discovery) `jwks_uri`, whose `issuer` must equal the configured one; keys are
//!   cached and fetched again on an unknown `kid`, at most once per
//!   [`OAuthConfig::jwks_refetch_interval`], concurrent fetches made once;
//! - has `iss` equal to the issuer, `aud` (a string or an array) containing the resource
//!   URL (RFC 8707), `exp` in the future and `nbf` (if any) in the past, both with
//!   [`OAuthConfig::leeway`], and a non-empty `sub`;
//! - grants every scope of [`OAuthConfig::required_scopes`] (`scope`, space-separated, or
//!   `scp`, an array), else 403 `insufficient_scope`.
//!
//! The principal is `"{iss}#{sub}"`: an issuer URL has no fragment, so the first `#`
//! splits it; it never equals [`ANONYMOUS`](crate::ANONYMOUS) or a 2025-11-25 session's
//! `session:<id>` owner, nor a [`BearerTokens`](super::BearerTokens) name (which has no
//! `:`).
//!
//! A token that is not a JWT (not three parts with a JSON header naming `alg`) is
//! `invalid_token`, unless [`OAuthConfig::introspection`] names the client this server
//! introspects as: the token is then POSTed to the authorization server metadata's
//! `introspection_endpoint` (RFC 7662, `client_secret_basic`). `active: false` is
//! `invalid_token`; an active token passes when its `iss` (if given) is the issuer, its
//! `aud` contains the resource, its `exp` and `nbf` (if given) hold with the leeway and
//! it has a `sub`; its scopes are `scope`'s, its principal `"{issuer}#{sub}"` as for a
//! JWT. Outcomes are kept, keyed by the token's SHA-256: an accepted token until its `exp`,
//! at most [`OAuthConfig::introspection_cache_max`]; refusals apart, fewer and shorter
//! ([`OAuthConfig::introspection_refusal_cache_size`],
//! [`OAuthConfig::introspection_refusal_cache_max`]), so that made-up tokens never push
//! valid ones out. An endpoint that cannot be asked is 503, like keys out of reach.
//!
//! A 503 tells the caller only that the keys (or the introspection endpoint) are out of
//! reach and when to retry; which URL failed and why is logged (`warn`), never sent.
//!
//! Modules: this file the server itself; `config.rs` (its configuration),
//! `metadata.rs` (the authorization server's metadata, discovered once), `keys.rs` (the
//! JWKS cache), `token.rs` (JWT validation), `introspect.rs` (RFC 7662), `claims.rs` (what
//! both make of a token's claims: its identity, or why it is refused), `expiring.rs` (the
//! bounded maps introspection outcomes are kept in). None of them imports this file.

mod claims;
mod config;
mod dpop;
mod expiring;
mod introspect;
mod keys;
mod metadata;
mod token;

use std::sync::Arc;
use std::time::Duration;

use axum::http::{HeaderMap, Method, Uri};
use futures::future::BoxFuture;
use reqwest::Url;

use super::authenticator::{Authenticator, Identity};
use super::challenge::{Challenge, Refusal};
use super::credentials::{Credentials, bearer_credentials};
use config::{http_url, valid_scope};
use dpop::{CheckedProof, DpopVerifier};
use introspect::Introspector;
use keys::KeyCache;
use metadata::ServerMetadata;

pub use super::resource::{PROTECTED_RESOURCE_PATH, ProtectedResource};
pub use claims::TokenError;
pub use config::{DEFAULT_ALGORITHMS, IntrospectionClient, OAuthConfig, OAuthConfigError};
pub use dpop::{DpopError, DpopPolicy};

/// An OAuth 2.1 resource server (see the [module](self) documentation). Cheap to clone.
#[derive(Debug, Clone)]
pub struct OAuthResourceServer {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: OAuthConfig,
    metadata: ProtectedResource,
    keys: KeyCache,
    introspector: Option<Introspector>,
    /// The resource URL: DPoP proofs' `htu` is its origin and the request's path.
    resource: Url,
    dpop: DpopVerifier,
}

impl OAuthResourceServer {
    /// Checks `config` and builds the server. No request is made yet: the authorization
    /// server's metadata and keys are fetched with the first token, so the MCP server
    /// starts even while the authorization server is away.
    pub fn new(config: OAuthConfig) -> Result<OAuthResourceServer, OAuthConfigError> {
        let issuer = http_url(&config.issuer)
            .filter(|u| u.query().is_none())
            .ok_or_else(|| OAuthConfigError::Issuer(config.issuer.clone()))?;
        let resource = http_url(&config.resource)
            .ok_or_else(|| OAuthConfigError::Resource(config.resource.clone()))?;
        let jwks_uri = match &config.jwks_uri {
            None => None,
            Some(u) => Some(http_url(u).ok_or_else(|| OAuthConfigError::JwksUri(u.clone()))?),
        };
        if config.algorithms.is_empty() {
            return Err(OAuthConfigError::NoAlgorithm);
        }
        if let Some(alg) = config
            .algorithms
            .iter()
            .find(|a| !DEFAULT_ALGORITHMS.contains(a))
        {
            return Err(OAuthConfigError::Algorithm(*alg));
        }
        if let Some(bad) = config
            .required_scopes
            .iter()
            .chain(&config.scopes_supported)
            .find(|s| !valid_scope(s))
        {
            return Err(OAuthConfigError::Scope(bad.clone()));
        }
        if config
            .introspection
            .as_ref()
            .is_some_and(|c| c.client_id.is_empty() || c.client_secret.is_empty())
        {
            return Err(OAuthConfigError::IntrospectionClient);
        }
        let client = reqwest::Client::builder()
            .timeout(config.http_timeout)
            .build()
            .map_err(OAuthConfigError::Client)?;
        let mut scopes_supported = config.required_scopes.clone();
        for s in &config.scopes_supported {
            if !scopes_supported.contains(s) {
                scopes_supported.push(s.clone());
            }
        }
        let metadata = ProtectedResource {
            resource: config.resource.clone(),
            authorization_servers: vec![config.issuer.clone()],
            scopes_supported,
            metadata_url: metadata_url(&resource),
        };
        let server_metadata = Arc::new(ServerMetadata::new(
            client,
            config.issuer.clone(),
            issuer,
            config.jwks_refetch_interval,
        ));
        let keys = KeyCache::new(
            Arc::clone(&server_metadata),
            jwks_uri,
            config.jwks_refetch_interval,
        );
        let introspector = config.introspection.as_ref().map(|client| {
            Introspector::new(
                server_metadata,
                client,
                config.introspection_refusal_cache_size,
            )
        });
        let dpop = DpopVerifier::new(config.dpop.clone(), config.algorithms.clone());
        Ok(OAuthResourceServer {
            inner: Arc::new(Inner {
                config,
                metadata,
                keys,
                introspector,
                resource,
                dpop,
            }),
        })
    }

    /// The configuration in force.
    pub fn config(&self) -> &OAuthConfig {
        &self.inner.config
    }

    /// Validates `token` (see the [module](self) documentation) into the identity it
    /// stands for; required scopes are not checked here, nor a DPoP binding (which
    /// needs the request: [`Authenticator::authenticate_request`]).
    pub async fn validate(&self, token: &str) -> Result<Identity, TokenError> {
        self.accepted(token).await.map(|(identity, _)| identity)
    }

    /// The identity of `token` and the DPoP key thumbprint it is bound to, if any.
    async fn accepted(&self, token: &str) -> Result<(Identity, Option<String>), TokenError> {
        let inner = &self.inner;
        token::validate(
            &inner.config,
            &inner.keys,
            inner.introspector.as_ref(),
            token,
        )
        .await
    }

    fn challenge(&self) -> Challenge {
        let challenge =
            Challenge::new().resource_metadata(Some(self.inner.metadata.metadata_url.clone()));
        if self.inner.config.dpop.required {
            challenge.dpop(self.inner.dpop.algorithms())
        } else {
            challenge
        }
    }

    /// 401 with a `DPoP` challenge: `error` (`invalid_token`, `invalid_dpop_proof`,
    /// `use_dpop_nonce`, the latter with a fresh `DPoP-Nonce`).
    fn dpop_refusal(&self, error: &'static str, description: String) -> Refusal {
        let challenge = Challenge::new()
            .resource_metadata(Some(self.inner.metadata.metadata_url.clone()))
            .dpop(self.inner.dpop.algorithms())
            .dpop_error(error, description);
        let refusal = Refusal::unauthorized(challenge);
        if error == "use_dpop_nonce" {
            refusal.with_dpop_nonce(self.inner.dpop.nonce())
        } else {
            refusal
        }
    }

    /// Checks the `DPoP` proof of a `method` request to `uri` presenting `token` (its
    /// `jti` is remembered once the token is accepted).
    fn proof_key(
        &self,
        target: Option<(&Method, &Uri)>,
        headers: &HeaderMap,
        token: &str,
    ) -> Result<CheckedProof, Refusal> {
        let Some((method, uri)) = target else {
            return Err(self.dpop_refusal(
                "invalid_dpop_proof",
                "this server cannot check DPoP proofs on this path".into(),
            ));
        };
        let mut proofs = headers.get_all("dpop").iter();
        let (Some(proof), None) = (proofs.next(), proofs.next()) else {
            return Err(self.dpop_refusal("invalid_dpop_proof", DpopError::Missing.to_string()));
        };
        let proof = proof.to_str().map_err(|_| {
            self.dpop_refusal("invalid_dpop_proof", "the DPoP header is not text".into())
        })?;
        let mut url = self.inner.resource.clone();
        url.set_path(uri.path());
        url.set_query(None);
        match self.inner.dpop.verify(proof, method.as_str(), &url, token) {
            Ok(proof) => Ok(proof),
            Err(DpopError::UseNonce) => {
                Err(self.dpop_refusal("use_dpop_nonce", DpopError::UseNonce.to_string()))
            }
            Err(e) => {
                tracing::debug!(error = %e, "DPoP proof refused");
                Err(self.dpop_refusal("invalid_dpop_proof", e.to_string()))
            }
        }
    }

    /// 503: the token cannot be checked now because `what` (of the authorization server)
    /// out of reach. `Retry-After` and the message name the same wait: the refetch
    /// interval in whole seconds, rounded up, at least one. The message says no more: the
    /// caller is not yet authenticated, and the authorization server's URLs and network
    /// errors are the operator's business (logged by [`check`](Self::check)).
    fn unavailable(&self, what: &str) -> Refusal {
        let interval = self.inner.config.jwks_refetch_interval;
        let secs = interval
            .as_secs()
            .saturating_add(u64::from(interval.subsec_nanos() > 0))
            .max(1);
        Refusal::unavailable(
            format!(
                "Service Unavailable: the authorization server's {what} out of reach; retry in {secs} s with the same token"
            ),
            Duration::from_secs(secs),
        )
    }

    /// Who sent the request (`target`: its method and URI, which DPoP proofs are
    /// checked against; `None` where the transport does not pass them, and then a DPoP
    /// token is refused).
    async fn check(
        &self,
        target: Option<(&Method, &Uri)>,
        headers: &HeaderMap,
    ) -> Result<Option<Identity>, Refusal> {
        let required = &self.inner.config.required_scopes;
        let mut proof = None;
        let token = match bearer_credentials(headers) {
            Credentials::Bearer(token) => token,
            Credentials::Dpop(token) => {
                proof = Some(self.proof_key(target, headers, token)?);
                token
            }
            Credentials::None => {
                return Err(Refusal::unauthorized(self.challenge().scope(required)));
            }
            Credentials::Malformed => {
                return Err(Refusal::unauthorized(
                    self.challenge()
                        .invalid_token("malformed Authorization header"),
                ));
            }
        };
        let identity = match self.accepted(token).await {
            Ok((identity, bound)) => {
                self.check_binding(bound.as_deref(), proof.as_ref().map(|p| p.jkt.as_str()))?;
                if let Some(proof) = &proof {
                    self.inner
                        .dpop
                        .accept(proof)
                        .map_err(|e| self.dpop_refusal("invalid_dpop_proof", e.to_string()))?;
                }
                identity
            }
            Err(TokenError::KeysUnavailable(reason)) => {
                let issuer = &self.inner.config.issuer;
                tracing::warn!(%issuer, %reason, "cannot check a token: the authorization server's keys are out of reach");
                return Err(self.unavailable("keys are"));
            }
            Err(TokenError::IntrospectionUnavailable(reason)) => {
                let issuer = &self.inner.config.issuer;
                tracing::warn!(%issuer, %reason, "cannot check a token: the introspection endpoint is out of reach");
                return Err(self.unavailable("introspection endpoint is"));
            }
            Err(e) => {
                tracing::debug!(error = %e, "token refused");
                return Err(Refusal::unauthorized(
                    self.challenge().invalid_token(e.to_string()),
                ));
            }
        };
        if !identity.missing(required).is_empty() {
            return Err(
                self.insufficient_scope(required, "the token lacks a scope this server requires")
            );
        }
        Ok(Some(identity))
    }
}

impl OAuthResourceServer {
    /// A token bound to a key (`bound`) passes only with a proof of that key
    /// (`proved`); with [`DpopPolicy::required`], every token must be bound.
    fn check_binding(&self, bound: Option<&str>, proved: Option<&str>) -> Result<(), Refusal> {
        match (bound, proved) {
            (Some(bound), Some(proved)) if bound == proved => Ok(()),
            (Some(_), Some(_)) => {
                Err(self.dpop_refusal("invalid_dpop_proof", DpopError::KeyMismatch.to_string()))
            }
            (Some(_), None) => Err(self.dpop_refusal(
                "invalid_token",
                "the token is DPoP-bound: present it with the DPoP scheme and a proof".into(),
            )),
            (None, Some(_)) => Err(self.dpop_refusal(
                "invalid_token",
                "the token is not DPoP-bound: present it with the Bearer scheme".into(),
            )),
            (None, None) if self.inner.config.dpop.required => Err(self.dpop_refusal(
                "invalid_token",
                "this server accepts DPoP-bound tokens only".into(),
            )),
            (None, None) => Ok(()),
        }
    }
}

impl Authenticator for OAuthResourceServer {
    fn authenticate<'a>(
        &'a self,
        headers: &'a HeaderMap,
    ) -> BoxFuture<'a, Result<Option<Identity>, Refusal>> {
        Box::pin(self.check(None, headers))
    }

    fn authenticate_request<'a>(
        &'a self,
        method: &'a Method,
        uri: &'a Uri,
        headers: &'a HeaderMap,
    ) -> BoxFuture<'a, Result<Option<Identity>, Refusal>> {
        Box::pin(self.check(Some((method, uri)), headers))
    }

    fn protected_resource(&self) -> Option<&ProtectedResource> {
        Some(&self.inner.metadata)
    }

    /// 403 naming the scopes every request needs and `needed`: a client that asks for
    /// exactly these gets a token for the operation.
    fn insufficient_scope(&self, needed: &[String], description: &str) -> Refusal {
        let mut all = self.inner.config.required_scopes.clone();
        for s in needed {
            if !all.contains(s) {
                all.push(s.clone());
            }
        }
        Refusal::forbidden(self.challenge().insufficient_scope(&all, description))
    }
}

/// The RFC 9728 metadata URL of `resource`: its origin, the well-known path, then its path
/// (none when it is `/`).
fn metadata_url(resource: &Url) -> String {
    let path = resource.path().trim_end_matches('/');
    format!(
        "{}{PROTECTED_RESOURCE_PATH}{path}",
        resource.origin().ascii_serialization()
    )
}

#[cfg(test)]
mod tests {
    use jsonwebtoken::Algorithm;
    use serde_json::json;

    use super::*;

    /// An authorization server nobody answers for: the caller's 503 says what is out of
    /// reach and when to retry, nothing of the URLs or the network error, which are
    /// logged instead.
    #[tokio::test]
    async fn a_503_names_neither_url_nor_error_and_the_log_names_both() {
        // A port nothing listens on: bound, then closed.
        let dead = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port");
        let server = OAuthResourceServer::new(OAuthConfig {
            http_timeout: Duration::from_secs(5),
            introspection: Some(IntrospectionClient::new("rs", "secret")),
            ..OAuthConfig::new(format!("http://{dead}"), "http://127.0.0.1:9/mcp")
        })
        .expect("valid");
        let logged = crate::test_log::LogBuffer::default();
        let subscriber = tracing_subscriber::fmt()
            .with_writer({
                let logged = logged.clone();
                move || logged.clone()
            })
            .with_ansi(false)
            .finish();
        let _logging = tracing::subscriber::set_default(subscriber);
        let jwt = {
            use base64::Engine;
            let header = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(br#"{"alg":"ES256","kid":"k1"}"#);
            format!("{header}.e30.c2ln")
        };
        for (token, what) in [
            (jwt.as_str(), "keys are"),
            ("opaque-0123456789", "introspection endpoint is"),
        ] {
            let mut headers = HeaderMap::new();
            headers.insert(
                axum::http::header::AUTHORIZATION,
                format!("Bearer {token}").parse().expect("header value"),
            );
            let refusal = server.check(None, &headers).await.expect_err("a 503");
            assert_eq!(refusal.status, axum::http::StatusCode::SERVICE_UNAVAILABLE);
            assert_eq!(refusal.retry_after, Some(Duration::from_secs(60)));
            assert_eq!(
                refusal.message,
                format!(
                    "Service Unavailable: the authorization server's {what} out of reach; retry in 60 s with the same token"
                )
            );
        }
        let log = logged.text();
        for needed in [
            "WARN",
            "keys are out of reach",
            "introspection endpoint is out of reach",
            &format!("http://{dead}/.well-known/oauth-authorization-server"),
            "error sending request",
        ] {
            assert!(log.contains(needed), "{needed:?} in {log}");
        }
    }

    #[test]
    fn bad_configurations_are_refused() {
        let ok = || OAuthConfig::new("https://as.example.com", "https://mcp.example.com/mcp");
        assert!(OAuthResourceServer::new(ok()).is_ok());
        for issuer in [
            "as.example.com",
            "ftp://as",
            "https://as/#x",
            "https://as/?q=1",
        ] {
            let e = OAuthResourceServer::new(OAuthConfig {
                issuer: issuer.into(),
                ..ok()
            });
            assert!(matches!(e, Err(OAuthConfigError::Issuer(_))), "{issuer}");
        }
        let e = OAuthResourceServer::new(OAuthConfig {
            algorithms: vec![Algorithm::ES256, Algorithm::HS256],
            ..ok()
        });
        assert!(matches!(
            e,
            Err(OAuthConfigError::Algorithm(Algorithm::HS256))
        ));
        let e = OAuthResourceServer::new(ok().require_scopes(["a b"]));
        assert!(matches!(e, Err(OAuthConfigError::Scope(_))));
        let e = OAuthResourceServer::new(OAuthConfig {
            resource: "mcp".into(),
            ..ok()
        });
        assert!(matches!(e, Err(OAuthConfigError::Resource(_))));
    }

    #[test]
    fn the_document_lists_tool_scopes_once() {
        let server = OAuthResourceServer::new(
            OAuthConfig::new("https://as.example.com", "https://mcp.example.com/mcp")
                .require_scopes(["mcp"]),
        )
        .expect("valid");
        let meta = server.protected_resource().expect("metadata");
        let doc = meta.document(&["mcp".to_owned(), "admin".to_owned()].into());
        assert_eq!(
            doc,
            json!({
                "resource": "https://mcp.example.com/mcp",
                "authorization_servers": ["https://as.example.com"],
                "bearer_methods_supported": ["header"],
                "scopes_supported": ["mcp", "admin"],
            })
        );
    }

    #[test]
    fn metadata_urls_follow_the_resource_path() {
        let url = |s: &str| metadata_url(&Url::parse(s).expect("url"));
        assert_eq!(
            url("http://127.0.0.1:8000/mcp"),
            "http://127.0.0.1:8000/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            url("https://mcp.example.com/"),
            "https://mcp.example.com/.well-known/oauth-protected-resource"
        );
        assert_eq!(
            url("https://mcp.example.com:443/a/b/"),
            "https://mcp.example.com/.well-known/oauth-protected-resource/a/b"
        );
    }
}
