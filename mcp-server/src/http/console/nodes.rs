//! The nodes of the store (contract rule 24, the node registry) for the console:
//! `GET /console/api/nodes` lists every API and worker node with its state and the tasks
//! it holds (the leases naming it, from the operator's view); `POST
//! /console/api/nodes/{id}/drain` asks a worker node to drain (it claims no new task,
//! finishes those it holds, then says `drained`). A drain is audited at INFO with the
//! operator as actor, refused or not; the list at DEBUG.

use std::sync::Arc;

use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use mcp_tasks::{NodeRecord, OperatorFilter, StoreError, TaskStore};
use serde::Serialize;

use super::Console;
use super::access::Operator;
use super::api::path_param;
use super::error::{ApiError, json_error};

/// The lease ids listed per node, at most (its `tasksHeld` counts them all).
pub(super) const MAX_LEASES_SHOWN: usize = 100;

/// The characters of a node id the audit trail shows, at most.
const MAX_ID_SHOWN: usize = 128;

/// The leases read per page when counting past [`MAX_LEASES_SHOWN`].
const COUNT_PAGE: usize = 500;

/// The most leases counted per node (a count there says "at least").
const MAX_COUNTED: usize = 100_000;

/// The routes, at their full paths.
pub(super) fn routes() -> Router<Arc<Console>> {
    Router::new()
        .route("/console/api/nodes", get(list))
        .route("/console/api/nodes/{id}/drain", post(drain))
}

/// A node as the API shows it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct NodeView {
    id: String,
    role: String,
    started_at: i64,
    heartbeat_at: i64,
    heartbeat_interval_ms: u64,
    state: &'static str,
    drain_requested: bool,
    tasks_held: usize,
    /// The ids of the tasks held, at most [`MAX_LEASES_SHOWN`], newest first.
    leases: Vec<String>,
}

impl NodeView {
    fn of(node: &NodeRecord, held: Held) -> NodeView {
        NodeView {
            id: node.id.clone(),
            role: node.role.clone(),
            started_at: node.started_at,
            heartbeat_at: node.heartbeat_at,
            heartbeat_interval_ms: node.interval_ms,
            state: node.state.as_str(),
            drain_requested: node.drain_requested,
            tasks_held: held.count,
            leases: held.first,
        }
    }
}

/// The tasks whose lease names a node.
#[derive(Debug, Default)]
struct Held {
    count: usize,
    first: Vec<String>,
}

/// The leases naming `id`: the first [`MAX_LEASES_SHOWN`] ids, and their number (read
/// in pages through the lease holder's index, at most [`MAX_COUNTED`]).
async fn held(store: &dyn TaskStore, id: &str) -> Result<Held, StoreError> {
    let filter = OperatorFilter {
        lease_holder: Some(id.to_owned()),
        ..OperatorFilter::default()
    };
    let first = store.operator_list(&filter, None, MAX_LEASES_SHOWN).await?;
    let mut held = Held {
        count: first.tasks.len(),
        first: first
            .tasks
            .iter()
            .map(|t| t.id.as_str().to_owned())
            .collect(),
    };
    let mut cursor = first.next_cursor;
    while let Some(after) = cursor.take() {
        if held.count >= MAX_COUNTED {
            break;
        }
        let page = store
            .operator_list(&filter, Some(&after), COUNT_PAGE)
            .await?;
        held.count += page.tasks.len();
        cursor = page.next_cursor;
    }
    Ok(held)
}

/// `GET /console/api/nodes`: every node of the registry, by id.
async fn list(
    State(console): State<Arc<Console>>,
    Extension(Operator(operator)): Extension<Operator>,
) -> Result<Json<Vec<NodeView>>, ApiError> {
    let nodes = console.store.list_nodes().await.map_err(node_error)?;
    let mut views = Vec::with_capacity(nodes.len());
    for node in &nodes {
        views.push(NodeView::of(node, held(&*console.store, &node.id).await?));
    }
    tracing::debug!(target: crate::audit::TARGET, actor = %operator, op = "console: nodes", outcome = "ok", nodes = views.len());
    Ok(Json(views))
}

/// `POST /console/api/nodes/{id}/drain`: asks the worker node `id` to drain; the node as
/// it stands then. 404 for a node not in the registry, 409 for an API node (it runs no
/// task).
async fn drain(
    State(console): State<Arc<Console>>,
    Extension(Operator(operator)): Extension<Operator>,
    Path(params): Path<Vec<(String, String)>>,
) -> Response {
    const OP: &str = "console: drain";
    let id = path_param(params).unwrap_or_default();
    let outcome = drain_node(&console, &id).await;
    // The id is the caller's text: quoted and escaped (`?`), and cut, so that it cannot
    // forge a line of the trail.
    let shown: String = id.chars().take(MAX_ID_SHOWN).collect();
    match &outcome {
        Ok(view) => {
            tracing::info!(target: crate::audit::TARGET, actor = %operator, op = OP, node_id = ?shown, outcome = "ok", state = view.state)
        }
        Err(refusal) => {
            let reason = refusal.to_string();
            tracing::info!(target: crate::audit::TARGET, actor = %operator, op = OP, node_id = ?shown, outcome = "refused", reason = ?reason)
        }
    }
    match outcome {
        Ok(view) => Json(view).into_response(),
        Err(Refusal::NotAWorker(message)) => json_error(StatusCode::CONFLICT, &message),
        Err(Refusal::Store(e)) => node_error(e).into_response(),
    }
}

/// Why a drain was refused.
#[derive(Debug)]
enum Refusal {
    /// 409: an API node runs no task.
    NotAWorker(String),
    /// The store's answer: 404 for a node not in the registry, else as any store error.
    Store(StoreError),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::NotAWorker(message) => f.write_str(message),
            Refusal::Store(StoreError::NotFound) => f.write_str("node not found"),
            Refusal::Store(e) => write!(f, "{e}"),
        }
    }
}

/// The drain itself: the node's entry, its role checked, its flag raised, then the node
/// as it stands.
async fn drain_node(console: &Console, id: &str) -> Result<NodeView, Refusal> {
    let nodes = console.store.list_nodes().await.map_err(Refusal::Store)?;
    let Some(node) = nodes.iter().find(|n| n.id == id) else {
        return Err(Refusal::Store(StoreError::NotFound));
    };
    if node.role == "api" {
        return Err(Refusal::NotAWorker(format!(
            "node {id} is not a worker: an API node runs no task, so there is nothing to drain"
        )));
    }
    let node = console
        .store
        .request_drain(id)
        .await
        .map_err(Refusal::Store)?;
    let held = held(&*console.store, id).await.map_err(Refusal::Store)?;
    Ok(NodeView::of(&node, held))
}

/// A registry read's error: as any store error, but "node" in a 404.
fn node_error(e: StoreError) -> ApiError {
    match e {
        StoreError::NotFound => ApiError::NotFound("node not found"),
        other => ApiError::from(other),
    }
}
