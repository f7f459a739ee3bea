//! Tamper-evident tokens: the `tasks/list` cursors this server hands out carry an
//! HMAC-SHA256 over the owner and the store's own cursor, so a client can neither forge
//! one nor replay another principal's (either reads as an invalid cursor, -32602). The
//! `requestState` of a synchronous MRTR call is sealed the same way (see `server.rs`).
//!
//! Instances behind one load balancer must share the key ([`ServerBuilder::cursor_key`]);
//! the default is a random key per process.
//!
//! The same key names MCP 2025-11-25 sessions where they are shown
//! ([`SealKey::session_tag`]): an unauthenticated session's id is its only credential, so
//! logs, spans and the console carry a keyed hash of it instead.
//!
//! [`ServerBuilder::cursor_key`]: crate::ServerBuilder::cursor_key

use hmac::{KeyInit, Mac};
use mcp_tasks::Owner;
use sha2::Sha256;

type HmacSha256 = hmac::Hmac<Sha256>;

/// How many hex digits of its keyed hash a session tag keeps (48 bits): enough to tell
/// the sessions of a deployment apart, too few to stand for anything.
pub const SESSION_TAG_DIGITS: usize = 12;

/// What the key of session tags is derived from (so that a tag is never a cursor's MAC).
const SESSION_TAG_CONTEXT: &[u8] = b"mcp-tasks-server session tag v1";

/// The key cursors are sealed with.
#[derive(Clone)]
pub struct SealKey([u8; 32]);

impl std::fmt::Debug for SealKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SealKey(..)")
    }
}

impl SealKey {
    /// A key from 32 bytes the operator provides (the same on every instance).
    pub fn from_bytes(bytes: [u8; 32]) -> SealKey {
        SealKey(bytes)
    }

    /// A random key: fine for one instance; cursors do not survive a restart.
    pub fn random() -> SealKey {
        let mut bytes = [0u8; 32];
        // The OS RNG failing is not recoverable in any useful way; fall back to a key
        // derived from the time so the server still starts (cursors are then guessable
        // only to someone who can also read this process's clock).
        if getrandom::fill(&mut bytes).is_err() {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            bytes[..16].copy_from_slice(&now.as_nanos().to_le_bytes());
        }
        SealKey(bytes)
    }

    fn mac(&self, owner: &Owner, inner: &str) -> HmacSha256 {
        let mut mac = hmac_of(&self.0);
        mac.update(owner.as_str().as_bytes());
        mac.update(&[0]);
        mac.update(inner.as_bytes());
        mac
    }

    /// Seals the store's cursor `inner` for `owner`.
    pub fn seal(&self, owner: &Owner, inner: &str) -> String {
        let tag = self.mac(owner, inner).finalize().into_bytes();
        let hex: String = tag.iter().map(|b| format!("{b:02x}")).collect();
        format!("{inner}~{hex}")
    }

    /// How logs, spans and the operator console name the MCP 2025-11-25 session
    /// `session_id`: `#` and the first [`SESSION_TAG_DIGITS`] hex digits of an
    /// HMAC-SHA256 of the id, keyed with a key derived from this one. Without the key
    /// neither is the id read back from a tag nor a guessed id checked against one;
    /// instances sharing the key (one deployment) give a session the same tag.
    ///
    /// This is the one place a session id is turned into what is shown of it: the id
    /// itself stays in the session table (and the store's session records).
    pub fn session_tag(&self, session_id: &str) -> String {
        let mut derive = hmac_of(&self.0);
        derive.update(SESSION_TAG_CONTEXT);
        let tag_key = derive.finalize().into_bytes();
        let mut mac = hmac_of(&tag_key);
        mac.update(session_id.as_bytes());
        let digest = mac.finalize().into_bytes();
        let mut tag = String::with_capacity(1 + SESSION_TAG_DIGITS);
        tag.push('#');
        for b in digest.iter().take(SESSION_TAG_DIGITS / 2) {
            tag.push_str(&format!("{b:02x}"));
        }
        tag
    }

    /// The store's cursor inside `token`, if this key sealed it for `owner`.
    pub fn open(&self, owner: &Owner, token: &str) -> Option<String> {
        let (inner, hex) = token.rsplit_once('~')?;
        if hex.len() != 64 {
            return None;
        }
        let tag: Vec<u8> = (0..32)
            .map(|i| u8::from_str_radix(hex.get(i * 2..i * 2 + 2)?, 16).ok())
            .collect::<Option<_>>()?;
        self.mac(owner, inner).verify_slice(&tag).ok()?;
        Some(inner.to_owned())
    }
}

/// An HMAC-SHA256 keyed with `key`.
fn hmac_of(key: &[u8]) -> HmacSha256 {
    // HMAC accepts keys of any length.
    <HmacSha256 as KeyInit>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_cursors_open_only_for_their_owner_and_key() {
        let key = SealKey::random();
        let alice = Owner::new("alice");
        let token = key.seal(&alice, "c1.18f.00000000000000000000000000000001");
        assert_eq!(
            key.open(&alice, &token).as_deref(),
            Some("c1.18f.00000000000000000000000000000001")
        );
        assert_eq!(
            key.open(&Owner::new("bob"), &token),
            None,
            "replayed by another principal"
        );
        assert_eq!(SealKey::random().open(&alice, &token), None, "another key");
        let mut forged = token.clone();
        forged.replace_range(3..4, "9");
        assert_eq!(key.open(&alice, &forged), None, "tampered");
        assert_eq!(
            key.open(&alice, &token[..token.len() - 2]),
            None,
            "truncated"
        );
        assert_eq!(
            key.open(&alice, "c1.18f.00000000000000000000000000000001"),
            None,
            "unsealed"
        );
        assert_eq!(key.open(&alice, ""), None);
    }

    #[test]
    fn session_tags_are_short_keyed_and_stable() {
        let key = SealKey::from_bytes([7; 32]);
        let id = "0123456789abcdef0123456789abcdef";
        let tag = key.session_tag(id);
        assert_eq!(tag.len(), 1 + SESSION_TAG_DIGITS, "{tag}");
        assert!(tag.starts_with('#'), "{tag}");
        assert!(tag[1..].bytes().all(|b| b.is_ascii_hexdigit()), "{tag}");
        assert!(!tag.contains(id) && !id.contains(&tag[1..]), "{tag}");
        assert_eq!(key.session_tag(id), tag, "one session, one tag");
        assert_eq!(
            SealKey::from_bytes([7; 32]).session_tag(id),
            tag,
            "same key"
        );
        assert_ne!(
            SealKey::from_bytes([8; 32]).session_tag(id),
            tag,
            "another key"
        );
        assert_ne!(key.session_tag("another session"), tag);
        // Not the MAC a cursor of the same text would carry.
        let sealed = key.seal(&Owner::new(""), id);
        assert!(!sealed.contains(&tag[1..]), "{sealed}");
    }
}
