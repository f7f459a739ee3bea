//! Tamper-evident tokens: the `tasks/list` cursors this server hands out carry an
//! HMAC-SHA256 over the owner and the store's own cursor, so a client can neither forge
//! one nor replay another principal's (either reads as an invalid cursor, -32602). The
//! `requestState` of a synchronous MRTR call is sealed the same way (see `server.rs`).
//!
//! Instances behind one load balancer must share the key ([`ServerBuilder::cursor_key`]);
//! the default is a random key per process.
//!
//! [`ServerBuilder::cursor_key`]: crate::ServerBuilder::cursor_key

use hmac::{KeyInit, Mac};
use mcp_tasks::Owner;
use sha2::Sha256;

type HmacSha256 = hmac::Hmac<Sha256>;

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
        // A fixed-size key of 32 bytes is always accepted by HMAC.
        let mut mac = <HmacSha256 as KeyInit>::new_from_slice(&self.0)
            .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
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
}
