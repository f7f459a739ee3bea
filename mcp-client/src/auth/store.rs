//! Where logins are kept: the [`TokenStore`] trait, [`MemoryTokenStore`] and
//! [`FileTokenStore`] (a JSON file of mode 0600). One entry per MCP server and resource:
//! the authorization server that issued it, the client registered there, and the tokens.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::error::AuthError;

/// A client as an authorization server knows it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegisteredClient {
    /// The client id (an HTTPS URL for a Client ID Metadata Document).
    pub client_id: String,
    /// The client secret, for confidential clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// `client_secret_basic`, `client_secret_post` or `none`; `None`: chosen from the
    /// server's metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_method: Option<String>,
    /// The redirect URI registered with the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect_uri: Option<String>,
}

impl std::fmt::Debug for RegisteredClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegisteredClient")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "…"))
            .field(
                "token_endpoint_auth_method",
                &self.token_endpoint_auth_method,
            )
            .finish()
    }
}

/// Tokens from a token endpoint.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenSet {
    /// The access token.
    pub access_token: String,
    /// Its `token_type` as the token endpoint said it (`Bearer`, `DPoP`...); `None`:
    /// not known (a login stored before it was kept), taken as `Bearer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_type: Option<String>,
    /// To get the next access token without the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires (seconds since the Unix epoch), if said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// The scope granted (or asked for, when the server did not say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// When the token endpoint gave them (seconds since the Unix epoch), if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub received_at: Option<u64>,
}

impl std::fmt::Debug for TokenSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenSet")
            .field("refresh_token", &self.refresh_token.is_some())
            .field("expires_at", &self.expires_at)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

impl TokenSet {
    /// Whether the access token expires within `margin_secs` (false when unknown).
    pub fn expires_within(&self, margin_secs: u64) -> bool {
        self.expires_at
            .is_some_and(|at| at <= now_secs().saturating_add(margin_secs))
    }

    /// Whether the token is bound to a DPoP key (`token_type` `DPoP`, any case): it is
    /// presented with the `DPoP` scheme and a proof.
    pub fn is_dpop(&self) -> bool {
        self.token_type
            .as_deref()
            .is_some_and(|t| t.eq_ignore_ascii_case("dpop"))
    }

    /// Whether to get a new token ahead of the expiry without a refresh token (a
    /// machine grant runs again): in the last half of its lifetime, at most its last
    /// minute.
    pub fn renewal_due(&self) -> bool {
        let (Some(received), Some(expires)) = (self.received_at, self.expires_at) else {
            return false;
        };
        let lifetime = expires.saturating_sub(received);
        lifetime >= 2 && self.expires_within((lifetime / 2).min(60))
    }

    /// Whether to refresh before using the access token: it has a refresh token and
    /// is in the last half of its lifetime (at most the last minute of it). A token
    /// whose lifetime is unknown or under 2 s is used until the server refuses it.
    pub fn refresh_due(&self) -> bool {
        let (Some(received), Some(expires), Some(_)) =
            (self.received_at, self.expires_at, &self.refresh_token)
        else {
            return false;
        };
        let lifetime = expires.saturating_sub(received);
        lifetime >= 2 && self.expires_within((lifetime / 2).min(60))
    }
}

/// Seconds since the Unix epoch.
pub(crate) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

/// One login: for the MCP server `server` (its URL) and the protected resource
/// `resource`, at the authorization server `issuer`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Credentials {
    /// The MCP server's URL.
    pub server: String,
    /// The protected resource (the `resource` of its metadata, sent as RFC 8707
    /// `resource`).
    pub resource: String,
    /// The authorization server that issued the client and tokens. Credentials are
    /// never presented to another. For a machine client trusting its first issuer
    /// ([`IssuerBinding::TrustFirstUse`](super::IssuerBinding::TrustFirstUse)), the
    /// issuer it was first used with: the entry is saved (without tokens) before its
    /// credentials are first sent, and its credentials never go to another issuer for
    /// this server while the entry is kept.
    pub issuer: String,
    /// The client registered at `issuer`.
    pub client: RegisteredClient,
    /// The tokens, once authorized (`None`: a client known, or an issuer recorded,
    /// before any token).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<TokenSet>,
}

/// Keeps logins between runs. Implementations must keep secrets from other users.
#[async_trait]
pub trait TokenStore: Send + Sync + std::fmt::Debug {
    /// The most recently saved credentials for the MCP server `server`, if any.
    async fn load(&self, server: &str) -> Result<Option<Credentials>, AuthError>;
    /// Saves `credentials`, replacing the entry of the same server and resource.
    async fn save(&self, credentials: &Credentials) -> Result<(), AuthError>;
    /// Forgets the entry of `server` and `resource`.
    async fn remove(&self, server: &str, resource: &str) -> Result<(), AuthError>;
}

/// The entries, most recent last.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Entries {
    #[serde(default)]
    entries: Vec<Credentials>,
}

impl Entries {
    fn load(&self, server: &str) -> Option<Credentials> {
        self.entries
            .iter()
            .rev()
            .find(|c| c.server == server)
            .cloned()
    }

    fn save(&mut self, credentials: &Credentials) {
        self.remove(&credentials.server, &credentials.resource);
        self.entries.push(credentials.clone());
    }

    fn remove(&mut self, server: &str, resource: &str) {
        self.entries
            .retain(|c| !(c.server == server && c.resource == resource));
    }
}

/// Credentials kept in memory, for one process.
#[derive(Debug, Default)]
pub struct MemoryTokenStore {
    entries: Mutex<Entries>,
}

impl MemoryTokenStore {
    /// An empty store.
    pub fn new() -> MemoryTokenStore {
        MemoryTokenStore::default()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[async_trait]
impl TokenStore for MemoryTokenStore {
    async fn load(&self, server: &str) -> Result<Option<Credentials>, AuthError> {
        Ok(lock(&self.entries).load(server))
    }

    async fn save(&self, credentials: &Credentials) -> Result<(), AuthError> {
        lock(&self.entries).save(credentials);
        Ok(())
    }

    async fn remove(&self, server: &str, resource: &str) -> Result<(), AuthError> {
        lock(&self.entries).remove(server, resource);
        Ok(())
    }
}

/// Credentials in a JSON file, created with mode 0600 (owner only) and replaced
/// atomically (written beside it, then renamed). Each change reads, changes and
/// writes the file holding an exclusive lock of `FILE.lock` beside it, so two processes
/// saving at once keep both entries.
#[derive(Debug)]
pub struct FileTokenStore {
    path: PathBuf,
    write: tokio::sync::Mutex<()>,
}

impl FileTokenStore {
    /// A store in the file `path` (created on first save, with its folder).
    pub fn new(path: impl Into<PathBuf>) -> FileTokenStore {
        FileTokenStore {
            path: path.into(),
            write: tokio::sync::Mutex::new(()),
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read(&self) -> Result<Entries, AuthError> {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                AuthError::Store(format!(
                    "{} is not a token file ({e}); move it away to log in afresh",
                    self.path.display()
                ))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Entries::default()),
            Err(e) => Err(AuthError::Store(format!(
                "cannot read {}: {e}",
                self.path.display()
            ))),
        }
    }

    /// The lock file beside the token file (`tokens.json.lock`).
    fn lock_path(&self) -> PathBuf {
        let mut name = self.path.file_name().unwrap_or_default().to_os_string();
        name.push(".lock");
        self.path.with_file_name(name)
    }

    /// Reads, changes and writes the entries holding an exclusive lock of the lock file,
    /// so that processes sharing the file never lose each other's entries.
    fn change(&self, f: impl FnOnce(&mut Entries)) -> Result<(), AuthError> {
        let fail = |what: &str, e: std::io::Error| {
            AuthError::Store(format!("cannot {what} {}: {e}", self.path.display()))
        };
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| fail("create the folder of", e))?;
        }
        let mut options = std::fs::OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let lock_path = self.lock_path();
        let lock = options
            .open(&lock_path)
            .map_err(|e| AuthError::Store(format!("cannot open {}: {e}", lock_path.display())))?;
        // Held by another process for one read and one write at most.
        lock.lock()
            .map_err(|e| AuthError::Store(format!("cannot lock {}: {e}", lock_path.display())))?;
        let mut entries = self.read()?;
        f(&mut entries);
        self.write(&entries)
        // The lock goes with the file handle.
    }

    fn write(&self, entries: &Entries) -> Result<(), AuthError> {
        let fail = |what: &str, e: std::io::Error| {
            AuthError::Store(format!("cannot {what} {}: {e}", self.path.display()))
        };
        let bytes = serde_json::to_vec_pretty(entries)
            .map_err(|e| AuthError::Store(format!("cannot encode the tokens: {e}")))?;
        let tmp = self
            .path
            .with_extension(format!("tmp{}", std::process::id()));
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let written = (|| {
            use std::io::Write;
            let mut file = options.open(&tmp)?;
            // An existing temporary file keeps its mode: set it again.
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
            }
            file.write_all(&bytes)?;
            file.sync_all()
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(fail("write", e));
        }
        std::fs::rename(&tmp, &self.path).map_err(|e| fail("replace", e))
    }
}

#[async_trait]
impl TokenStore for FileTokenStore {
    async fn load(&self, server: &str) -> Result<Option<Credentials>, AuthError> {
        Ok(self.read()?.load(server))
    }

    async fn save(&self, credentials: &Credentials) -> Result<(), AuthError> {
        let _guard = self.write.lock().await;
        self.change(|entries| entries.save(credentials))
    }

    async fn remove(&self, server: &str, resource: &str) -> Result<(), AuthError> {
        let _guard = self.write.lock().await;
        self.change(|entries| entries.remove(server, resource))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn credentials(server: &str) -> Credentials {
        Credentials {
            server: server.to_owned(),
            resource: server.to_owned(),
            issuer: "http://as".to_owned(),
            client: RegisteredClient {
                client_id: "c".to_owned(),
                client_secret: None,
                token_endpoint_auth_method: None,
                redirect_uri: None,
            },
            tokens: None,
        }
    }

    #[test]
    fn two_stores_on_one_file_saving_at_once_keep_every_entry() {
        let dir = std::env::temp_dir().join(format!("mcp-token-lock-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("tokens.json");
        // Two stores on one file, as two processes have: each its own in-process guard.
        let writers: Vec<_> = (0..2)
            .map(|w| {
                let path = path.clone();
                std::thread::spawn(move || {
                    let store = FileTokenStore::new(&path);
                    for i in 0..25 {
                        store
                            .change(|e| e.save(&credentials(&format!("http://s{w}-{i}"))))
                            .expect("saved");
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().expect("writer ran");
        }
        let entries = FileTokenStore::new(&path).read().expect("readable");
        assert_eq!(entries.entries.len(), 50, "an entry was lost");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_refresh_is_due_in_the_last_half_of_the_lifetime() {
        let now = now_secs();
        let tokens = |received: u64, expires: u64, refresh: bool| TokenSet {
            access_token: "a".to_owned(),
            token_type: None,
            refresh_token: refresh.then(|| "r".to_owned()),
            expires_at: Some(expires),
            scope: None,
            received_at: Some(received),
        };
        assert!(!tokens(now, now + 300, true).refresh_due());
        assert!(tokens(now - 250, now + 50, true).refresh_due());
        // At most the last minute of a long lifetime.
        assert!(!tokens(now - 3000, now + 600, true).refresh_due());
        assert!(tokens(now - 3000, now + 30, true).refresh_due());
        // Without a refresh token, or too short-lived: wait for the server's 401.
        assert!(!tokens(now - 200, now + 100, false).refresh_due());
        assert!(!tokens(now, now + 1, true).refresh_due());
    }
}
