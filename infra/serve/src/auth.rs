//! Bearer-token auth on `/v1/*` when the server has an API key.

use axum::extract::{Request, State};
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::state::App;

/// Equal in time whatever the position of the first difference.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// 401 unless `Authorization: Bearer <key>` names the server's key (when it
/// has one). Only `/v1/*` is guarded: health, metrics and the page are not.
pub(crate) async fn require_key(State(app): State<App>, req: Request, next: Next) -> Response {
    if let Some(key) = &app.config.api_key {
        if req.uri().path().starts_with("/v1/") {
            let given = req
                .headers()
                .get(AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
                .map(str::trim);
            if !given.is_some_and(|g| same(g.as_bytes(), key.as_bytes())) {
                return ApiError::unauthorized().into_response();
            }
        }
    }
    next.run(req).await
}
