//! Errors as OpenAI shapes them: a status and
//! `{"error":{"message","type","param","code"}}`.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// An error answered before the first byte of a response.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    /// OpenAI's `type`: `invalid_request_error`, `authentication_error`,
    /// `rate_limit_error`, `server_error`, …
    pub kind: &'static str,
    /// The request field at fault, if any.
    pub param: Option<&'static str>,
    pub code: &'static str,
    /// The known voices, for an unknown one.
    pub voices: Option<Vec<String>>,
    /// Seconds a client should wait (429).
    pub retry_after: Option<u64>,
}

impl ApiError {
    fn new(status: StatusCode, kind: &'static str, code: &'static str, message: String) -> Self {
        Self { status, message, kind, param: None, code, voices: None, retry_after: None }
    }

    /// 400: a field is missing, of the wrong type or out of range.
    pub fn invalid(param: &'static str, code: &'static str, message: String) -> Self {
        Self { param: Some(param), ..Self::new(StatusCode::BAD_REQUEST, "invalid_request_error", code, message) }
    }

    /// 400 about the whole body (not JSON, not an object).
    pub fn bad_body(message: String) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request_error", "invalid_json", message)
    }

    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "authentication_error",
            "invalid_api_key",
            "a valid API key is required: send `Authorization: Bearer <key>`".into(),
        )
    }

    pub fn voice_not_found(name: &str, known: Vec<String>) -> Self {
        let list = if known.is_empty() { "none".to_string() } else { known.join(", ") };
        Self {
            param: Some("voice"),
            voices: Some(known),
            ..Self::new(
                StatusCode::NOT_FOUND,
                "invalid_request_error",
                "voice_not_found",
                format!("voice {name:?} not found; known voices: {list}"),
            )
        }
    }

    /// 404 naming the `models` a request may name.
    pub fn model_not_found(name: &str, models: &[&str]) -> Self {
        Self {
            param: Some("model"),
            ..Self::new(
                StatusCode::NOT_FOUND,
                "invalid_request_error",
                "model_not_found",
                format!("model {name:?} does not exist; models: {}", models.join(", ")),
            )
        }
    }

    pub fn too_large(limit: usize) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "invalid_request_error",
            "request_too_large",
            format!("the request body is larger than {limit} bytes"),
        )
    }

    pub fn body_timeout() -> Self {
        Self::new(
            StatusCode::REQUEST_TIMEOUT,
            "invalid_request_error",
            "request_timeout",
            "the request body did not arrive in time".into(),
        )
    }

    pub fn busy(retry_after: u64) -> Self {
        Self {
            retry_after: Some(retry_after),
            ..Self::new(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limit_error",
                "queue_full",
                "every worker is busy and the queue is full; retry later".into(),
            )
        }
    }

    pub fn not_found(path: &str) -> Self {
        Self::new(StatusCode::NOT_FOUND, "invalid_request_error", "not_found", format!("no route for {path}"))
    }

    pub fn method_not_allowed() -> Self {
        Self::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "invalid_request_error",
            "method_not_allowed",
            "method not allowed on this route".into(),
        )
    }

    pub fn unavailable(message: String) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, "server_error", "shutting_down", message)
    }

    /// 500: the server failed (a voice package that does not load, a render
    /// error that is not the request's fault).
    pub fn internal(message: String) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "server_error", "internal_error", message)
    }

    /// The JSON body.
    pub fn body(&self) -> serde_json::Value {
        let mut e = json!({
            "message": self.message,
            "type": self.kind,
            "param": self.param,
            "code": self.code,
        });
        if let Some(v) = &self.voices {
            e["voices"] = json!(v);
        }
        json!({ "error": e })
    }
}

impl From<dv_speak::SpeakError> for ApiError {
    /// What the text or an option got wrong is the client's (400); the rest
    /// is the server's (500).
    fn from(e: dv_speak::SpeakError) -> Self {
        use dv_speak::SpeakError as E;
        match &e {
            E::OutOfVocabulary { .. } | E::NothingToSay => {
                ApiError::invalid("input", "unspeakable_input", e.to_string())
            }
            E::BadOption { what: "speed", .. } => ApiError::invalid("speed", "invalid_speed", e.to_string()),
            E::NoDurationModel => ApiError::invalid("voice", "voice_cannot_speak_text", e.to_string()),
            _ => ApiError::internal(e.to_string()),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut r = (self.status, axum::Json(self.body())).into_response();
        if let Some(s) = self.retry_after {
            r.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(s));
        }
        if self.status == StatusCode::UNAUTHORIZED {
            r.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        r
    }
}
