//! Every corpus index reader: the first byte picks the layout, the rest is its
//! index file (LJSpeech metadata.csv, ARCTIC txt.done.data plus one lab and f0
//! label, Blizzard prompts.gui, a VCTK transcript, a TSV table). Audio files
//! are absent, so every utterance that parses must come back as a bad item.
#![no_main]
use dv_corpus::CorpusKind;
use libfuzzer_sys::fuzz_target;
use std::fs;
mod scratch;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, bytes)) = data.split_first() else { return };
    let root = scratch::dir().join("corpus");
    let _ = fs::remove_dir_all(&root);
    fs::create_dir_all(&root).unwrap();
    let (kind, location) = match pick % 5 {
        0 => {
            fs::create_dir_all(root.join("wavs")).unwrap();
            fs::write(root.join("metadata.csv"), bytes).unwrap();
            (CorpusKind::LjSpeech, root.clone())
        }
        1 => {
            for d in ["etc", "wav", "lab", "f0"] {
                fs::create_dir_all(root.join(d)).unwrap();
            }
            // The same bytes as the index, as a label file and as an f0 track.
            fs::write(root.join("lab/arctic_a0001.lab"), bytes).unwrap();
            fs::write(root.join("f0/arctic_a0001.f0"), bytes).unwrap();
            fs::write(root.join("etc/txt.done.data"), bytes).unwrap();
            (CorpusKind::Arctic, root.clone())
        }
        2 => {
            fs::create_dir_all(root.join("wavn")).unwrap();
            fs::write(root.join("prompts.gui"), bytes).unwrap();
            (CorpusKind::Blizzard2013, root.clone())
        }
        3 => {
            fs::create_dir_all(root.join("txt/p225")).unwrap();
            fs::create_dir_all(root.join("wav48/p225")).unwrap();
            fs::write(root.join("txt/p225/p225_001.txt"), bytes).unwrap();
            (CorpusKind::Vctk, root.clone())
        }
        _ => {
            let file = root.join("corpus.tsv");
            fs::write(&file, bytes).unwrap();
            (CorpusKind::Table, file)
        }
    };
    if let Ok(corpus) = dv_corpus::read(location.to_str().unwrap(), Some(kind)) {
        assert!(corpus.utterances.is_empty(), "an utterance without audio was accepted");
    }
});
