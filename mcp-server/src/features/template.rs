//! RFC 6570 level-1 URI templates (`file:///logs/{day}.txt`): parsed once when a
//! resource template is defined, matched against the URI of each `resources/read`.
//!
//! **Invariant.** Matching never panics on a peer's URI: a URI that does not fit is
//! `None`, a variable's value is percent-decoded and never empty.

use std::collections::BTreeMap;

/// One piece of a template: text that must appear as it is, or a variable.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Variable(String),
}

/// A parsed level-1 URI template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UriTemplate {
    parts: Vec<Part>,
}

impl UriTemplate {
    /// Parses `template`; the error says what is wrong with it.
    pub(crate) fn parse(template: &str) -> Result<UriTemplate, String> {
        let mut parts = Vec::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            let (literal, after) = rest.split_at(open);
            if literal.contains('}') {
                return Err("a '}' without its '{'".to_owned());
            }
            if !literal.is_empty() {
                parts.push(Part::Literal(literal.to_owned()));
            } else if matches!(parts.last(), Some(Part::Variable(_))) {
                return Err("two variables side by side cannot be told apart".to_owned());
            }
            let close = after
                .find('}')
                .ok_or_else(|| "a '{' without its '}'".to_owned())?;
            let name = &after[1..close];
            let valid = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
            if !valid {
                return Err(format!(
                    "{{{name}}} is not a level-1 variable (letters, digits, '_' and '.' only)"
                ));
            }
            if parts.contains(&Part::Variable(name.to_owned())) {
                return Err(format!("variable {{{name}}} appears twice"));
            }
            parts.push(Part::Variable(name.to_owned()));
            rest = &after[close + 1..];
        }
        if rest.contains('}') {
            return Err("a '}' without its '{'".to_owned());
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_owned()));
        }
        Ok(UriTemplate { parts })
    }

    /// The variables' names, in the order they appear.
    pub(crate) fn variables(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Variable(name) => Some(name.as_str()),
            Part::Literal(_) => None,
        })
    }

    /// The variables' values when `uri` is an expansion of this template. A value runs
    /// to the first occurrence of the literal after it, never holds `/`, `?` or `#`, is
    /// never empty, and is percent-decoded.
    pub(crate) fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        let mut values = BTreeMap::new();
        let mut rest = uri;
        let mut parts = self.parts.iter().peekable();
        while let Some(part) = parts.next() {
            match part {
                Part::Literal(text) => rest = rest.strip_prefix(text.as_str())?,
                Part::Variable(name) => {
                    let end = match parts.peek() {
                        Some(Part::Literal(next)) => rest.find(next.as_str())?,
                        _ => rest.len(),
                    };
                    let raw = &rest[..end];
                    if raw.is_empty() || raw.contains(['/', '?', '#']) {
                        return None;
                    }
                    values.insert(name.clone(), percent_decode(raw)?);
                    rest = &rest[end..];
                }
            }
        }
        rest.is_empty().then_some(values)
    }
}

/// `%XX` sequences decoded; `None` when one is malformed or the result is not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Option<BTreeMap<String, String>> {
        Some(
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        )
    }

    #[test]
    fn level_one_templates_match_and_decode() {
        let t = UriTemplate::parse("file:///logs/{day}/{name}.txt").expect("valid");
        assert_eq!(t.variables().collect::<Vec<_>>(), ["day", "name"]);
        assert_eq!(
            t.matches("file:///logs/monday/app.txt"),
            vars(&[("day", "monday"), ("name", "app")])
        );
        assert_eq!(
            t.matches("file:///logs/mon%20day/a%2Fb.txt"),
            vars(&[("day", "mon day"), ("name", "a/b")])
        );
        assert_eq!(t.matches("file:///logs//app.txt"), None, "empty value");
        assert_eq!(
            t.matches("file:///logs/a/b/c.txt"),
            None,
            "a '/' in a value"
        );
        assert_eq!(t.matches("file:///logs/a/b.txt.gz"), None, "text after");
        assert_eq!(t.matches("file:///logs/a/%zz.txt"), None, "bad escape");
        assert_eq!(t.matches("file:///logs/a/%ff.txt"), None, "not UTF-8");
        let tail = UriTemplate::parse("users://{id}").expect("valid");
        assert_eq!(tail.matches("users://42"), vars(&[("id", "42")]));
        assert_eq!(tail.matches("users://"), None);
        let fixed = UriTemplate::parse("config://app").expect("valid");
        assert_eq!(fixed.matches("config://app"), vars(&[]));
        assert_eq!(fixed.matches("config://apps"), None);
    }

    #[test]
    fn malformed_templates_are_refused() {
        for bad in [
            "a/{",
            "a/}",
            "a/{}",
            "a/{x}{y}",
            "a/{x}/{x}",
            "a/{+x}",
            "a/{x,y}",
            "}{x}",
        ] {
            assert!(UriTemplate::parse(bad).is_err(), "{bad}");
        }
    }
}
