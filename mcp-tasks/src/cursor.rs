//! The opaque keyset cursors: `list`'s, the `(created_at, id)` of the last task returned,
//! and `operator_list`'s, that position and the digest of the listing's filter.

use crate::error::StoreError;
use crate::operator::OperatorFilter;
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

const OPERATOR_PREFIX: &str = "o1.";

/// Encodes the position before `(created_at, id)` in a newest-first operator listing
/// with `filter`.
pub fn encode_operator(filter: &OperatorFilter, created_at: Millis, id: &TaskId) -> String {
    format!(
        "{OPERATOR_PREFIX}{:016x}.{created_at:x}.{}",
        filter.fingerprint(),
        id.as_str()
    )
}

/// Decodes a cursor made by [`encode_operator`] with the same `filter`; anything else
/// (an owner listing's cursor, another filter's, garbage) is [`StoreError::InvalidCursor`].
pub fn decode_operator(
    filter: &OperatorFilter,
    cursor: &str,
) -> Result<(Millis, TaskId), StoreError> {
    let rest = cursor
        .strip_prefix(OPERATOR_PREFIX)
        .ok_or(StoreError::InvalidCursor)?;
    let (digest, rest) = rest.split_once('.').ok_or(StoreError::InvalidCursor)?;
    if digest != format!("{:016x}", filter.fingerprint()) {
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

    #[test]
    fn operator_cursor_is_bound_to_its_filter() {
        let id = TaskId::random().expect("rng");
        let all = OperatorFilter::default();
        let mine = OperatorFilter {
            tool: Some("slow".into()),
            ..OperatorFilter::default()
        };
        let c = encode_operator(&mine, 42, &id);
        assert_eq!(decode_operator(&mine, &c).expect("valid"), (42, id.clone()));
        for (filter, bad) in [
            (&all, c.clone()),
            (&mine, encode(42, &id)),
            (&mine, c.replacen("o1.", "o2.", 1)),
            (&mine, format!("{c}0")),
        ] {
            assert!(
                matches!(
                    decode_operator(filter, &bad),
                    Err(StoreError::InvalidCursor)
                ),
                "{bad}"
            );
        }
        assert!(decode(&c).is_err());
    }
}
