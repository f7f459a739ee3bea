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
/// The detail view's timeline (`timeline.js`).
const TIMELINE_JS: &str = include_str!("assets/timeline.js");
/// The detail view's re-run button and links (`rerun.js`).
const RERUN_JS: &str = include_str!("assets/rerun.js");
/// The Nodes section (`nodes.js`).
const NODES_JS: &str = include_str!("assets/nodes.js");
/// The list's filter in the page's URL, bulk cancel, and what a viewer is not offered
/// (`filters.js`).
const FILTERS_JS: &str = include_str!("assets/filters.js");

/// The page's paths, each with its content type and body.
const FILES: [(&str, &str, &str); 7] = [
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
    (
        "/console/assets/timeline.js",
        "text/javascript; charset=utf-8",
        TIMELINE_JS,
    ),
    (
        "/console/assets/rerun.js",
        "text/javascript; charset=utf-8",
        RERUN_JS,
    ),
    (
        "/console/assets/nodes.js",
        "text/javascript; charset=utf-8",
        NODES_JS,
    ),
    (
        "/console/assets/filters.js",
        "text/javascript; charset=utf-8",
        FILTERS_JS,
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

    /// A feature script writes text only: no HTML parsing, no code from text.
    fn assert_text_only(name: &str, script: &str) {
        for needle in [
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "eval(",
            "new Function",
        ] {
            assert!(!script.contains(needle), "{name} uses {needle}");
        }
    }

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
    fn the_rerun_script_writes_text_only() {
        assert_text_only("rerun.js", RERUN_JS);
        // Its hooks in console.js, and where it draws in the page.
        assert!(CONSOLE_JS.contains("document.addEventListener('console:open'"));
        assert!(INDEX_HTML.contains("id=\"detail-rerun\""));
        assert!(INDEX_HTML.contains("src=\"/console/assets/rerun.js\""));
    }

    #[test]
    fn the_filters_script_writes_text_only() {
        assert_text_only("filters.js", FILTERS_JS);
        // It runs before console.js (it puts the URL's filter into the form first), and
        // its hooks in console.js and in the page.
        let (filters, console) = (
            INDEX_HTML.find("src=\"/console/assets/filters.js\""),
            INDEX_HTML.find("src=\"/console/assets/console.js\""),
        );
        assert!(filters.is_some() && filters < console, "filters.js first");
        assert!(CONSOLE_JS.contains("new CustomEvent('console:filter'"));
        for id in [
            "filter-text",
            "filter-from",
            "filter-before",
            "bulk-cancel",
            "bulk-dialog",
        ] {
            assert!(INDEX_HTML.contains(&format!("id=\"{id}\"")), "{id}");
        }
    }

    #[test]
    fn the_timeline_writes_text_only() {
        assert_text_only("timeline.js", TIMELINE_JS);
        // Its hooks in console.js, and where it draws in the page.
        assert!(CONSOLE_JS.contains("new CustomEvent('console:detail', { detail: task })"));
        assert!(CONSOLE_JS.contains("new CustomEvent('console:detail-closed')"));
        assert!(INDEX_HTML.contains("id=\"timeline-rows\""));
        assert!(INDEX_HTML.contains("src=\"/console/assets/timeline.js\""));
    }

    #[test]
    fn the_feature_scripts_use_the_helpers_of_console_js() {
        // One copy of the requests (the CSRF header, the errors), the two-click
        // confirmation and the text-only elements: console.js's `window.Console`, there
        // before the scripts that use it as they load (filters.js uses it once the page
        // has loaded).
        assert!(CONSOLE_JS.contains("window.Console = Object.freeze("));
        let at = |name: &str| INDEX_HTML.find(&format!("src=\"/console/assets/{name}\""));
        for (name, script) in [
            ("timeline.js", TIMELINE_JS),
            ("rerun.js", RERUN_JS),
            ("nodes.js", NODES_JS),
            ("filters.js", FILTERS_JS),
        ] {
            assert_text_only(name, script);
            assert!(script.contains("window.Console"), "{name}");
            assert!(!script.contains("fetch("), "{name} fetches on its own");
            assert!(
                !script.contains("X-Console-Csrf"),
                "{name} sets the CSRF header"
            );
            assert!(at(name).is_some(), "{name} in the page");
            if name != "filters.js" {
                assert!(at("console.js") < at(name), "{name} after console.js");
            }
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
