//! The server: the routes, and the accept loop with header timeouts and
//! graceful shutdown (hyper directly, so that both can be set). Its
//! settings are in `config.rs`, what the handlers share in `state.rs`.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::{from_fn_with_state, Next};
use axum::response::Response;
use axum::routing::{get, post, MethodRouter};
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;

use crate::api;
use crate::auth::require_key;
use crate::config::ServeConfig;
use crate::error::ApiError;
use crate::metrics::Metrics;
use crate::pool::Pool;
use crate::state::{App, AppState};
use crate::voices::VoiceCache;

fn endpoint(path: &str) -> &'static str {
    match path {
        "/v1/audio/speech" => "speech",
        "/v1/audio/speech/timed" => "timed",
        "/v1/audio/voices" => "voices",
        "/v1/models" => "models",
        "/healthz" => "healthz",
        "/readyz" => "readyz",
        "/metrics" => "metrics",
        "/openapi.json" => "openapi",
        "/" => "page",
        _ => "other",
    }
}

async fn count(State(app): State<App>, req: Request, next: Next) -> Response {
    let name = endpoint(req.uri().path());
    let r = next.run(req).await;
    app.metrics.request(name, r.status().as_u16());
    r
}

/// Every route as `(method, path, handler)`: the router serves exactly
/// these, and `/openapi.json` describes exactly these (`openapi.rs`'s test
/// holds the two lists equal; `tests/it/openapi.rs` requests every
/// operation the description lists and gets neither 404 nor 405).
fn routes() -> [(Method, &'static str, MethodRouter<App>); 9] {
    [
        (Method::GET, "/", get(api::page)),
        (Method::GET, "/healthz", get(api::healthz)),
        (Method::GET, "/readyz", get(api::readyz)),
        (Method::GET, "/metrics", get(api::metrics)),
        (Method::GET, "/openapi.json", get(api::openapi)),
        (Method::GET, "/v1/models", get(api::models)),
        (Method::GET, "/v1/audio/voices", get(api::voices)),
        (Method::POST, "/v1/audio/speech", post(api::speech)),
        (Method::POST, "/v1/audio/speech/timed", post(api::timed)),
    ]
}

/// `(method, path)` of every route.
#[cfg(test)]
pub(crate) fn route_list() -> Vec<(Method, &'static str)> {
    routes().into_iter().map(|(m, p, _)| (m, p)).collect()
}

fn router(app: App) -> Router {
    routes()
        .into_iter()
        .fold(Router::new(), |r, (_, path, handler)| r.route(path, handler))
        .fallback(|req: Request| async move { ApiError::not_found(req.uri().path()) })
        .method_not_allowed_fallback(|| async { ApiError::method_not_allowed() })
        .layer(from_fn_with_state(app.clone(), require_key))
        .layer(from_fn_with_state(app.clone(), count))
        .with_state(app)
}

/// Serves on `listener` until `shutdown` resolves, then stops accepting,
/// lets in-flight requests finish for `config.shutdown_grace`, cancels
/// their renders, and returns (within two seconds more).
pub async fn serve(
    listener: TcpListener,
    config: ServeConfig,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let metrics = Arc::new(Metrics::default());
    let workers = config.slots.as_ref().map_or(config.workers, |s| s.slots);
    let app: App = Arc::new(AppState {
        voices: VoiceCache::new(
            config.voices.clone(),
            config.speaker.clone(),
            config.default_voice.clone(),
            config.max_voices,
            metrics.clone(),
        )
        .with_slots(config.slots.clone())
        .with_sampling(config.sampling),
        pool: Pool::new(workers, config.queue, metrics.clone()),
        metrics,
        started: Instant::now(),
        preload_error: Default::default(),
        config,
    });
    if app.config.preload {
        let app = app.clone();
        tokio::spawn(async move {
            let t = Instant::now();
            match app.voices.get(None).await {
                Ok(_) => eprintln!(
                    "dv-serve: voice {:?} loaded in {:.2} s",
                    app.voices.default_voice(),
                    t.elapsed().as_secs_f64()
                ),
                Err(e) => {
                    eprintln!("dv-serve: the default voice did not load: {}", e.message);
                    *app.preload_error.lock().unwrap_or_else(|e| e.into_inner()) = Some(e.message);
                }
            }
        });
    }
    let router = router(app.clone());
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(app.config.header_timeout);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let stream = match accepted {
                    Ok((s, _)) => s,
                    Err(e) => {
                        // Out of descriptors and the like: wait, do not spin.
                        eprintln!("dv-serve: accept: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let conn = http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(router.clone()));
                let conn = graceful.watch(conn);
                tokio::spawn(async move {
                    let _ = conn.await;
                });
            }
            _ = &mut shutdown => break,
        }
    }
    drop(listener);
    app.pool.close();
    eprintln!(
        "dv-serve: shutting down: {} request(s) in flight, {} s to finish",
        app.pool.in_flight(),
        app.config.shutdown_grace.as_secs_f64()
    );
    let drained = graceful.shutdown();
    let mut drained = std::pin::pin!(drained);
    tokio::select! {
        _ = &mut drained => {}
        _ = tokio::time::sleep(app.config.shutdown_grace) => {
            eprintln!("dv-serve: grace over: cancelling {} request(s)", app.pool.in_flight());
            app.pool.cancel_all();
            let _ = tokio::time::timeout(Duration::from_secs(2), &mut drained).await;
        }
    }
    Ok(())
}
