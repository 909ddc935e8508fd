//! Checkpoint → voice package (`inference/voice/FORMAT.md`): `config.json`,
//! `model.safetensors` and `golden.safetensors`, the only thing the
//! inference side reads. `dv export` is a thin wrapper over these functions,
//! and `dv recipe` and `dv evaluate` call them directly.
//!
//! The models' configs hold the package's sections (`dv-config`), so a
//! package's config is the trained model's, with what only the data tells
//! (whether the labels carried stress, the F0 range) and the lineage added.
//! The weights are the var stores' tensors under the same names. The golden
//! outputs come from the libtorch model in float32 on the CPU.
//!
//! - [`wavenet`]: a WaveNet checkpoint (and optionally a duration/F0 one) → a
//!   package, its F0 normalization recomputed from the featurize output the
//!   run trained on exactly as training computed it (`Chunks`), its golden
//!   outputs the first [`GOLDEN_FRAMES`] frames of the first validation
//!   chunk (or the first training chunk) with their samples, teacher-forced;
//! - [`duration`]: a duration/F0 checkpoint, and adding one to a package;
//! - [`g2p`]: a G2P checkpoint in the package's terms, and adding one;
//! - [`weights`]: a checkpoint's model weights alone (optionally averaged
//!   over several, in half precision), and tensors out of libtorch.
//!
//! Each function returns what it did; the reports print as `dv export`'s
//! lines.

mod duration;
mod g2p;
mod wavenet;
mod weights;

pub use duration::{add_duration, load_duration, DurationAdded};
pub use g2p::{add_g2p, g2p_checkpoint, load_g2p, G2pAdded, G2pCheckpoint, GOLDEN_WORDS};
pub use wavenet::{export_wavenet, WavenetExport, WavenetExported, GOLDEN_FRAMES};
pub use weights::{model_only, ModelOnly};
