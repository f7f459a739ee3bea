//! Every method of the server, in one table: a line per method names its params types
//! and handlers for MCP 2025-11-25 (in a session) and MCP 2026-07-28 (stateless), or for
//! one of them. [`Table::add`] is the one place that matches a request's [`Revision`]
//! (which the edge decided, `revision.rs`): it parses the params into that revision's
//! type, runs that revision's handler, serializes the result once (straight to the
//! response text), and answers -32601 for a method the revision lacks.
//!
//! **Invariants.** Nothing else matches the revision, and nothing here decides it again;
//! handlers audit their own task methods. Two registrations of one name are an error
//! ([`methods`] panics in debug builds and tests; the tests build every server).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use jsonrpsee::types::{ErrorObjectOwned, Params};
use jsonrpsee::{Extensions, RpcModule};
use mcp_tasks_protocol::engine::parse_params;
use mcp_tasks_protocol::method::Request;
use mcp_tasks_protocol::tasks::{CallToolWithTasks, CancelTask, GetTask, StreamTask, UpdateTask};
use mcp_tasks_protocol::v2025;
use mcp_tasks_protocol::v2026::{
    CallTool, Complete, Discover, GetPrompt, ListPrompts, ListResourceTemplates, ListResources,
    ListTools, ReadResource, SubscriptionsListen,
};
use serde::Serialize;
use serde_json::value::RawValue;

use crate::errors::ServerError;
use crate::features::Feature;
use crate::revision::Revision;
use crate::session::McpSession;
use crate::session::subscriptions::SessionSubscriptions;
use crate::state::State;
use crate::{v2025 as in_session, v2026 as stateless};

/// What a 2025-11-25 handler is given: the state, the request's session, the request's
/// extensions and the sessions this process serves (for resource subscriptions).
struct Session {
    state: Arc<State>,
    session: Arc<McpSession>,
    ext: Extensions,
    served: Arc<SessionSubscriptions>,
}

/// What a 2026-07-28 handler is given.
struct Stateless {
    state: Arc<State>,
    ext: Extensions,
}

/// A response's result, serialized, or its error.
type Reply = Result<Box<RawValue>, ErrorObjectOwned>;
type BoxReply = Pin<Box<dyn Future<Output = Reply> + Send>>;

/// A handler behind its params parse, taking its revision's context `C`.
type Run<C> = Arc<dyn Fn(C, &Params<'static>) -> BoxReply + Send + Sync>;

/// One revision's side of a method: its name, and its handler behind the params parse.
struct Side<C> {
    method: &'static str,
    run: Run<C>,
}

/// The side of method `M`: its params parsed as `M::Params`, then `handler`.
fn side<C, M, F, Fut, R>(handler: F) -> Side<C>
where
    C: Send + 'static,
    M: Request,
    F: Fn(C, M::Params) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, ServerError>> + Send + 'static,
    R: Serialize,
{
    // The handler's future is made inside the boxed one, where it runs: made outside, it
    // would be copied into the box and again when awaited (a handler's future is large).
    let handler = Arc::new(handler);
    let run = move |ctx: C, params: &Params<'static>| -> BoxReply {
        match parse_params::<M>(params) {
            Ok(params) => {
                let handler = Arc::clone(&handler);
                Box::pin(async move { json(handler(ctx, params).await?) })
            }
            Err(e) => Box::pin(std::future::ready(Err(e.into()))),
        }
    };
    Side {
        method: M::METHOD,
        run: Arc::new(run),
    }
}

/// The 2025-11-25 side of method `M`.
fn on_2025<M, F, Fut, R>(handler: F) -> Option<Side<Session>>
where
    M: Request,
    F: Fn(Session, M::Params) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, ServerError>> + Send + 'static,
    R: Serialize,
{
    Some(side::<Session, M, F, Fut, R>(handler))
}

/// The 2026-07-28 side of method `M`.
fn on_2026<M, F, Fut, R>(handler: F) -> Option<Side<Stateless>>
where
    M: Request,
    F: Fn(Stateless, M::Params) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, ServerError>> + Send + 'static,
    R: Serialize,
{
    Some(side::<Stateless, M, F, Fut, R>(handler))
}

/// What a method needs before either handler runs.
#[derive(Clone, Copy)]
enum Needs {
    Nothing,
    /// A task method: in a session, one of 2025-11-25 (tasks came then).
    Tasks,
    /// A feature the server may not offer (-32601 when it does not).
    Feature(Feature),
}

/// A result serialized once, straight to the text the response embeds (no `Value` tree).
fn json(value: impl Serialize) -> Reply {
    serde_json::value::to_raw_value(&value).map_err(|e| ServerError::Internal(e.to_string()).into())
}

/// -32601 for a method MCP 2026-07-28 does not have.
fn not_in_2026(method: &str) -> ServerError {
    let hint = match method {
        v2025::methods::TASKS_RESULT | v2025::methods::TASKS_LIST => {
            " (read results with tasks/get)"
        }
        v2025::methods::RESOURCES_SUBSCRIBE | v2025::methods::RESOURCES_UNSUBSCRIBE => {
            " (use subscriptions/listen with resourceSubscriptions)"
        }
        _ => "",
    };
    ServerError::MethodNotFound(format!(
        "Method not found: {method} is not part of MCP 2026-07-28{hint}"
    ))
}

/// -32601 for a method the session's revision does not have.
fn not_in_session(method: &str, session: &McpSession) -> ServerError {
    let since = if session.has_tasks() {
        ""
    } else {
        " (tasks came in 2025-11-25)"
    };
    ServerError::MethodNotFound(format!(
        "Method not found: {method} is not part of MCP {}{since}",
        session.protocol_version
    ))
}

/// The server's methods, registered on one module.
struct Table<'m> {
    module: &'m mut RpcModule<State>,
    served: Arc<SessionSubscriptions>,
}

impl Table<'_> {
    /// Registers a method with a handler for either revision or both (the two sides name
    /// the same method). The one place a request's revision is matched.
    fn add(
        &mut self,
        needs: Needs,
        session: Option<Side<Session>>,
        stateless: Option<Side<Stateless>>,
    ) -> Result<(), ServerError> {
        let method = match (&session, &stateless) {
            (Some(a), Some(b)) if a.method != b.method => {
                return Err(ServerError::Internal(format!(
                    "one table line names two methods: {} and {}",
                    a.method, b.method
                )));
            }
            (Some(side), _) => side.method,
            (None, Some(side)) => side.method,
            (None, None) => return Ok(()),
        };
        let served = Arc::clone(&self.served);
        let session = session.map(|s| s.run);
        let stateless = stateless.map(|s| s.run);
        let registered = self
            .module
            .register_async_method(method, move |params, state, ext| {
                let (served, session, stateless) =
                    (served.clone(), session.clone(), stateless.clone());
                // The task log entries a request writes name this node.
                let scope = state.runtime.log_scope(None);
                scope.run(async move {
                    if let Needs::Feature(feature) = needs {
                        state.catalog.offers(feature, method)?;
                    }
                    match (Revision::session(&ext), session, stateless) {
                        (Some(s), Some(_), _)
                            if matches!(needs, Needs::Tasks) && !s.has_tasks() =>
                        {
                            Err(not_in_session(method, &s).into())
                        }
                        (Some(session), Some(run), _) => {
                            let ctx = Session {
                                state,
                                session,
                                ext,
                                served,
                            };
                            run(ctx, &params).await
                        }
                        (Some(s), None, _) => Err(not_in_session(method, &s).into()),
                        (None, _, Some(run)) => run(Stateless { state, ext }, &params).await,
                        (None, _, None) => Err(not_in_2026(method).into()),
                    }
                })
            });
        registered
            .map(drop)
            .map_err(|e| ServerError::Internal(format!("registering {method}: {e}")))
    }
}

/// Every method of both wires. A registration that fails (a name registered twice) is a
/// bug in this file: it panics in debug builds, and is logged in release ones.
pub(crate) fn methods(state: Arc<State>, served: Arc<SessionSubscriptions>) -> RpcModule<State> {
    let mut module = RpcModule::from_arc(state);
    let mut table = Table {
        module: &mut module,
        served,
    };
    let registered = initialize(&mut table)
        .and_then(|()| tools(&mut table))
        .and_then(|()| tasks(&mut table))
        .and_then(|()| resources(&mut table))
        .and_then(|()| prompts_and_completion(&mut table));
    if let Err(e) = registered {
        debug_assert!(false, "{e}");
        tracing::error!(error = %e, "method registration failed");
    }
    module
}

/// `initialize`: the one method served before there is a session (it opens one).
fn initialize(table: &mut Table<'_>) -> Result<(), ServerError> {
    let served = Arc::clone(&table.served);
    let method = v2025::Initialize::METHOD;
    let registered = table
        .module
        .register_async_method(method, move |params, state, ext| {
            let served = Arc::clone(&served);
            async move {
                // A request written in MCP 2026-07-28 (its `_meta` names that version) asks
                // for a method that revision removed; a 2025-11-25 client opens its session.
                if Revision::declarations(&ext).is_some_and(|d| d.protocol_version.is_some()) {
                    return Err(not_in_2026(method).into());
                }
                if Revision::session(&ext).is_some() {
                    return Err(in_session::already_initialized().into());
                }
                let params = parse_params::<v2025::Initialize>(&params)?;
                json(in_session::initialize(&state, &served, params, &ext).await?)
            }
        });
    registered
        .map(drop)
        .map_err(|e| ServerError::Internal(format!("registering {method}: {e}")))
}

/// Tools and the methods of a session's life.
fn tools(t: &mut Table<'_>) -> Result<(), ServerError> {
    use Needs::Nothing;
    t.add(
        Nothing,
        None,
        on_2026::<Discover, _, _, _>(|c, _| async move { stateless::discover(&c.state) }),
    )?;
    t.add(
        Nothing,
        on_2025::<v2025::Ping, _, _, _>(|_, _| async { Ok(v2025::EmptyResult::default()) }),
        None,
    )?;
    t.add(
        Nothing,
        on_2025::<v2025::SetLevel, _, _, _>(|c, p| async move {
            in_session::set_level(&c.state, &c.session, p).await
        }),
        None,
    )?;
    t.add(
        Nothing,
        on_2025::<v2025::ListTools, _, _, _>(|c, _| async move {
            Ok(in_session::tools_list(&c.state, &c.session))
        }),
        on_2026::<ListTools, _, _, _>(|c, _| async move { Ok(stateless::tools_list(&c.state)) }),
    )?;
    t.add(
        Nothing,
        on_2025::<v2025::CallTool, _, _, _>(|c, p| async move {
            in_session::tools_call(&c.state, &c.session, p, &c.ext).await
        }),
        on_2026::<CallToolWithTasks, _, _, _>(|c, p| async move {
            stateless::tools_call(&c.state, p, &c.ext).await
        }),
    )?;
    debug_assert_eq!(CallTool::METHOD, CallToolWithTasks::METHOD);
    Ok(())
}

/// The task methods (audited by their handlers) and `subscriptions/listen`.
fn tasks(t: &mut Table<'_>) -> Result<(), ServerError> {
    use Needs::{Nothing, Tasks};
    t.add(
        Tasks,
        on_2025::<v2025::GetTask, _, _, _>(|c, p| async move {
            in_session::tasks_get(&c.state, &c.session, &p.task_id).await
        }),
        on_2026::<GetTask, _, _, _>(|c, p| async move {
            stateless::tasks_get(&c.state, p, &c.ext).await
        }),
    )?;
    t.add(
        Tasks,
        None,
        on_2026::<UpdateTask, _, _, _>(|c, p| async move {
            stateless::tasks_update(&c.state, p, &c.ext).await
        }),
    )?;
    t.add(
        Tasks,
        on_2025::<v2025::CancelTask, _, _, _>(|c, p| async move {
            in_session::tasks_cancel(&c.state, &c.session, &p.task_id).await
        }),
        on_2026::<CancelTask, _, _, _>(|c, p| async move {
            stateless::tasks_cancel(&c.state, p, &c.ext).await
        }),
    )?;
    t.add(
        Tasks,
        on_2025::<v2025::GetTaskPayload, _, _, _>(|c, p| async move {
            in_session::tasks_result(&c.state, &c.session, &p.task_id, &c.ext).await
        }),
        None,
    )?;
    t.add(
        Tasks,
        on_2025::<v2025::ListTasks, _, _, _>(|c, p| async move {
            in_session::tasks_list(&c.state, &c.session, p.and_then(|p| p.cursor).as_deref()).await
        }),
        None,
    )?;
    t.add(
        Tasks,
        None,
        on_2026::<StreamTask, _, _, _>(|c, p| stateless::stream(c.state, p, c.ext)),
    )?;
    t.add(
        Nothing,
        None,
        on_2026::<SubscriptionsListen, _, _, _>(|c, p| stateless::listen(c.state, p, c.ext)),
    )
}

/// Resources: -32601 unless the server offers them.
fn resources(t: &mut Table<'_>) -> Result<(), ServerError> {
    use Feature::Resources;
    use Needs::Feature as Offered;
    use in_session::features as old;
    use stateless::features as new;
    t.add(
        Offered(Resources),
        on_2025::<v2025::ListResources, _, _, _>(|c, p| async move {
            old::resources_list(&c.state, &c.session, p.as_ref())
        }),
        on_2026::<ListResources, _, _, _>(|c, p| async move {
            new::resources_list(&c.state, &p, &c.ext)
        }),
    )?;
    t.add(
        Offered(Resources),
        on_2025::<v2025::ListResourceTemplates, _, _, _>(|c, p| async move {
            old::resource_templates_list(&c.state, &c.session, p.as_ref())
        }),
        on_2026::<ListResourceTemplates, _, _, _>(|c, p| async move {
            new::resource_templates_list(&c.state, &p, &c.ext)
        }),
    )?;
    t.add(
        Offered(Resources),
        on_2025::<v2025::ReadResource, _, _, _>(|c, p| async move {
            old::resources_read(&c.state, p).await
        }),
        on_2026::<ReadResource, _, _, _>(
            |c, p| async move { new::resources_read(&c.state, p).await },
        ),
    )?;
    t.add(
        Offered(Resources),
        on_2025::<v2025::Subscribe, _, _, _>(|c, p| async move {
            old::resources_subscribe(&c.state, &c.served, &c.session, p).await
        }),
        None,
    )?;
    t.add(
        Offered(Resources),
        on_2025::<v2025::Unsubscribe, _, _, _>(|c, p| async move {
            old::resources_unsubscribe(&c.state, &c.served, &c.session, p).await
        }),
        None,
    )?;
    Ok(())
}

/// Prompts and completion: -32601 unless the server offers them.
fn prompts_and_completion(t: &mut Table<'_>) -> Result<(), ServerError> {
    use Feature::{Completions, Prompts};
    use Needs::Feature as Offered;
    use in_session::features as old;
    use stateless::features as new;
    t.add(
        Offered(Prompts),
        on_2025::<v2025::ListPrompts, _, _, _>(|c, p| async move {
            old::prompts_list(&c.state, &c.session, p.as_ref())
        }),
        on_2026::<ListPrompts, _, _, _>(
            |c, p| async move { new::prompts_list(&c.state, &p, &c.ext) },
        ),
    )?;
    t.add(
        Offered(Prompts),
        on_2025::<v2025::GetPrompt, _, _, _>(|c, p| async move {
            old::prompts_get(&c.state, &c.session, p, &c.ext).await
        }),
        on_2026::<GetPrompt, _, _, _>(
            |c, p| async move { new::prompts_get(&c.state, p, &c.ext).await },
        ),
    )?;
    t.add(
        Offered(Completions),
        on_2025::<v2025::Complete, _, _, _>(|c, p| async move { old::complete(&c.state, p).await }),
        on_2026::<Complete, _, _, _>(|c, p| async move { new::complete(&c.state, p).await }),
    )
}
