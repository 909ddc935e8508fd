//! The embedded default corpus: a female US English voice with exact ground
//! truth, rendered from Debian packages alone.
//!
//! # How it is made
//!
//! 1. Sentences: every plain English sentence of 5–20 words in Debian's
//!    `fortunes` whose words are all in festival's CMU lexicon
//!    ([`sentences::is_plain`]), without repeats, shuffled under a fixed seed
//!    (SplitMix64 Fisher–Yates); the first `utterances` are taken.
//! 2. Text analysis: `festival` (voice `cmu_us_slt_arctic_hts`) runs every
//!    text module up to `Int_Targets`, then writes HTS full-context labels
//!    (`hts/<id>.lab`). No waveform is made by festival.
//! 3. Rendering: `hts_engine` renders each label file with the slt voice (32
//!    kHz), writing the log-F0 track it used (`-of`, one value per 5 ms
//!    frame) and its state durations as phone boundaries (`-od`, on the 5 ms
//!    grid). `sox -R` (no dither, so runs are identical) resamples to 16 kHz
//!    16-bit.
//! 4. Layout: CMU ARCTIC's, read by the ARCTIC reader: `etc/txt.done.data`,
//!    `wav/<id>.wav`, `lab/<id>.lab` (exact phone ends), `f0/<id>.f0` (EST
//!    ascii track of the exact F0, frame centres, 0 when unvoiced),
//!    `hts/<id>.lab` (the full-context labels, to render elsewhere), and
//!    `etc/recipe.json` (what was asked, written last).
//!
//! Steps 1–2 and 3 can run on different machines: `labels_only` stops after
//! the labels, leaving `<out>.partial` with `etc/txt.done.data` and `hts/`.
//! Given that directory, [`make`] renders it with hts_engine and sox alone
//! (festival, its lexicon and the fortunes are not needed), so a machine
//! with many cores and no Debian packages can render hours of audio from a
//! few megabytes of labels plus the two binaries and the voice.
//!
//! Every step is deterministic: the same request gives byte-identical files.
//! The corpus is built in `<out>.partial` and renamed into place when
//! complete; an interrupted run resumes there (an utterance counts as done
//! once its WAV exists, and the WAV is renamed into place last). A finished
//! corpus matching the request is reused.

mod render;
pub mod sentences;

pub use render::parse_durations as parse_hts_durations;

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::CorpusError;

/// Where the embedded corpus's tools and data live (Debian's paths by default).
#[derive(Debug, Clone)]
pub struct Tools {
    pub festival: PathBuf,
    pub hts_engine: PathBuf,
    pub sox: PathBuf,
    /// `cmu_us_slt_arctic_hts.htsvoice` (package `festvox-us-slt-hts`).
    pub voice: PathBuf,
    /// festival's CMU lexicon (package `festlex-cmu`).
    pub lexicon: PathBuf,
    /// Directory of fortune files (package `fortunes`).
    pub fortunes: PathBuf,
}

impl Default for Tools {
    fn default() -> Self {
        Tools {
            festival: "/usr/bin/festival".into(),
            hts_engine: "/usr/bin/hts_engine".into(),
            sox: "/usr/bin/sox".into(),
            voice: "/usr/share/festival/voices/us/cmu_us_slt_arctic_hts/hts/cmu_us_slt_arctic_hts.htsvoice".into(),
            lexicon: "/usr/share/festival/dicts/cmu/cmudict-0.4.out".into(),
            fortunes: "/usr/share/games/fortunes".into(),
        }
    }
}

impl Tools {
    /// Each tool or file, what it is, and the Debian package that has it.
    pub fn requirements(&self) -> [(&'static str, &Path, &'static str); 6] {
        [
            ("festival", &self.festival, "festival"),
            ("hts_engine", &self.hts_engine, "htsengine"),
            ("sox", &self.sox, "sox"),
            ("slt HTS voice", &self.voice, "festvox-us-slt-hts"),
            ("festival CMU lexicon", &self.lexicon, "festlex-cmu"),
            ("fortunes", &self.fortunes, "fortunes"),
        ]
    }

    /// Checks that everything exists.
    pub fn check(&self) -> Result<(), CorpusError> {
        Self::check_all(&self.requirements())
    }

    /// Checks that what rendering labels needs exists (hts_engine, sox, the voice).
    pub fn check_render(&self) -> Result<(), CorpusError> {
        Self::check_all(&self.requirements()[1..4])
    }

    fn check_all(requirements: &[(&'static str, &Path, &'static str)]) -> Result<(), CorpusError> {
        for &(what, path, package) in requirements {
            if !path.exists() {
                return Err(CorpusError::MissingTool {
                    what: what.into(),
                    path: path.to_path_buf(),
                    package: package.into(),
                });
            }
        }
        Ok(())
    }
}

/// What to make.
#[derive(Debug, Clone)]
pub struct Request {
    /// The corpus directory.
    pub out: PathBuf,
    /// How many utterances (300 ≈ 18 minutes; about 5,000 sentences exist).
    pub utterances: usize,
    /// Seed of the sentence shuffle.
    pub seed: u64,
    /// Parallel festival and hts_engine processes.
    pub jobs: usize,
    /// Stop after festival's labels (step 2), leaving `<out>.partial`.
    pub labels_only: bool,
    pub tools: Tools,
}

/// The small corpus of the demo and the tests.
pub const DEFAULT_UTTERANCES: usize = 300;
/// The fixed shuffle seed (the year of Deep Voice).
pub const DEFAULT_SEED: u64 = 2017;
/// Sample rate of the written WAVs, as CMU ARCTIC's.
pub const SAMPLE_RATE: u32 = 16_000;
/// Bumped whenever the recipe's output changes.
pub const RECIPE_VERSION: u32 = 1;

/// What [`make`] did.
#[derive(Debug, Clone)]
pub struct Report {
    pub out: PathBuf,
    pub utterances: usize,
    /// Plain sentences available before taking `utterances` (0 when only
    /// labels made earlier were rendered).
    pub sentences_available: usize,
    /// Seconds of audio written.
    pub audio_seconds: f64,
    /// True when an existing corpus matched the request and was kept.
    pub reused: bool,
    /// Where the labels are, when the request was `labels_only`.
    pub labels: Option<PathBuf>,
    pub elapsed_seconds: f64,
}

fn recipe_key(req: &Request) -> String {
    format!(
        "{{\"recipe\": \"slt-fortunes\", \"version\": {RECIPE_VERSION}, \"utterances\": {}, \"seed\": {}, \"sample_rate\": {SAMPLE_RATE}}}\n",
        req.utterances, req.seed
    )
}

/// Makes (or reuses) the corpus. `progress(done, total)` is called as
/// utterances finish rendering.
pub fn make(req: &Request, progress: &mut dyn FnMut(usize, usize)) -> Result<Report, CorpusError> {
    let started = Instant::now();
    if req.utterances == 0 {
        return Err(CorpusError::Recipe("asked for 0 utterances".into()));
    }
    let key = recipe_key(req);
    let done_marker = req.out.join("etc/recipe.json");
    if std::fs::read_to_string(&done_marker).is_ok_and(|k| k == key) {
        let audio_seconds = render::audio_seconds(&req.out)?;
        return Ok(Report {
            out: req.out.clone(),
            utterances: req.utterances,
            sentences_available: 0,
            audio_seconds,
            reused: true,
            labels: None,
            elapsed_seconds: started.elapsed().as_secs_f64(),
        });
    }

    let partial = partial_dir(&req.out);
    let partial_key = partial.join("etc/request.json");
    let (items, available) = match labelled(&partial, &key)? {
        Some(items) => {
            // Labelled elsewhere (or by an interrupted run): render only.
            req.tools.check_render()?;
            (items, 0)
        }
        None => {
            req.tools.check()?;
            let (items, available) = pick_sentences(req)?;
            if partial.exists() && std::fs::read_to_string(&partial_key).ok().as_deref() != Some(key.as_str()) {
                std::fs::remove_dir_all(&partial).map_err(CorpusError::io(&partial))?;
            }
            for d in ["etc", "hts"] {
                let p = partial.join(d);
                std::fs::create_dir_all(&p).map_err(CorpusError::io(&p))?;
            }
            render::write_atomic(&partial_key, key.as_bytes())?;
            let prompts: String = items.iter().map(|(id, s)| format!("( {id} \"{s}\" )\n")).collect();
            render::write_atomic(&partial.join("etc/txt.done.data"), prompts.as_bytes())?;
            render::label(&req.tools, &partial, &items, req.jobs.max(1))?;
            (items, available)
        }
    };
    if req.labels_only {
        return Ok(Report {
            out: req.out.clone(),
            utterances: items.len(),
            sentences_available: available,
            audio_seconds: 0.0,
            reused: false,
            labels: Some(partial),
            elapsed_seconds: started.elapsed().as_secs_f64(),
        });
    }
    for d in ["wav", "lab", "f0"] {
        let p = partial.join(d);
        std::fs::create_dir_all(&p).map_err(CorpusError::io(&p))?;
    }
    render::render(&req.tools, &partial, &items, req.jobs.max(1), progress)?;
    let audio_seconds = render::audio_seconds(&partial)?;

    std::fs::remove_file(&partial_key).map_err(CorpusError::io(&partial_key))?;
    render::write_atomic(&partial.join("etc/recipe.json"), key.as_bytes())?;
    if req.out.exists() {
        std::fs::remove_dir_all(&req.out).map_err(CorpusError::io(&req.out))?;
    }
    std::fs::rename(&partial, &req.out).map_err(CorpusError::io(&req.out))?;
    Ok(Report {
        out: req.out.clone(),
        utterances: items.len(),
        sentences_available: available,
        audio_seconds,
        reused: false,
        labels: None,
        elapsed_seconds: started.elapsed().as_secs_f64(),
    })
}

/// The first `req.utterances` plain sentences of the fixed shuffle, with
/// their ids, and how many plain sentences exist.
fn pick_sentences(req: &Request) -> Result<(Vec<(String, String)>, usize), CorpusError> {
    let lexicon = sentences::festival_words(&req.tools.lexicon)?;
    let mut all = sentences::collect(&req.tools.fortunes, &lexicon)?;
    let available = all.len();
    if available < req.utterances {
        return Err(CorpusError::Recipe(format!(
            "asked for {} utterances but only {available} plain sentences exist in {}",
            req.utterances,
            req.tools.fortunes.display()
        )));
    }
    sentences::shuffle(&mut all, req.seed);
    all.truncate(req.utterances);
    let items = all.into_iter().enumerate().map(|(i, s)| (format!("slt_fortune_{:05}", i + 1), s)).collect();
    Ok((items, available))
}

/// The items of a partial corpus made for this request whose labels are all
/// written (`None` when it is absent, for another request, or unlabelled).
fn labelled(partial: &Path, key: &str) -> Result<Option<Vec<(String, String)>>, CorpusError> {
    if std::fs::read_to_string(partial.join("etc/request.json")).ok().as_deref() != Some(key) {
        return Ok(None);
    }
    let prompts = partial.join("etc/txt.done.data");
    let Ok(text) = std::fs::read_to_string(&prompts) else { return Ok(None) };
    let mut items = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let parsed =
            line.trim().strip_prefix("( ").and_then(|l| l.strip_suffix("\" )")).and_then(|l| l.split_once(" \""));
        let Some((id, sentence)) = parsed else {
            return Err(CorpusError::Recipe(format!("{}:{}: not a prompt line: {line:?}", prompts.display(), n + 1)));
        };
        items.push((id.to_string(), sentence.to_string()));
    }
    let all = items.iter().all(|(id, _)| partial.join("hts").join(format!("{id}.lab")).is_file());
    Ok(all.then_some(items))
}

fn partial_dir(out: &Path) -> PathBuf {
    let mut name = out.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".partial");
    out.with_file_name(name)
}
