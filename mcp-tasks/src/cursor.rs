//! The opaque keyset cursor of `list`: the `(created_at, id)` of the last task returned.

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
