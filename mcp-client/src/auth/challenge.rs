//! The `WWW-Authenticate: Bearer ...` challenge of a 401 or 403 (RFC 6750 §3, RFC 9728
//! §5.1): which metadata to read, which scope to ask for, why the token was refused.

/// What a Bearer challenge says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Challenge {
    /// `resource_metadata`: where the Protected Resource Metadata is (RFC 9728).
    pub resource_metadata: Option<String>,
    /// `scope`: the scope the request needs.
    pub scope: Option<String>,
    /// `error`: `invalid_token`, `insufficient_scope`...
    pub error: Option<String>,
    /// `error_description`.
    pub error_description: Option<String>,
}

impl Challenge {
    /// Reads the Bearer and DPoP (RFC 9449 §7.1) challenges among the
    /// `WWW-Authenticate` header values, the first value of each parameter standing;
    /// other schemes are skipped. A header without either gives the default.
    pub fn parse<'a>(values: impl IntoIterator<Item = &'a str>) -> Challenge {
        let mut out = Challenge::default();
        for value in values {
            for (scheme, params) in challenges(value) {
                if !scheme.eq_ignore_ascii_case("bearer") && !scheme.eq_ignore_ascii_case("dpop") {
                    continue;
                }
                for (name, value) in params {
                    let slot = match name.to_ascii_lowercase().as_str() {
                        "resource_metadata" => &mut out.resource_metadata,
                        "scope" => &mut out.scope,
                        "error" => &mut out.error,
                        "error_description" => &mut out.error_description,
                        _ => continue,
                    };
                    slot.get_or_insert(value);
                }
            }
        }
        out
    }

    /// Whether the server refused for want of scope (a 403 to step up from).
    pub fn is_insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

/// Splits one header value into `(scheme, params)` challenges. Parameters are
/// `name=token` or `name="quoted string"` separated by commas; a new scheme starts at a
/// token not followed by `=`.
fn challenges(value: &str) -> Vec<(String, Vec<(String, String)>)> {
    let mut out: Vec<(String, Vec<(String, String)>)> = Vec::new();
    let mut rest = value.trim();
    while !rest.is_empty() {
        rest = rest.trim_start_matches([',', ' ', '\t']);
        let end = rest
            .find(|c: char| c == '=' || c == ',' || c.is_whitespace())
            .unwrap_or(rest.len());
        let token = &rest[..end];
        let after = rest[end..].trim_start_matches([' ', '\t']);
        if token.is_empty() {
            break;
        }
        if let Some(after_eq) = after.strip_prefix('=').filter(|_| !out.is_empty()) {
            let after_eq = after_eq.trim_start();
            let (value, remaining) = if let Some(quoted) = after_eq.strip_prefix('"') {
                let mut value = String::new();
                let mut chars = quoted.char_indices();
                let mut end = quoted.len();
                while let Some((i, c)) = chars.next() {
                    match c {
                        '\\' => {
                            if let Some((_, next)) = chars.next() {
                                value.push(next);
                            }
                        }
                        '"' => {
                            end = i + 1;
                            break;
                        }
                        c => value.push(c),
                    }
                }
                (value, &quoted[end.min(quoted.len())..])
            } else {
                let end = after_eq.find(',').unwrap_or(after_eq.len());
                (after_eq[..end].trim().to_owned(), &after_eq[end..])
            };
            if let Some((_, params)) = out.last_mut() {
                params.push((token.to_owned(), value));
            }
            rest = remaining;
        } else {
            // A scheme name (token68 credentials after it are not used by Bearer).
            out.push((token.to_owned(), Vec::new()));
            rest = after;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::Challenge;

    #[test]
    fn reads_bearer_parameters() {
        let c = Challenge::parse([
            r#"Bearer scope="mcp:basic mcp:write", resource_metadata="http://h/.well-known/oauth-protected-resource/mcp", error="insufficient_scope", error_description="Scope \"upgrade\" needed""#,
        ]);
        assert_eq!(c.scope.as_deref(), Some("mcp:basic mcp:write"));
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("http://h/.well-known/oauth-protected-resource/mcp")
        );
        assert!(c.is_insufficient_scope());
        assert_eq!(
            c.error_description.as_deref(),
            Some("Scope \"upgrade\" needed")
        );
    }

    #[test]
    fn other_schemes_and_bare_tokens() {
        let c = Challenge::parse([r#"Basic realm="x", Bearer error=invalid_token, scope=read"#]);
        assert_eq!(c.error.as_deref(), Some("invalid_token"));
        assert_eq!(c.scope.as_deref(), Some("read"));
        assert_eq!(Challenge::parse(["Bearer"]), Challenge::default());
        assert_eq!(
            Challenge::parse([r#"Basic realm="x""#]),
            Challenge::default()
        );
        // Unterminated quotes and junk do not panic.
        let _ = Challenge::parse([r#"Bearer scope="oops"#, "=,=,\"", "Bearer ,,, =x"]);
    }
}
