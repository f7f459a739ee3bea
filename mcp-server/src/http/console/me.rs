//! `GET /console/api/me`: who is using the console and in which role,
//! `{"name": "...", "role": "viewer" | "operator"}`, as the access layer found them
//! (`access.rs`). The page reads it to leave out what a viewer may not do (the access
//! layer refuses it anyway).

use std::sync::Arc;

use axum::extract::Extension;
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;

use super::Console;
use super::ConsoleRole;
use super::access::Operator;

/// The route, at its full path.
pub(super) fn routes() -> Router<Arc<Console>> {
    Router::new().route("/console/api/me", get(me))
}

/// The caller, as the page sees them.
#[derive(Debug, Serialize, PartialEq)]
struct Me {
    name: String,
    role: &'static str,
}

/// `GET /console/api/me`.
async fn me(
    Extension(Operator(name)): Extension<Operator>,
    Extension(role): Extension<ConsoleRole>,
) -> Json<Me> {
    Json(Me {
        name,
        role: role.as_str(),
    })
}
