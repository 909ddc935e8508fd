//! What every handler shares: the settings, the voices, the pool and the
//! metrics of one server.

use std::sync::Arc;
use std::time::Instant;

use crate::config::ServeConfig;
use crate::metrics::Metrics;
use crate::pool::Pool;
use crate::voices::VoiceCache;

pub(crate) struct AppState {
    pub(crate) config: ServeConfig,
    pub(crate) voices: VoiceCache,
    pub(crate) pool: Arc<Pool>,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) started: Instant,
    /// Why the preload failed, if it did.
    pub(crate) preload_error: std::sync::Mutex<Option<String>>,
}

pub(crate) type App = Arc<AppState>;
