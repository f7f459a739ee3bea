//! The console's web page: `GET /console` (the HTML), `/console/assets/console.js` and
//! `/console/assets/console.css`, embedded in the binary from `assets/`.
//!
//! Static files only: the access check and the security headers (a CSP allowing scripts
//! and styles from this origin only) are layered around these routes by the console's
//! `mod.rs`. The page is plain script with no build step and nothing fetched from
//! elsewhere; it writes everything users control with `textContent`, never as HTML, and
//! has no inline script or style (the CSP would block them).

use axum::Router;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// The page.
const INDEX_HTML: &str = include_str!("assets/index.html");
/// Its script.
const CONSOLE_JS: &str = include_str!("assets/console.js");
/// Its style sheet.
const CONSOLE_CSS: &str = include_str!("assets/console.css");

/// The page's paths, each with its content type and body.
const FILES: [(&str, &str, &str); 3] = [
    ("/console", "text/html; charset=utf-8", INDEX_HTML),
    (
        "/console/assets/console.js",
        "text/javascript; charset=utf-8",
        CONSOLE_JS,
    ),
    (
        "/console/assets/console.css",
        "text/css; charset=utf-8",
        CONSOLE_CSS,
    ),
];

/// The page's routes (static files; the caller applies access control and headers).
pub(super) fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    FILES
        .iter()
        .fold(Router::new(), |router, &(path, content_type, body)| {
            router.route(path, get(move || async move { file(content_type, body) }))
        })
}

/// One embedded file as a response.
fn file(content_type: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type)], body).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_is_served_with_its_content_type() {
        for (path, content_type, body) in FILES {
            let response = file(content_type, body);
            assert_eq!(
                response.headers()[header::CONTENT_TYPE],
                content_type,
                "{path}"
            );
            assert!(!body.is_empty(), "{path}");
        }
    }

    #[test]
    fn the_page_loads_only_its_own_files() {
        // Every script and style sheet the page names is one of the files served here
        // (the icon is an empty `data:` URL, so that no request is made for one).
        for (attribute, needle) in [("src=\"", "<script"), ("href=\"", "<link")] {
            for tag in INDEX_HTML.split(needle).skip(1) {
                let tag = &tag[..tag.find('>').unwrap_or(tag.len())];
                let start = tag.find(attribute).expect("a URL in the tag") + attribute.len();
                let url = &tag[start..start + tag[start..].find('"').expect("closing quote")];
                assert!(
                    url == "data:," || FILES.iter().any(|(path, _, _)| *path == url),
                    "{url} is not served here"
                );
            }
        }
        for (path, _, body) in FILES {
            // The SVG namespace is a name, not a place fetched.
            let body = body.replace("'http://www.w3.org/2000/svg'", "");
            assert!(!body.contains("http://"), "{path} names another origin");
            assert!(!body.contains("https://"), "{path} names another origin");
        }
    }

    #[test]
    fn nothing_inline_for_the_csp_to_block() {
        // Every <script> has a src and no body; no <style> element, no style attribute,
        // no inline event handler.
        for tag in INDEX_HTML.split("<script").skip(1) {
            let open = &tag[..tag.find('>').expect("tag end")];
            assert!(open.contains("src="), "inline script: {open}");
            assert!(
                tag[open.len() + 1..].starts_with("</script>"),
                "script body"
            );
        }
        assert!(!INDEX_HTML.contains("<style"), "inline style sheet");
        assert!(!INDEX_HTML.contains("style="), "style attribute");
        assert!(
            !INDEX_HTML.to_ascii_lowercase().contains(" on"),
            "event handler attribute"
        );
        for (what, needle) in [
            ("HTML parsing", "innerHTML"),
            ("HTML parsing", "outerHTML"),
            ("HTML parsing", "insertAdjacentHTML"),
            ("HTML parsing", "document.write"),
            ("code from text", "eval("),
            ("code from text", "new Function"),
            ("inline style", "setAttribute('style'"),
        ] {
            assert!(
                !CONSOLE_JS.contains(needle),
                "console.js uses {what}: {needle}"
            );
        }
    }

    #[test]
    fn the_test_hooks_are_there() {
        // The browser test and operators' scripts find rows and cancel controls by these.
        assert!(INDEX_HTML.contains("data-action=\"cancel\""));
        assert!(CONSOLE_JS.contains("tr.dataset.taskId = task.id"));
        assert!(CONSOLE_JS.contains("tr.dataset.status = task.status"));
        assert!(CONSOLE_JS.contains("cancel.dataset.action = 'cancel'"));
        assert!(CONSOLE_JS.contains("'X-Console-Csrf': '1'"));
    }
}
