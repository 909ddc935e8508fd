//! The G2P model against a naive implementation written here from PyTorch's
//! `nn.GRU` documentation (f32, one sequence at a time), and the beam
//! search's contracts: width 1 is greedy, scores are the teacher-forced
//! log-probabilities, wider beams find better words on average.

use dv_synth::random::{random_voice, random_voice_with_g2p};
use dv_synth::{G2p, SynthError};
use dv_voice::{G2pConfig, G2pGolden, G2pWord, Golden, Tensor, Voice, WavenetConfig};

const WAVENET: WavenetConfig = WavenetConfig { layers: 2, residual_channels: 8, skip_channels: 8, dilation_cycle: 2 };

const WORDS: [&str; 12] =
    ["a", "cat", "hello", "zyx", "o'neill", "re-enter", "st.", "pneumonia", "qwerty", "aardvark", "x", "deepvoice"];

fn small(layers: usize) -> G2pConfig {
    G2pConfig::new(8, 12, layers, 40, 5)
}

fn get<'a>(v: &'a Voice, name: &str) -> &'a [f32] {
    v.tensor(name).unwrap().data()
}

/// `W x + b` for `W` `[rows, x.len()]`.
fn linear(w: &[f32], b: &[f32], x: &[f32]) -> Vec<f32> {
    w.chunks(x.len()).zip(b).map(|(row, bb)| row.iter().zip(x).map(|(a, c)| a * c).sum::<f32>() + bb).collect()
}

fn sig(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// One step of `torch.nn.GRU` as its documentation states it, gate by gate.
fn gru_cell(v: &Voice, prefix: &str, x: &[f32], hv: &[f32]) -> Vec<f32> {
    let h = hv.len();
    let d = x.len();
    let t = |n: &str| get(v, &format!("{prefix}.{n}_l0"));
    let (w_ih, w_hh, b_ih, b_hh) = (t("weight_ih"), t("weight_hh"), t("bias_ih"), t("bias_hh"));
    let gate = |g: usize| {
        let i = linear(&w_ih[g * h * d..(g + 1) * h * d], &b_ih[g * h..(g + 1) * h], x);
        let hh = linear(&w_hh[g * h * h..(g + 1) * h * h], &b_hh[g * h..(g + 1) * h], hv);
        (i, hh)
    };
    let ((ri, rh), (zi, zh), (ni, nh)) = (gate(0), gate(1), gate(2));
    (0..h)
        .map(|j| {
            let r = sig(ri[j] + rh[j]);
            let z = sig(zi[j] + zh[j]);
            let n = (ni[j] + r * nh[j]).tanh();
            (1.0 - z) * n + z * hv[j]
        })
        .collect()
}

/// Teacher-forced log-probabilities `[T + 1][outputs]`, straight from
/// FORMAT.md: encoder over the letters, decoder from the forward finals,
/// attention over the top encoder layer when the model has it.
fn naive(v: &Voice, letters: &[usize], tokens: &[usize]) -> Vec<Vec<f32>> {
    let g = v.config().g2p.clone().unwrap();
    let (e, h) = (g.embed, g.hidden);
    let emb = get(v, "g2p.enc_embed");
    let mut xs: Vec<Vec<f32>> = letters.iter().map(|&l| emb[l * e..(l + 1) * e].to_vec()).collect();
    let mut init = Vec::new();
    for k in 0..g.layers {
        let mut fwd = Vec::new();
        let mut hv = vec![0.0f32; h];
        for x in &xs {
            hv = gru_cell(v, &format!("g2p.enc.{k}.fwd"), x, &hv);
            fwd.push(hv.clone());
        }
        init.push(hv);
        let mut bwd = vec![Vec::new(); xs.len()];
        let mut hv = vec![0.0f32; h];
        for t in (0..xs.len()).rev() {
            hv = gru_cell(v, &format!("g2p.enc.{k}.bwd"), &xs[t], &hv);
            bwd[t] = hv.clone();
        }
        xs = fwd.into_iter().zip(bwd).map(|(f, b)| [f, b].concat()).collect();
    }
    let demb = get(v, "g2p.dec_embed");
    let mut states = init;
    let mut out = Vec::new();
    for &t in std::iter::once(&g.outputs).chain(tokens) {
        let mut x = demb[t * e..(t + 1) * e].to_vec();
        for (k, s) in states.iter_mut().enumerate() {
            *s = gru_cell(v, &format!("g2p.dec.{k}"), &x, s);
            x = s.clone();
        }
        if g.attention {
            // As the trainer computes it: u = y W_a, s_j = u · m_j, softmax, context, combine.
            let w = get(v, "g2p.att.w"); // [H, 2H]
            let u: Vec<f32> = (0..2 * h).map(|b| (0..h).map(|a| x[a] * w[a * 2 * h + b]).sum()).collect();
            let s: Vec<f32> = xs.iter().map(|m| u.iter().zip(m).map(|(a, b)| a * b).sum()).collect();
            let max = s.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let total: f32 = s.iter().map(|v| (v - max).exp()).sum();
            let mut c = vec![0.0f32; 2 * h];
            for (sj, m) in s.iter().zip(&xs) {
                for (cv, mv) in c.iter_mut().zip(m) {
                    *cv += (sj - max).exp() / total * mv;
                }
            }
            let joined = [x.clone(), c].concat();
            let comb = linear(get(v, "g2p.att.combine.weight"), get(v, "g2p.att.combine.bias"), &joined);
            x = comb.iter().map(|v| v.tanh()).collect();
        }
        let logits = linear(get(v, "g2p.out.weight"), get(v, "g2p.out.bias"), &x);
        let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let lse = max + logits.iter().map(|l| (l - max).exp()).sum::<f32>().ln();
        out.push(logits.iter().map(|l| l - lse).collect());
    }
    out
}

/// A random G2P voice whose EOS logit is raised by `eos`, so that words end
/// within the step limit as a trained model's do.
fn g2p_voice(g: G2pConfig, seed: u64, eos: f32) -> Voice {
    let v = random_voice_with_g2p(WAVENET, g, seed).unwrap();
    let mut w = v.weights().clone();
    w.get_mut("g2p.out.bias").unwrap().data_mut()[0] += eos;
    Voice::new(v.config().clone(), w).unwrap()
}

/// Output tokens of `(phoneme, stress)` pairs: `1 + phoneme · 5 + stress`.
fn tokens(pairs: &[(usize, usize)]) -> Vec<usize> {
    pairs.iter().map(|&(p, s)| 1 + p * 5 + s).collect()
}

#[test]
fn encoder_and_decoder_match_naive_pytorch_gru() {
    let attention = |g: G2pConfig| G2pConfig { attention: true, ..g };
    for (g, seed) in [
        (small(1), 1),
        (small(3), 2),
        (G2pConfig::new(64, 160, 3, 40, 5), 3),
        (attention(small(1)), 4),
        (attention(small(3)), 5),
        (attention(G2pConfig::new(64, 160, 3, 40, 5)), 6),
    ] {
        let voice = random_voice_with_g2p(WAVENET, g.clone(), seed).unwrap();
        let model = G2p::new(&voice).unwrap();
        for word in ["cat", "o'neill", "x"] {
            let letters = model.encode_word(word).unwrap();
            let toks = [5, 200, 1, 77, 3];
            let got = model.log_probs(word, &toks).unwrap();
            let want = naive(&voice, &letters, &toks);
            assert_eq!(got.len(), 6 * 201);
            let mut max = 0.0f32;
            for (row, w) in got.chunks_exact(201).zip(&want) {
                for (a, b) in row.iter().zip(w) {
                    max = max.max((a - b).abs());
                }
                let total: f64 = row.iter().map(|&v| (v as f64).exp()).sum();
                assert!((total - 1.0).abs() < 1e-5, "{total}");
            }
            assert!(max < 1e-4, "{g:?} {word}: max |Δ| = {max}");
        }
    }
}

#[test]
fn every_layer_and_direction_matters() {
    let g = small(2);
    let voice = random_voice_with_g2p(WAVENET, g.clone(), 4).unwrap();
    let base = G2p::new(&voice).unwrap().log_probs("deep", &[7, 9]).unwrap();
    for name in ["g2p.enc.0.bwd.weight_hh_l0", "g2p.enc.1.fwd.bias_ih_l0", "g2p.dec.1.weight_ih_l0", "g2p.enc_embed"] {
        let mut w = voice.weights().clone();
        let t = w.get_mut(name).unwrap();
        t.data_mut().iter_mut().for_each(|v| *v += 0.3);
        let changed = G2p::new(&Voice::new(voice.config().clone(), w).unwrap()).unwrap();
        let other = changed.log_probs("deep", &[7, 9]).unwrap();
        assert!(base.iter().zip(&other).any(|(a, b)| (a - b).abs() > 1e-4), "{name} has no effect");
    }
    // The last encoder layer's backward direction feeds nothing.
    let mut w = voice.weights().clone();
    w.get_mut("g2p.enc.1.bwd.weight_ih_l0").unwrap().data_mut().iter_mut().for_each(|v| *v += 0.3);
    let same = G2p::new(&Voice::new(voice.config().clone(), w).unwrap()).unwrap();
    assert_eq!(same.log_probs("deep", &[7, 9]).unwrap(), base);
}

#[test]
fn width_one_is_greedy_and_scores_are_log_probs() {
    for (g, seed, eos) in [(small(1), 5, 0.0), (small(3), 6, 3.0), (small(2), 7, 4.0)] {
        let voice = g2p_voice(g.clone(), seed, eos);
        let model = G2p::new(&voice).unwrap();
        let mut ended = 0;
        for word in WORDS {
            let greedy = model.greedy(word).unwrap();
            let beam1 = model.beam(word, 1).unwrap();
            assert_eq!(beam1.0, greedy.0, "{word}");
            assert_eq!(beam1.1.to_bits(), greedy.1.to_bits(), "{word}");
            for width in [1, 5] {
                let (pairs, score) = model.beam(word, width).unwrap();
                assert!(pairs.iter().all(|&(p, s)| p < 40 && s < 5));
                let toks = tokens(&pairs);
                let lp = model.log_probs(word, &toks).unwrap();
                let finished = toks.len() < 2 * word.len() + 8;
                let mut sum: f64 = toks.iter().enumerate().map(|(i, &t)| lp[i * 201 + t] as f64).sum();
                if finished {
                    sum += lp[toks.len() * 201] as f64; // EOS
                    ended += 1;
                }
                assert!((sum - score as f64).abs() < 1e-4 * sum.abs().max(1.0), "{word} ×{width}: {sum} vs {score}");
                assert!(score <= 0.0);
            }
        }
        if eos > 0.0 {
            assert!(ended > 0, "no word ever ended: the test exercises nothing of EOS");
        }
    }
}

/// Beam search does not promise a better score than greedy for every word
/// (greedy's prefix can be pruned), only in practice: on these random
/// models it holds on average, and per word for most words but not all.
#[test]
fn a_wider_beam_scores_at_least_greedy_on_average() {
    let (mut better, mut worse, mut n) = (0, 0, 0);
    let (mut sum1, mut sum5) = (0.0f64, 0.0f64);
    for (seed, eos) in [(7, 0.0), (8, 2.0), (9, 4.0)] {
        let model = G2p::new(&g2p_voice(small(2), seed, eos)).unwrap();
        for word in WORDS {
            let (_, s1) = model.greedy(word).unwrap();
            let (_, s5) = model.beam(word, 5).unwrap();
            sum1 += s1 as f64;
            sum5 += s5 as f64;
            n += 1;
            if s5 > s1 {
                better += 1;
            } else if s5 < s1 {
                worse += 1;
            }
        }
    }
    let (m1, m5) = (sum1 / n as f64, sum5 / n as f64);
    eprintln!("width 5 vs greedy over {n} words: {better} better, {worse} worse; mean score {m5:.3} vs {m1:.3}");
    assert!(m5 > m1, "mean score: width 5 {m5} <= greedy {m1}");
    assert!(better > worse, "{better} better, {worse} worse");
}

#[test]
fn tokens_map_to_phoneme_and_stress_and_length_is_bounded() {
    // Constant logits: the decoder ignores its state.
    let g = small(1);
    let v = random_voice_with_g2p(WAVENET, g.clone(), 11).unwrap();
    let with_bias = |bias: Vec<f32>| {
        let mut w = v.weights().clone();
        w.insert("g2p.out.weight".into(), Tensor::zeros(vec![201, 12]));
        w.insert("g2p.out.bias".into(), Tensor::new("b", vec![201], bias).unwrap());
        G2p::new(&Voice::new(v.config().clone(), w).unwrap()).unwrap()
    };
    let mut bias = vec![0.0f32; 201];
    bias[1 + 3 * 5 + 2] = 10.0; // phoneme 3, stress 2
    let model = with_bias(bias.clone());
    let lp = model.log_probs("abc", &[]).unwrap();
    // Greedy never meets EOS: 2n + 8 tokens, no EOS in the score.
    for (pairs, score) in [model.greedy("abc").unwrap(), model.beam("abc", 1).unwrap()] {
        assert_eq!(pairs, vec![(3, 2); 2 * 3 + 8]);
        assert!((score - 14.0 * lp[18]).abs() < 1e-4, "{score}");
    }
    // Width 5 finishes the empty word at step 0 (EOS ranks second, ahead of
    // the tied tokens 1 …) and, when the step limit ends the search, a
    // finished word wins over any live one (FORMAT.md).
    let (pairs, score) = model.beam("abc", 5).unwrap();
    assert!(pairs.is_empty());
    assert_eq!(score, lp[0]);
    bias[0] = 10.5; // EOS first
    let (pairs, score) = with_bias(bias).beam("abc", 5).unwrap();
    assert!(pairs.is_empty());
    assert!(score < 0.0 && score > -1.0);
}

#[test]
fn bad_words_widths_and_missing_model_are_errors() {
    let voice = random_voice_with_g2p(WAVENET, small(1), 12).unwrap();
    let model = G2p::new(&voice).unwrap();
    assert_eq!(model.encode_word("Az'-.").unwrap(), vec![1, 26, 27, 28, 29]);
    assert_eq!(model.beam("HeLLo", 5).unwrap(), model.beam("hello", 5).unwrap());
    for (word, c) in [("naïve", 'ï'), ("two words", ' '), ("r2d2", '2')] {
        match model.beam(word, 5) {
            Err(SynthError::Grapheme { word: w, character }) => assert_eq!((w.as_str(), character), (word, c)),
            other => panic!("{word}: expected a grapheme error, got {other:?}"),
        }
    }
    let err = model.greedy("naïve").unwrap_err().to_string();
    assert!(err.contains("naïve") && err.contains('ï'), "{err}");
    assert!(matches!(model.greedy(""), Err(SynthError::InvalidOption { what: "word", .. })));
    for width in [0, 257] {
        assert!(matches!(model.beam("cat", width), Err(SynthError::InvalidOption { what: "beam width", .. })));
    }
    match model.log_probs("cat", &[3, 201]) {
        Err(SynthError::OutOfRange { position: 1, value: 201, limit: 201, .. }) => {}
        other => panic!("expected a token out of range, got {other:?}"),
    }
    assert!(matches!(model.log_probs("cat", &[0]), Err(SynthError::OutOfRange { value: 0, .. })));
    let plain = random_voice(WAVENET, 1).unwrap();
    assert!(matches!(G2p::new(&plain), Err(SynthError::NoModel { what: "g2p" })));
}

#[test]
fn golden_parity_through_a_package_on_disk() {
    let voice = random_voice_with_g2p(WAVENET, small(2), 13).unwrap();
    let model = G2p::new(&voice).unwrap();
    assert_eq!(model.golden_parity(&voice).unwrap(), None);
    let config = voice.config().clone();
    let mut words: Vec<G2pWord> = WORDS
        .iter()
        .map(|w| {
            let (pairs, _) = model.beam(w, 5).unwrap();
            G2pWord { letters: model.encode_word(w).unwrap(), tokens: tokens(&pairs) }
        })
        .collect();
    let golden = |words: &[G2pWord]| Golden {
        features: Tensor::zeros(vec![1, 227]),
        conditioning: Tensor::zeros(vec![1, config.conditioning_width()]),
        samples: vec![128; 4],
        logits: Tensor::zeros(vec![4, 256]),
        duration: None,
        g2p: Some(G2pGolden::new(&config, words).unwrap()),
    };
    let dir = std::env::temp_dir().join(format!("dv-synth-g2p-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    voice.clone().with_golden(golden(&words)).unwrap().save(&dir).unwrap();
    let back = Voice::read(&dir).unwrap();
    assert_eq!(G2p::new(&back).unwrap().golden_parity(&back).unwrap(), Some(0));
    // The trainer decoded two words differently.
    words[1].tokens.push(3);
    words[4].tokens.clear();
    let v = voice.with_golden(golden(&words)).unwrap();
    assert_eq!(model.golden_parity(&v).unwrap(), Some(2));
    std::fs::remove_dir_all(&dir).unwrap();
}
