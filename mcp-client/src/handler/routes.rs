//! [`Routes`]: which handler answers a server->client request (MCP 2025-11-25): the one a
//! task's handle routed for the task the request names, else the client's; with the
//! bound on input rounds per task, and the hold of a request whose task is not known yet
//! ([`Creating`]).
//!
//! Invariant: every request naming a task is counted against that task's bound, from
//! the first; a held request waits no longer than the hold, at most [`HELD_MAX`] at
//! once, and gives its place back even when its future is dropped.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_tasks_protocol::error_codes;
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use mcp_tasks_protocol::meta::RELATED_TASK;
use serde_json::Value;
use tokio::sync::Notify;

use super::ClientHandler;

/// Which handler answers a server->client request (MCP 2025-11-25): the one a task
/// handle registered for the task the request names (`_meta` related-task), else the
/// client's; and the bound on input rounds per task, counted here for every request
/// naming a task, from the first (a server may ask before the caller has a handle).
///
/// A request naming a task no handle routed yet is held while a task-augmented call is
/// in flight (the server may ask before the `CreateTaskResult` naming the task reaches
/// us): woken when a task is routed or such a call ends, at most [`Routes::new`]'s `hold`
/// and [`HELD_MAX`] requests at once. Only a task still unknown after that is answered
/// by the client's handler (logged).
pub(crate) struct Routes {
    default: Arc<dyn ClientHandler>,
    max_rounds: u32,
    tasks: Mutex<RouteTable>,
    /// Called with a task's id when it asks past its bound (cancels it).
    on_exceeded: std::sync::OnceLock<OnExceeded>,
    /// The longest a request naming an unknown task is held.
    hold: Duration,
    /// Woken when a task is routed or a task-augmented call ends.
    changed: Notify,
}

/// What [`Routes`] does with a task past its input bound.
pub(crate) type OnExceeded = Box<dyn Fn(&str) + Send + Sync>;

#[derive(Default)]
struct RouteTable {
    handlers: HashMap<String, Arc<dyn ClientHandler>>,
    limits: HashMap<String, u32>,
    rounds: HashMap<String, u32>,
    exceeded: std::collections::HashSet<String>,
    /// Requests that named a task before its handle routed it and were answered by the
    /// client's handler (the task still unknown after the hold): kept here (the newest
    /// [`UNROUTED_KEPT`]) for a handle that routes it later to show.
    unrouted: std::collections::VecDeque<(String, Value)>,
    /// Task-augmented calls in flight whose task is not routed yet ([`Creating`]).
    creating: usize,
    /// Requests held now, waiting for their task to be routed.
    held: usize,
}

/// How many requests naming a not-yet-routed task [`Routes`] keeps.
const UNROUTED_KEPT: usize = 64;

/// How many requests naming an unknown task [`Routes`] holds at once; past it one is
/// answered at once, as if its hold had ended.
const HELD_MAX: usize = 64;

/// The longest hold, whatever is configured (a deadline that cannot overflow).
const HOLD_MAX: Duration = Duration::from_secs(24 * 60 * 60);

/// A task-augmented call in flight: while one is, a request naming a task nobody routed
/// is held (its task may be the one this call creates). Dropped once the call's task is
/// routed (or the call ended without one), which wakes the held requests.
pub(crate) struct Creating(Arc<Routes>);

impl std::fmt::Debug for Creating {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Creating")
    }
}

impl Drop for Creating {
    fn drop(&mut self) {
        let mut table = self.0.table();
        table.creating = table.creating.saturating_sub(1);
        drop(table);
        self.0.changed.notify_waiters();
    }
}

/// Gives a held request's place back, also when its future is dropped.
struct Held<'a>(&'a Routes);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        let mut table = self.0.table();
        table.held = table.held.saturating_sub(1);
    }
}

/// The task a request's `_meta` names (`io.modelcontextprotocol/related-task`).
fn related_task(params: &Value) -> Option<&str> {
    params
        .get("_meta")
        .and_then(|m| m.get(RELATED_TASK))
        .and_then(|r| r.get("taskId"))
        .and_then(Value::as_str)
}

impl Routes {
    /// Routes answered by `default` unless a task's handle routes its own; at most
    /// `max_rounds` input requests per task; a request naming an unknown task held at
    /// most `hold` while a task-augmented call is in flight.
    pub(crate) fn new(default: Arc<dyn ClientHandler>, max_rounds: u32, hold: Duration) -> Routes {
        Routes {
            default,
            max_rounds,
            tasks: Mutex::new(RouteTable::default()),
            on_exceeded: std::sync::OnceLock::new(),
            hold: hold.min(HOLD_MAX),
            changed: Notify::new(),
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, RouteTable> {
        self.tasks.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What to do when a task asks past its bound (set once, when the session exists).
    pub(crate) fn on_exceeded(&self, f: OnExceeded) {
        let _ = self.on_exceeded.set(f);
    }

    /// A task-augmented call is about to be sent: requests naming an unknown task are
    /// held until the returned guard is dropped (see [`Creating`]).
    pub(crate) fn creating(self: &Arc<Self>) -> Creating {
        self.table().creating += 1;
        Creating(Arc::clone(self))
    }

    /// Input requests about `task_id` go to `handler`, at most `limit` of them, until
    /// [`unroute`](Routes::unroute); requests about it being held are released to it.
    /// Returns the requests (`{"method", "params"}`) about it that came before and were
    /// not held (answered by the client's handler).
    pub(crate) fn route(
        &self,
        task_id: &str,
        handler: Arc<dyn ClientHandler>,
        limit: u32,
    ) -> Vec<Value> {
        let mut table = self.table();
        table.handlers.insert(task_id.to_owned(), handler);
        table.limits.insert(task_id.to_owned(), limit);
        let (before, others) = std::mem::take(&mut table.unrouted)
            .into_iter()
            .partition(|(task, _)| task == task_id);
        table.unrouted = others;
        drop(table);
        self.changed.notify_waiters();
        before.into_iter().map(|(_, request)| request).collect()
    }

    pub(crate) fn unroute(&self, task_id: &str) {
        let mut table = self.table();
        table.handlers.remove(task_id);
        table.limits.remove(task_id);
        table.rounds.remove(task_id);
    }

    /// Whether `task_id` asked for input past its bound.
    pub(crate) fn exceeded(&self, task_id: &str) -> bool {
        self.table().exceeded.contains(task_id)
    }

    /// The client's own handler.
    pub(crate) fn default_handler(&self) -> &dyn ClientHandler {
        self.default.as_ref()
    }

    /// The handler for request `method` with these params, after counting it against
    /// its task's bound (refused past it). A request naming a task not routed yet is
    /// held first ([`await_route`](Routes::await_route)).
    pub(super) async fn handler_for(
        &self,
        method: &str,
        params: &Value,
    ) -> Result<Arc<dyn ClientHandler>, ErrorObject> {
        let Some(task) = related_task(params) else {
            return Ok(Arc::clone(&self.default));
        };
        self.await_route(task, method).await;
        self.pick(task, method, params)
    }

    /// Holds a request naming `task` while the task is not routed and a task-augmented
    /// call is in flight: woken by [`route`](Routes::route) and by the end of such a
    /// call ([`Creating`]), never longer than the hold, at most [`HELD_MAX`] at once.
    async fn await_route(&self, task: &str, method: &str) {
        let waiting = |table: &RouteTable| !table.handlers.contains_key(task) && table.creating > 0;
        {
            let mut table = self.table();
            if !waiting(&table) {
                return;
            }
            if table.held >= HELD_MAX {
                tracing::warn!(task_id = %task, %method, held = HELD_MAX, "too many requests wait for their task; not held");
                return;
            }
            table.held += 1;
        }
        let _held = Held(self);
        tracing::debug!(task_id = %task, %method, "a request names a task not known yet; held");
        let deadline = tokio::time::Instant::now() + self.hold;
        loop {
            // Registered before the table is read, so no wake-up between is missed.
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if !waiting(&self.table()) {
                return;
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                return;
            }
        }
    }

    /// The handler for a request naming `task`, counted against the task's bound.
    fn pick(
        &self,
        task: &str,
        method: &str,
        params: &Value,
    ) -> Result<Arc<dyn ClientHandler>, ErrorObject> {
        let mut table = self.table();
        let limit = table.limits.get(task).copied().unwrap_or(self.max_rounds);
        let rounds = table.rounds.entry(task.to_owned()).or_default();
        if *rounds >= limit {
            table.exceeded.insert(task.to_owned());
            drop(table);
            if let Some(f) = self.on_exceeded.get() {
                f(task);
            }
            return Err(ErrorObject::new(
                error_codes::INVALID_REQUEST,
                format!("this client answers at most {limit} input requests for a task"),
            ));
        }
        *rounds += 1;
        if let Some(handler) = table.handlers.get(task) {
            return Ok(Arc::clone(handler));
        }
        tracing::warn!(task_id = %task, %method, "a request names a task this client does not know; answered by the client's handler");
        if table.unrouted.len() == UNROUTED_KEPT {
            table.unrouted.pop_front();
        }
        let request = serde_json::json!({ "method": method, "params": params });
        table.unrouted.push_back((task.to_owned(), request));
        Ok(Arc::clone(&self.default))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use mcp_tasks_protocol::jsonrpc::ErrorObject;
    use mcp_tasks_protocol::types::ListRootsResult;
    use serde_json::json;

    use crate::handler::{ClientHandler, DeclineAll};

    /// With no task-augmented call in flight, a request naming a task no handle routed
    /// is not held: the client's handler answers it, and the route, when it comes, gets
    /// it to show; another task's is kept for it.
    #[tokio::test]
    async fn requests_before_the_route_are_handed_to_it() {
        let routes = super::Routes::new(std::sync::Arc::new(DeclineAll), 5, LONG);
        assert!(
            routes
                .handler_for("elicitation/create", &about("t1"))
                .await
                .is_ok()
        );
        assert!(
            routes
                .handler_for("sampling/createMessage", &about("t2"))
                .await
                .is_ok()
        );
        let before = routes.route("t1", std::sync::Arc::new(DeclineAll), 5);
        assert_eq!(
            before,
            [json!({"method": "elicitation/create", "params": about("t1")})]
        );
        assert!(
            routes
                .route("t1", std::sync::Arc::new(DeclineAll), 5)
                .is_empty()
        );
        let before = routes.route("t2", std::sync::Arc::new(DeclineAll), 5);
        assert_eq!(before.len(), 1);
        assert_eq!(before[0]["method"], "sampling/createMessage");
    }

    /// A hold no test reaches: what ends a hold in these tests is a route or a call.
    const LONG: Duration = Duration::from_secs(3600);

    fn about(task: &str) -> serde_json::Value {
        json!({"_meta": {super::RELATED_TASK: {"taskId": task}}})
    }

    /// Tells handlers apart: its `list_roots` fails with its name.
    struct Named(&'static str);

    #[async_trait::async_trait]
    impl ClientHandler for Named {
        async fn list_roots(&self) -> Result<ListRootsResult, ErrorObject> {
            Err(ErrorObject::new(-1, self.0))
        }
    }

    async fn name_of(handler: &Arc<dyn ClientHandler>) -> String {
        match handler.list_roots().await {
            Err(e) => e.message,
            Ok(_) => "the client's".into(),
        }
    }

    fn routes(hold: Duration) -> Arc<super::Routes> {
        Arc::new(super::Routes::new(Arc::new(DeclineAll), 5, hold))
    }

    /// While a task-augmented call is in flight, a request naming an unknown task waits;
    /// the route made when the call's answer names the task gets it (not the client's
    /// handler, and not as an early request already answered).
    #[tokio::test]
    async fn a_request_before_its_task_is_known_is_held_for_its_route() {
        let routes = routes(LONG);
        let creating = routes.creating();
        let params = about("t1");
        let asking = routes.handler_for("elicitation/create", &params);
        tokio::pin!(asking);
        assert!(futures::poll!(asking.as_mut()).is_pending(), "held");
        let before = routes.route("t1", Arc::new(Named("the task's")), 5);
        drop(creating);
        assert!(before.is_empty(), "nothing was answered before the route");
        let handler = asking.await.expect("within the bound");
        assert_eq!(name_of(&handler).await, "the task's");
    }

    /// A held request whose task no call in flight can create any more (the calls ended
    /// with other tasks or none) is answered by the client's handler at once, and kept
    /// for a route that comes later.
    #[tokio::test]
    async fn a_held_request_is_released_when_no_call_can_make_its_task() {
        let routes = routes(LONG);
        let creating = routes.creating();
        let params = about("ghost");
        let asking = routes.handler_for("elicitation/create", &params);
        tokio::pin!(asking);
        assert!(futures::poll!(asking.as_mut()).is_pending(), "held");
        routes.route("t1", Arc::new(Named("t1's")), 5);
        assert!(futures::poll!(asking.as_mut()).is_pending(), "not its task");
        drop(creating);
        let handler = asking.await.expect("within the bound");
        assert_eq!(name_of(&handler).await, "the client's");
        assert_eq!(routes.route("ghost", Arc::new(Named("late")), 5).len(), 1);
    }

    /// A task still unknown when the hold ends is answered by the client's handler.
    #[tokio::test]
    async fn a_held_request_is_answered_by_the_clients_handler_after_the_hold() {
        let routes = routes(Duration::from_millis(20));
        let _creating = routes.creating();
        let params = about("ghost");
        let handler = tokio::time::timeout(
            Duration::from_secs(30),
            routes.handler_for("elicitation/create", &params),
        )
        .await
        .expect("the hold ends")
        .expect("within the bound");
        assert_eq!(name_of(&handler).await, "the client's");
        assert_eq!(routes.table().held, 0);
    }

    /// At most `HELD_MAX` requests wait at once; one more is answered at once.
    #[tokio::test]
    async fn held_requests_are_capped() {
        let routes = routes(LONG);
        let _creating = routes.creating();
        let params = about("ghost");
        let mut held = Vec::new();
        for _ in 0..super::HELD_MAX {
            let mut asking = Box::pin(routes.handler_for("elicitation/create", &params));
            assert!(futures::poll!(asking.as_mut()).is_pending());
            held.push(asking);
        }
        let over = routes.handler_for("elicitation/create", &params);
        tokio::pin!(over);
        assert!(futures::poll!(over.as_mut()).is_ready(), "not held");
        drop(held);
        assert_eq!(
            routes.table().held,
            0,
            "dropped requests give their place back"
        );
    }
}
