//! The task list's filter, one parameter at a time: what `GET /console/api/tasks` reads
//! from its query string and `POST /console/api/tasks/cancel` from its body's `filter`
//! (`bulk.rs`), so that both name, check and refuse the same parameters alike.
//!
//! | parameter | filter |
//! |---|---|
//! | `status` | a status by its wire name |
//! | `tool` | the tool's name, exactly |
//! | `owner` | the owner, exactly |
//! | `node` | the lease holder (the node running the task), exactly |
//! | `createdFrom`, `createdBefore` | milliseconds since the Unix epoch (from inclusive, before exclusive) |
//! | `text` | in the status message, ASCII case ignored ([`OperatorFilter::text`]), 1 to [`MAX_TEXT_CHARS`] characters, no control characters |

use mcp_tasks::{OperatorFilter, Owner};

use super::api;
use super::error::ApiError;

/// The longest `text`, in characters.
pub(super) const MAX_TEXT_CHARS: usize = 200;

/// Sets the filter parameter `name` to `value` in `filter`: `Ok(true)`, or `Ok(false)`
/// when `name` is no filter parameter (the caller names it unknown, or reads it
/// itself); a bad value is a 400 naming the parameter. (An empty value means no value:
/// the caller skips it.)
pub(super) fn apply(
    filter: &mut OperatorFilter,
    name: &str,
    value: String,
) -> Result<bool, ApiError> {
    match name {
        "status" => filter.status = Some(api::status(&value)?),
        "tool" => filter.tool = Some(value),
        "owner" => filter.owner = Some(Owner::new(value)),
        "node" => filter.lease_holder = Some(value),
        "createdFrom" => filter.created_from = Some(millis(name, &value)?),
        "createdBefore" => filter.created_before = Some(millis(name, &value)?),
        "text" => filter.text = Some(text(value)?),
        _ => return Ok(false),
    }
    Ok(true)
}

fn millis(name: &str, value: &str) -> Result<i64, ApiError> {
    value.parse::<i64>().map_err(|_| {
        ApiError::BadRequest(format!("{name} must be milliseconds since the Unix epoch"))
    })
}

/// `value` as the text searched for: 1 to [`MAX_TEXT_CHARS`] characters, none of them a
/// control character.
fn text(value: String) -> Result<String, ApiError> {
    let chars = value.chars().count();
    if !(1..=MAX_TEXT_CHARS).contains(&chars) || value.chars().any(char::is_control) {
        return Err(ApiError::BadRequest(format!(
            "text must be 1 to {MAX_TEXT_CHARS} characters, without control characters"
        )));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(name: &str, value: &str) -> Result<(bool, OperatorFilter), ApiError> {
        let mut filter = OperatorFilter::default();
        let known = apply(&mut filter, name, value.to_owned())?;
        Ok((known, filter))
    }

    #[test]
    fn text_is_bounded_and_printable() {
        let (known, filter) = set("text", "50% of <b>x</b>").expect("valid");
        assert!(known);
        assert_eq!(filter.text.as_deref(), Some("50% of <b>x</b>"));
        let longest = "é".repeat(MAX_TEXT_CHARS);
        assert!(set("text", &longest).is_ok(), "200 characters, 400 bytes");
        for bad in ["", "a\nb", "tab\there", &"x".repeat(MAX_TEXT_CHARS + 1)] {
            assert!(
                matches!(set("text", bad), Err(ApiError::BadRequest(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn every_filter_parameter_is_known() {
        for (name, value) in [
            ("status", "working"),
            ("tool", "t"),
            ("owner", "o"),
            ("node", "n"),
            ("createdFrom", "1"),
            ("createdBefore", "2"),
            ("text", "x"),
        ] {
            assert!(set(name, value).expect(name).0, "{name}");
        }
        assert!(!set("cursor", "c").expect("not a filter").0);
        assert!(matches!(
            set("createdFrom", "yesterday"),
            Err(ApiError::BadRequest(_))
        ));
    }
}
