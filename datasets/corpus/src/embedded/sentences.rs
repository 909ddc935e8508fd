//! The sentence list of the embedded corpus: plain English sentences from
//! Debian's `fortunes`, in a fixed shuffle.

use std::collections::HashSet;
use std::path::Path;

use crate::CorpusError;

/// Shortest and longest sentence kept, in words.
pub const MIN_WORDS: usize = 5;
pub const MAX_WORDS: usize = 20;

/// Reads the words of festival's CMU lexicon (`cmudict-0.4.out`, one
/// `("word" pos (syllables))` entry per line).
pub fn festival_words(path: &Path) -> Result<HashSet<String>, CorpusError> {
    let text = std::fs::read_to_string(path).map_err(CorpusError::io(path))?;
    Ok(text
        .lines()
        .filter_map(|l| l.strip_prefix("(\"").and_then(|r| r.split('"').next()))
        .map(str::to_string)
        .collect())
}

/// Splits a fortune file into entries (separated by `%` lines), dropping
/// attribution lines (`-- Author`) and joining the rest into one line each.
fn entries(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for line in text.lines() {
        if line.trim() == "%" {
            out.push(std::mem::take(&mut cur));
            continue;
        }
        let t = line.trim();
        if t.starts_with("--") || t.starts_with('\u{2014}') {
            continue;
        }
        cur.push(' ');
        cur.push_str(t);
    }
    out.push(cur);
    out.into_iter().map(|e| e.split_whitespace().collect::<Vec<_>>().join(" ")).filter(|e| !e.is_empty()).collect()
}

/// Cuts an entry into sentences at `.`, `!` or `?` followed by a space or
/// the end.
fn split_sentences(entry: &str) -> Vec<&str> {
    let b = entry.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    for i in 0..b.len() {
        let end_mark = matches!(b[i], b'.' | b'!' | b'?');
        let boundary = i + 1 == b.len() || b[i + 1] == b' ';
        if end_mark && boundary {
            out.push(entry[start..=i].trim());
            start = i + 1;
        }
    }
    out
}

/// Whether a sentence is plain English the recipe keeps: letters, spaces and
/// `, ; . ! ?` only, punctuation only at the end of words, a capital first
/// letter, one final `.`, `!` or `?`, 5–20 words, no all-capital words
/// longer than one letter, and every word in festival's lexicon.
pub fn is_plain(sentence: &str, lexicon: &HashSet<String>) -> bool {
    if !sentence.chars().all(|c| c.is_ascii_alphabetic() || matches!(c, ' ' | ',' | ';' | '.' | '!' | '?')) {
        return false;
    }
    if !sentence.starts_with(|c: char| c.is_ascii_uppercase()) || !sentence.ends_with(['.', '!', '?']) {
        return false;
    }
    let words: Vec<&str> = sentence.split(' ').collect();
    if !(MIN_WORDS..=MAX_WORDS).contains(&words.len()) {
        return false;
    }
    let last = words.len() - 1;
    words.iter().enumerate().all(|(i, w)| {
        let core = w.trim_end_matches([',', ';', '.', '!', '?']);
        let tail = &w[core.len()..];
        let tail_ok = if i == last {
            tail.len() == 1 && tail != "," && tail != ";"
        } else {
            tail.len() <= 1 && !tail.contains(['.', '!', '?'])
        };
        let caps = core.len() > 1 && core.chars().all(|c| c.is_ascii_uppercase());
        !core.is_empty() && tail_ok && !caps && lexicon.contains(&core.to_ascii_lowercase())
    })
}

/// Every plain sentence of the fortune files in `dir` (top-level files
/// without an extension, in name order), without repeats, in order of first
/// appearance.
pub fn collect(dir: &Path, lexicon: &HashSet<String>) -> Result<Vec<String>, CorpusError> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(CorpusError::io(dir))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_none() && !p.is_symlink())
        .collect();
    files.sort();
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for f in files {
        let bytes = std::fs::read(&f).map_err(CorpusError::io(&f))?;
        let text = String::from_utf8_lossy(&bytes);
        for e in entries(&text) {
            for s in split_sentences(&e) {
                if is_plain(s, lexicon) && seen.insert(s.to_string()) {
                    out.push(s.to_string());
                }
            }
        }
    }
    Ok(out)
}

/// Fisher–Yates shuffle under a seed, drawn from SplitMix64 (a fixed
/// generator, so that the shuffle never changes with a dependency's version).
pub fn shuffle<T>(v: &mut [T], seed: u64) {
    let mut rng = dv_util::SplitMix64::new(seed);
    for i in (1..v.len()).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        v.swap(i, j);
    }
}
