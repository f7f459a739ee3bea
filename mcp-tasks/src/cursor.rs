//! The opaque keyset cursors: `list`'s, the `(created_at, id)` of the last task returned,
//! and `operator_list`'s, that position and the digest of the listing's filter (made and
//! read through [`OperatorFilter::cursor`](crate::OperatorFilter::cursor)).

use crate::error::StoreError;
use crate::record::{Millis, TaskId};

const PREFIX: &str = "c1.";

/// Encodes the position after `(created_at, id)`.
pub fn encode(created_at: Millis, id: &TaskId) -> String {
    format!("{PREFIX}{created_at:x}.{}", id.as_str())
}

/// Decodes a cursor made by [`encode`]; anything else is [`StoreError::InvalidCursor`].
pub fn decode(cursor: &str) -> Result<(Millis, TaskId), StoreError> {
    let rest = cursor
        .strip_prefix(PREFIX)
        .ok_or(StoreError::InvalidCursor)?;
    position(rest)
}

const KEYED_PREFIX: &str = "o1.";

/// Encodes the position before `(created_at, id)` in a listing whose filter digests to
/// `key` (an operator listing: [`OperatorFilter::cursor`](crate::OperatorFilter::cursor)).
pub(crate) fn encode_keyed(key: u64, created_at: Millis, id: &TaskId) -> String {
    format!("{KEYED_PREFIX}{key:016x}.{created_at:x}.{}", id.as_str())
}

/// Decodes a cursor made by [`encode_keyed`] with the same `key`; anything else (an owner
/// listing's cursor, another filter's, garbage) is [`StoreError::InvalidCursor`].
pub(crate) fn decode_keyed(key: u64, cursor: &str) -> Result<(Millis, TaskId), StoreError> {
    let rest = cursor
        .strip_prefix(KEYED_PREFIX)
        .ok_or(StoreError::InvalidCursor)?;
    let (digest, rest) = rest.split_once('.').ok_or(StoreError::InvalidCursor)?;
    if digest != format!("{key:016x}") {
        return Err(StoreError::InvalidCursor);
    }
    position(rest)
}

/// `CREATED_AT_HEX.ID`.
fn position(rest: &str) -> Result<(Millis, TaskId), StoreError> {
    let (at, id) = rest.split_once('.').ok_or(StoreError::InvalidCursor)?;
    let at = i64::from_str_radix(at, 16).map_err(|_| StoreError::InvalidCursor)?;
    let valid_id = id.len() == 32
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if !valid_id {
        return Err(StoreError::InvalidCursor);
    }
    Ok((at, TaskId::from_wire(id)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_rejects_garbage() {
        let id = TaskId::random().expect("rng");
        let c = encode(1_700_000_000_123, &id);
        assert_eq!(decode(&c).expect("valid"), (1_700_000_000_123, id));
        for bad in [
            "",
            "c1.",
            "c1.zz.0123",
            "x1.10.00000000000000000000000000000000",
            "c1.10.ABCDEF",
            "c1.10.g0000000000000000000000000000000",
        ] {
            assert!(
                matches!(decode(bad), Err(StoreError::InvalidCursor)),
                "{bad}"
            );
        }
    }
}
