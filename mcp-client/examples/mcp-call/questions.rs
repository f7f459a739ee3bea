//! The questions of an elicitation asked at the terminal ([`Terminal`]): one field at a
//! time, each named by its schema's `title` (else its key).
//!
//! Invariant: a question is asked at most [`ASKS`] times (then a yes/no is taken as no,
//! and a number gives up on the form); the form is answered `cancel` at end of input or
//! on such a give-up; a URL elicitation is declined.

use std::io::{BufRead, Write};
use std::sync::atomic::Ordering;

use async_trait::async_trait;
use mcp_tasks_client::ClientHandler;
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use mcp_tasks_protocol::types::{
    ElicitAction, ElicitResult, ElicitValue, PrimitiveSchemaDefinition,
};
use mcp_tasks_protocol::v2026::ElicitRequestParams;

use super::console::{PROMPTING, clear_line, print_held};

/// Asks elicitation fields at the terminal.
pub(crate) struct Terminal;

/// How many times a question is asked before mcp-call gives up on reading its answer.
const ASKS: usize = 3;

/// Asks `question` on stderr and reads one line of stdin; `None` at end of input (or
/// when stdin cannot be read).
fn prompt(question: &str) -> Option<String> {
    let mut err = std::io::stderr();
    let _ = write!(err, "{}{question} ", clear_line());
    let _ = err.flush();
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim_end_matches(['\r', '\n']).to_owned()),
    }
}

/// A yes/no answer, if it is one.
fn yes_no(answer: &str) -> Option<bool> {
    match answer.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" | "true" => Some(true),
        "n" | "no" | "false" => Some(false),
        _ => None,
    }
}

/// A number answer, if it is one: an integer when it reads as one.
fn number(answer: &str) -> Option<ElicitValue> {
    let answer = answer.trim();
    if let Ok(n) = answer.parse::<i64>() {
        return Some(ElicitValue::Integer(n));
    }
    answer
        .parse::<f64>()
        .ok()
        .filter(|n| n.is_finite())
        .map(ElicitValue::Number)
}

/// Why [`ask`] has no value.
#[derive(Debug, PartialEq)]
enum NoAnswer {
    /// The input ended.
    Eof,
    /// [`ASKS`] answers, none readable.
    Unreadable,
}

/// Asks with `read` until `parse` reads the answer, at most [`ASKS`] times.
fn ask<T>(
    mut read: impl FnMut() -> Option<String>,
    parse: impl Fn(&str) -> Option<T>,
    again: &str,
) -> Result<T, NoAnswer> {
    for _ in 0..ASKS {
        let answer = read().ok_or(NoAnswer::Eof)?;
        if let Some(value) = parse(&answer) {
            return Ok(value);
        }
        eprintln!("  {again}");
    }
    Err(NoAnswer::Unreadable)
}

/// Asks a yes/no question: after [`ASKS`] answers it cannot read, no; `None` at end of
/// input.
fn ask_yes_no(read: impl FnMut() -> Option<String>) -> Option<bool> {
    match ask(read, yes_no, "please answer y or n") {
        Ok(yes) => Some(yes),
        Err(NoAnswer::Unreadable) => {
            eprintln!("  no answer understood: taken as no");
            Some(false)
        }
        Err(NoAnswer::Eof) => None,
    }
}

/// What a form field is called at the terminal: its schema's `title`, else its key.
fn field_label<'a>(key: &'a str, schema: &'a PrimitiveSchemaDefinition) -> &'a str {
    let title = match schema {
        PrimitiveSchemaDefinition::String(s) => &s.title,
        PrimitiveSchemaDefinition::Number(s) => &s.title,
        PrimitiveSchemaDefinition::Boolean(s) => &s.title,
        PrimitiveSchemaDefinition::UntitledSingleSelect(s) => &s.title,
        PrimitiveSchemaDefinition::TitledSingleSelect(s) => &s.title,
        PrimitiveSchemaDefinition::UntitledMultiSelect(s) => &s.title,
        PrimitiveSchemaDefinition::TitledMultiSelect(s) => &s.title,
        PrimitiveSchemaDefinition::LegacyTitled(s) => &s.title,
    };
    title
        .as_deref()
        .filter(|t| !t.trim().is_empty())
        .unwrap_or(key)
}

#[async_trait]
impl ClientHandler for Terminal {
    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        let ElicitRequestParams::Form(form) = params else {
            eprintln!(
                "{}The server wants you to open a URL; this CLI declines.",
                clear_line()
            );
            return Ok(ElicitResult::new(ElicitAction::Decline));
        };
        PROMPTING.store(true, Ordering::SeqCst);
        let answered = tokio::task::spawn_blocking(move || {
            eprintln!("{}{}", clear_line(), form.message);
            let mut content = indexmap::IndexMap::new();
            for (name, schema) in &form.requested_schema.properties {
                let label = field_label(name, schema);
                let value = match schema {
                    PrimitiveSchemaDefinition::Boolean(_) => {
                        let question = format!("  {label} [y/n]:");
                        ElicitValue::Boolean(ask_yes_no(|| prompt(&question))?)
                    }
                    PrimitiveSchemaDefinition::Number(_) => {
                        let question = format!("  {label} (number):");
                        ask(|| prompt(&question), number, "please answer a number").ok()?
                    }
                    _ => ElicitValue::String(prompt(&format!("  {label}:"))?),
                };
                content.insert(name.clone(), value);
            }
            Some(ElicitResult::accept(content))
        })
        .await;
        PROMPTING.store(false, Ordering::SeqCst);
        print_held();
        answered
            .ok()
            .flatten()
            .map_or_else(|| Ok(ElicitResult::new(ElicitAction::Cancel)), Ok)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Answers from a list, then end of input; counts the questions asked.
    fn answers<'a>(
        list: &'a [&'a str],
        asked: &'a mut usize,
    ) -> impl FnMut() -> Option<String> + 'a {
        let mut it = list.iter();
        move || {
            *asked += 1;
            it.next().map(|s| (*s).to_owned())
        }
    }

    #[test]
    fn yes_no_asks_again_on_anything_else() {
        let mut asked = 0;
        assert_eq!(
            ask_yes_no(answers(&["maybe", " YES "], &mut asked)),
            Some(true)
        );
        assert_eq!(asked, 2);
        let mut asked = 0;
        assert_eq!(ask_yes_no(answers(&["", "n"], &mut asked)), Some(false));
        assert_eq!(asked, 2);
    }

    #[test]
    fn yes_no_is_bounded() {
        let mut asked = 0;
        let list = ["a", "b", "c", "y"];
        assert_eq!(
            ask_yes_no(answers(&list, &mut asked)),
            Some(false),
            "taken as no"
        );
        assert_eq!(asked, ASKS);
        let mut asked = 0;
        assert_eq!(
            ask_yes_no(answers(&["what"], &mut asked)),
            None,
            "end of input"
        );
        assert_eq!(asked, 2);
    }

    #[test]
    fn a_field_is_named_by_its_title_else_its_key() {
        let field = |schema: serde_json::Value| -> PrimitiveSchemaDefinition {
            serde_json::from_value(schema).expect("a field schema")
        };
        let titled = field(serde_json::json!({"type": "boolean", "title": "Delete it?"}));
        assert_eq!(field_label("confirm", &titled), "Delete it?");
        let untitled = field(serde_json::json!({"type": "string"}));
        assert_eq!(field_label("name", &untitled), "name");
        let blank = field(serde_json::json!({"type": "number", "title": " "}));
        assert_eq!(field_label("age", &blank), "age");
        let select =
            field(serde_json::json!({"type": "string", "title": "Colour", "enum": ["red"]}));
        assert_eq!(field_label("colour", &select), "Colour");
    }

    #[test]
    fn numbers_are_asked_again_then_declined() {
        let mut asked = 0;
        let got = ask(answers(&["ten", "10"], &mut asked), number, "again");
        assert_eq!(got.map_err(|_| ()), Ok(ElicitValue::Integer(10)));
        let mut asked = 0;
        let got = ask(answers(&["x", "NaN", "inf"], &mut asked), number, "again");
        assert_eq!(got.err(), Some(NoAnswer::Unreadable));
        assert_eq!(number("2.5"), Some(ElicitValue::Number(2.5)));
    }
}
