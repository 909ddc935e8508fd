//! `[model.sizes]`: the flat table a run config writes maps onto the voice
//! package's sections plus the training fields, refuses a key it does not
//! know by name, and means what the preset of the same sizes means.

use dv_config::{DurationConfig, G2pConfig, RunConfig, WavenetConfig};

/// A run config of `model` (a `[model]` section's lines) on the data that
/// model trains on.
fn config(model: &str) -> String {
    let data = if model.contains("\"wavenet\"") {
        "kind = \"chunks\"\nurl = \"features\""
    } else if model.contains("\"duration\"") {
        "kind = \"prosody\"\nurl = \"features\""
    } else {
        "kind = \"lexicon\""
    };
    format!(
        "[model]\n{model}\n[data]\n{data}\n[optimizer]\nlr = 1e-3\n[schedule]\nrate = 0.9\nevery = 100\n\
         [train]\nsteps = 10\nbatch = 4\n[checkpoint]\nurl = \"ck\"\nevery = 5\n"
    )
}

fn load(model: &str) -> RunConfig {
    RunConfig::from_toml("run.toml", &config(model)).unwrap_or_else(|e| panic!("{e}\n{model}"))
}

#[test]
fn a_preset_and_the_same_sizes_written_out_are_one_config() {
    let wavenet = |m: &str| load(m).wavenet_sizes("run.toml").unwrap();
    let table2 = wavenet("kind = \"wavenet\"\npreset = \"20x64x128\"");
    assert_eq!(table2, WavenetConfig::new(dv_voice::WavenetConfig::preset("20x64x128").unwrap()));
    for sizes in [
        "layers = 20\nresidual_channels = 64\nskip_channels = 128",
        "layers = 20\nresidual_channels = 64\nskip_channels = 128\ndilation_cycle = 10\nquantization_channels = 256\n\
         conditioning_input = 227\nconditioning_hidden = 128\nqrnn_layers = 2\nhop = 64\nbf16 = false\nfused = true",
    ] {
        assert_eq!(wavenet(&format!("kind = \"wavenet\"\n[model.sizes]\n{sizes}")), table2, "{sizes}");
    }
    let tiny = wavenet("kind = \"wavenet\"\npreset = \"tiny\"");
    let written = "layers = 4\nresidual_channels = 8\nskip_channels = 16\ndilation_cycle = 3\nconditioning_hidden = 8";
    assert_eq!(wavenet(&format!("kind = \"wavenet\"\n[model.sizes]\n{written}")), tiny);
    assert_eq!(wavenet("kind = \"wavenet\"\npreset = \"paper\""), wavenet("kind = \"wavenet\""));
    assert_eq!(wavenet("kind = \"wavenet\"").wavenet, dv_voice::WavenetConfig::preset("40x64x256").unwrap());

    let duration = |m: &str| load(m).duration_sizes("run.toml").unwrap();
    let paper = duration("kind = \"duration\"\npreset = \"paper\"");
    assert_eq!(paper, DurationConfig::paper());
    assert_eq!(paper.duration, dv_voice::DurationConfig::paper(true));
    let written = "fc = 256\ngru = 128\ngru_layers = 2\nf0_points = 20\ndropout = 0.2";
    assert_eq!(duration(&format!("kind = \"duration\"\n[model.sizes]\n{written}")), paper);
    assert_eq!(duration("kind = \"duration\"\n[model.sizes]\nfc = 16\ngru = 8"), DurationConfig::tiny());

    let g2p = |m: &str| load(m).g2p_sizes("run.toml").unwrap();
    let compact = g2p("kind = \"g2p\"\npreset = \"compact\"");
    assert_eq!(compact, G2pConfig::compact());
    assert_eq!(compact.g2p, dv_voice::G2pConfig::new(64, 160, 3, 40, 5));
    let written =
        "embed = 64\nhidden = 160\nlayers = 3\ndropout = 0.05\nbeam = 5\nattention = false\nlabel_smoothing = 0.0";
    assert_eq!(g2p(&format!("kind = \"g2p\"\n[model.sizes]\n{written}")), compact);
    assert_eq!(g2p("kind = \"g2p\"\n[model.sizes]\nembed = 64\nhidden = 160"), compact);
}

#[test]
fn an_unknown_key_in_model_sizes_is_refused_by_name() {
    for (kind, sizes, key) in [
        ("wavenet", "layers = 20\nresidual_channels = 64\nskip_channels = 128", "colour"),
        // Keys of the voice package's sections that a run config does not write.
        ("wavenet", "layers = 20\nresidual_channels = 64\nskip_channels = 128", "input_dim"),
        ("wavenet", "layers = 20\nresidual_channels = 64\nskip_channels = 128", "stress"),
        ("duration", "fc = 16", "colour"),
        ("duration", "fc = 16", "duration_unit_s"),
        ("g2p", "embed = 8\nhidden = 16", "colour"),
        ("g2p", "embed = 8\nhidden = 16", "outputs"),
    ] {
        let text = config(&format!("kind = \"{kind}\"\n[model.sizes]\n{sizes}\n{key} = 1"));
        let e = RunConfig::from_toml("run.toml", &text).unwrap_err().to_string();
        assert!(e.starts_with("config run.toml: ") && e.contains(&format!("unknown field `{key}`")), "{kind}: {e}");
    }
}

#[test]
fn model_sizes_write_the_flat_table_a_checkpoint_stores() {
    let cfg = load(
        "kind = \"wavenet\"\n[model.sizes]\nlayers = 20\nresidual_channels = 64\nskip_channels = 128\nbf16 = true",
    );
    let text = cfg.to_toml().unwrap();
    let want = "[model.sizes]\nlayers = 20\nresidual_channels = 64\nskip_channels = 128\ndilation_cycle = 10\n\
                quantization_channels = 256\nconditioning_input = 227\nconditioning_hidden = 128\nqrnn_layers = 2\n\
                hop = 64\nbf16 = true\nfused = true\n";
    assert!(text.contains(want), "{text}");
    let text = load("kind = \"duration\"\npreset = \"tiny\"").to_toml().unwrap();
    assert!(text.contains("[model]\nkind = \"duration\"\npreset = \"tiny\"\n"), "{text}");
    let text = load("kind = \"g2p\"\n[model.sizes]\nembed = 8\nhidden = 16").to_toml().unwrap();
    let want = "[model.sizes]\nembed = 8\nhidden = 16\nlayers = 3\ndropout = 0.05\nbeam = 5\nattention = false\n\
                label_smoothing = 0.0\n";
    assert!(text.contains(want), "{text}");
}
