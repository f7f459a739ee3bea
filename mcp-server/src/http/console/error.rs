//! The console's errors as JSON, `{"error": "message"}` with their HTTP status, and the
//! one mapping of a [`StoreError`] to them (no backend detail leaves the server).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use mcp_tasks::{STORE_UNAVAILABLE_MESSAGE, StoreError};

/// A refused or failed console request.
#[derive(Debug)]
pub(super) enum ApiError {
    /// 400: a bad parameter or cursor.
    BadRequest(String),
    /// 403: e.g. a `POST` without the CSRF header.
    Forbidden(String),
    /// 404: no such task (or path).
    NotFound(&'static str),
    /// 422: a well-formed request the console will not do as asked (e.g. a bulk cancel
    /// matching more tasks than one request may cancel); the message says why.
    Unprocessable(String),
    /// 409: the request conflicts with the task as it stands (e.g. a re-run of a task
    /// that is not finished, or whose tool does not allow it); the message says why.
    Conflict(String),
    /// 503 with a message: the server cannot do it now (e.g. it is shutting down).
    NotNow(String),
    /// 429: past the event-stream limits ([`ConsoleConfig::max_streams`](super::ConsoleConfig::max_streams)
    /// and [`ConsoleConfig::max_streams_per_operator`](super::ConsoleConfig::max_streams_per_operator)).
    TooManyStreams(String),
    /// 501: the store does not implement the operator's view.
    Unsupported(&'static str),
    /// 503: the store is out of reach for now.
    Unavailable,
    /// 500: the store failed for good (details in the log only).
    Internal,
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> ApiError {
        match e {
            StoreError::NotFound => ApiError::NotFound("task not found"),
            StoreError::InvalidCursor => ApiError::BadRequest("invalid cursor".into()),
            StoreError::Unsupported { operation } => ApiError::Unsupported(operation),
            StoreError::Unavailable(e) => {
                tracing::warn!(error = %e, "console: the task store is unavailable");
                ApiError::Unavailable
            }
            other => {
                tracing::error!(error = %other, "console: the task store failed");
                ApiError::Internal
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, message) = match self {
            ApiError::BadRequest(m) => (StatusCode::BAD_REQUEST, m),
            ApiError::Forbidden(m) => (StatusCode::FORBIDDEN, m),
            ApiError::NotFound(m) => (StatusCode::NOT_FOUND, m.to_owned()),
            ApiError::Unprocessable(m) => (StatusCode::UNPROCESSABLE_ENTITY, m),
            ApiError::Conflict(m) => (StatusCode::CONFLICT, m),
            ApiError::NotNow(m) => (StatusCode::SERVICE_UNAVAILABLE, m),
            ApiError::TooManyStreams(m) => (StatusCode::TOO_MANY_REQUESTS, m),
            ApiError::Unsupported(operation) => (
                StatusCode::NOT_IMPLEMENTED,
                format!("the task store does not support {operation}"),
            ),
            ApiError::Unavailable => (
                StatusCode::SERVICE_UNAVAILABLE,
                STORE_UNAVAILABLE_MESSAGE.to_owned(),
            ),
            ApiError::Internal => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "the task store failed; see the server's log".to_owned(),
            ),
        };
        let mut response = json_error(status, &message);
        if status == StatusCode::SERVICE_UNAVAILABLE {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        response
    }
}

/// `{"error": message}` with `status`.
pub(super) fn json_error(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(serde_json::json!({ "error": message }))).into_response()
}

/// Any console path that does not exist (behind the access layer, like every other).
pub(super) async fn not_found() -> Response {
    ApiError::NotFound("no such console path").into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_errors_become_statuses_without_details() {
        let unavailable =
            ApiError::from(StoreError::unavailable("10.0.0.7:5432 refused")).into_response();
        assert_eq!(unavailable.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert!(unavailable.headers().contains_key(header::RETRY_AFTER));
        let unsupported = ApiError::from(StoreError::Unsupported {
            operation: "operator counts",
        });
        assert!(matches!(
            unsupported,
            ApiError::Unsupported("operator counts")
        ));
        assert_eq!(
            unsupported.into_response().status(),
            StatusCode::NOT_IMPLEMENTED
        );
        let broken = ApiError::from(StoreError::backend("corrupt row 7")).into_response();
        assert_eq!(broken.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert!(matches!(
            ApiError::from(StoreError::NotFound),
            ApiError::NotFound(_)
        ));
        assert!(matches!(
            ApiError::from(StoreError::InvalidCursor),
            ApiError::BadRequest(_)
        ));
    }
}
