//! The G2P model (§3.1): letters and tokens, the hash split, edit distance,
//! a tiny lexicon overfits, width-1 beam search is greedy decoding, width 5
//! finds hypotheses scoring at least as well as greedy, an ensemble decodes
//! with the mean of its models' log-probabilities.

use dv_torch::tch;
use dv_torch::tch::{nn::OptimizerConfig, Device, Kind, Tensor};
use dv_train::g2p::{encode_word, token, BOS, EOS};
use dv_train::pronunciation::{edit_distance, part_of, Part};
use dv_train::{Batch, Dataset, G2p, G2pConfig, LexiconConfig, Model, Pronunciations};

#[test]
fn letters_tokens_and_the_split() {
    assert_eq!(encode_word("Ab'z-.").unwrap(), vec![1, 2, 27, 26, 28, 29]);
    assert_eq!(encode_word("caf\u{e9}"), Err('\u{e9}'));
    assert_eq!(token(0, 0), 1);
    assert_eq!(token(39, 4), 200);
    assert_eq!(dv_train::g2p::untoken(token(17, 2)), (17, 2));
    assert_eq!(dv_train::g2p::untoken(200), (39, 4));
    let c = LexiconConfig { cmudict: None, test_fraction: 0.05, dev_fraction: 0.05, seed: 0, reverse: false };
    let parts: Vec<Part> = (0..20_000).map(|i| part_of(&format!("word{i}"), &c)).collect();
    let test = parts.iter().filter(|p| **p == Part::Test).count() as f64 / 20_000.0;
    let dev = parts.iter().filter(|p| **p == Part::Dev).count() as f64 / 20_000.0;
    assert!((test - 0.05).abs() < 0.01 && (dev - 0.05).abs() < 0.01, "test {test}, dev {dev}");
    assert_eq!(part_of("hello", &c), part_of("hello", &c));
    assert_eq!(edit_distance(&[1, 2, 3], &[1, 3]), 1);
    assert_eq!(edit_distance(&[], &[4, 5]), 2);
    assert_eq!(edit_distance(&[1, 2], &[2, 1]), 2);
}

/// A lexicon of a few words with made-up but consistent pronunciations.
fn toy() -> Pronunciations {
    let words = ["cat", "act", "tac", "at", "ta", "cattac"];
    let mut p = Pronunciations::default();
    for w in words {
        p.words.push(w.into());
        p.letters.push(encode_word(w).unwrap());
        p.tokens.push(w.chars().map(|c| token((c as usize) % 40, (c as usize) % 3)).collect());
    }
    p
}

fn greedy(m: &G2p, letters: &[i64]) -> (Vec<i64>, f64) {
    greedy_mean(&[m], letters)
}

/// Greedy decoding one word at a time on the mean of the models' log-probabilities.
fn greedy_mean(models: &[&G2p], letters: &[i64]) -> (Vec<i64>, f64) {
    let n = letters.len() as i64;
    let x = Tensor::from_slice(letters).view([1, n]);
    let encoded: Vec<_> = models.iter().map(|m| tch::no_grad(|| m.encode(&x, &[n], false, 0, &[0])).unwrap()).collect();
    let mut states: Vec<Vec<Tensor>> =
        encoded.iter().map(|e| e.states.iter().map(|t| t.shallow_clone()).collect()).collect();
    let (mut prev, mut out, mut score) = (BOS, vec![], 0.0);
    for _ in 0..(2 * n + 8) {
        let inp = Tensor::from_slice(&[prev]).view([1, 1]);
        let mut lp = Tensor::zeros([dv_train::g2p::G2P_OUTPUTS], (Kind::Double, Device::Cpu));
        for (k, m) in models.iter().enumerate() {
            let (logits, st) = tch::no_grad(|| m.decode(&inp, &states[k], &encoded[k], false, 0, &[0])).unwrap();
            states[k] = st;
            lp += logits.log_softmax(-1, Kind::Float).view([-1]).to_kind(Kind::Double) / models.len() as f64;
        }
        let best = lp.argmax(0, false).int64_value(&[]);
        score += lp.double_value(&[best]);
        if best == EOS {
            break;
        }
        out.push(best);
        prev = best;
    }
    (out, score)
}

#[test]
fn a_tiny_lexicon_overfits_and_decodes_exactly() {
    for attention in [false, true] {
        tiny_lexicon_overfits(attention);
    }
}

/// The tiny preset without dropout, with or without attention.
fn tiny(attention: bool) -> G2pConfig {
    let mut c = G2pConfig { dropout: 0.0, ..G2pConfig::tiny() };
    c.g2p.attention = attention;
    c
}

fn tiny_lexicon_overfits(attention: bool) {
    let c = tiny(attention);
    let m = dv_train::with_rng(2, || G2p::new(&c, Device::Cpu)).unwrap();
    let data = toy();
    let batch: Batch = data.batch(&(0..data.len()).collect::<Vec<_>>(), Device::Cpu).unwrap();
    let mut opt = tch::nn::Adam::default().build(m.var_store(), 2e-2).unwrap();
    let first = m.loss_sum(&batch, true, 0).unwrap().double_value(&[]);
    for _ in 0..300 {
        let l = m.loss_sum(&batch, true, 0).unwrap();
        opt.backward_step(&l);
    }
    let last = m.loss_sum(&batch, false, 0).unwrap().double_value(&[]);
    assert!(last < 0.05 * first, "attention {attention}: loss {first} → {last}");
    for i in 0..data.len() {
        let (hyp, _) = m.beam(&data.letters[i], 5).unwrap();
        assert_eq!(hyp, data.tokens[i], "attention {attention}: {}", data.words[i]);
    }
}

#[test]
fn width_one_is_greedy_and_width_five_scores_at_least_as_well() {
    for attention in [false, true] {
        width_one_is_greedy(attention);
    }
}

fn width_one_is_greedy(attention: bool) {
    let c = tiny(attention);
    let m = dv_train::with_rng(3, || G2p::new(&c, Device::Cpu)).unwrap();
    let words = ["speech", "synthesis", "deep", "voice", "rust", "a", "queue", "onomatopoeia"];
    let (mut greedy_total, mut beam_total) = (0.0, 0.0);
    for w in words {
        let l = encode_word(w).unwrap();
        let (g, gs) = greedy(&m, &l);
        let (b1, s1) = m.beam(&l, 1).unwrap();
        assert_eq!(b1, g, "{w}: width 1 differs from greedy");
        assert!((s1 - gs).abs() < 1e-4, "{w}: scores {s1} vs {gs}");
        let (_, s5) = m.beam(&l, 5).unwrap();
        greedy_total += gs;
        beam_total += s5;
    }
    assert!(beam_total >= greedy_total - 1e-6, "width 5 mean {beam_total} below greedy {greedy_total}");
}

/// An ensemble of one model twice decodes as that model; two different models
/// at width 1 follow the argmax of their mean log-probabilities (by hand,
/// one model at a time), and width 5 scores at least as well.
#[test]
fn an_ensemble_decodes_with_the_mean_of_its_models() {
    use dv_train::g2p::beam_ensemble;
    let a = dv_train::with_rng(5, || G2p::new(&tiny(false), Device::Cpu)).unwrap();
    let b = dv_train::with_rng(6, || G2p::new(&tiny(true), Device::Cpu)).unwrap();
    let (mut mean1, mut mean5) = (0.0, 0.0);
    let mut differs = 0;
    for w in ["speech", "synthesis", "deep", "voice", "rust", "a", "queue", "onomatopoeia"] {
        let l = encode_word(w).unwrap();
        let (alone, sa) = a.beam(&l, 5).unwrap();
        let (twice, st) = beam_ensemble(&[&a, &a], &l, 5).unwrap();
        assert_eq!(twice, alone, "{w}");
        assert!((st - sa).abs() < 1e-5, "{w}: {st} vs {sa}");
        let (g, gs) = greedy_mean(&[&a, &b], &l);
        let (e1, s1) = beam_ensemble(&[&a, &b], &l, 1).unwrap();
        assert_eq!(e1, g, "{w}: width 1 differs from greedy on the mean");
        assert!((s1 - gs).abs() < 1e-4, "{w}: {s1} vs {gs}");
        differs += usize::from(e1 != greedy(&a, &l).0);
        mean1 += s1;
        mean5 += beam_ensemble(&[&a, &b], &l, 5).unwrap().1;
    }
    assert!(differs > 0, "the second model never changed a decision: the test would not see it ignored");
    assert!(mean5 >= mean1 - 1e-6, "width 5 {mean5} below width 1 {mean1}");
    // Width 5 batches several live hypotheses per step: each result's score is the mean
    // log-probability of its tokens (and of EOS, if it finished) under teacher forcing, one
    // model and one word at a time.
    for models in [vec![&a], vec![&a, &b]] {
        for w in ["speech", "synthesis", "onomatopoeia", "queue"] {
            let l = encode_word(w).unwrap();
            let (toks, score) = beam_ensemble(&models, &l, 5).unwrap();
            let (with_eos, without) = forced_mean(&models, &l, &toks);
            let d = (score - with_eos).abs().min((score - without).abs());
            assert!(
                d < 1e-4,
                "{w}, {} models: beam score {score}, teacher-forced {with_eos} / {without}",
                models.len()
            );
        }
    }
}

/// The summed mean log-probability of `tokens` then EOS, and of `tokens` alone, fed one at a time.
fn forced_mean(models: &[&G2p], letters: &[i64], tokens: &[i64]) -> (f64, f64) {
    let n = letters.len() as i64;
    let x = Tensor::from_slice(letters).view([1, n]);
    let (mut with_eos, mut without) = (0.0, 0.0);
    for m in models {
        let encoded = tch::no_grad(|| m.encode(&x, &[n], false, 0, &[0])).unwrap();
        let mut states: Vec<Tensor> = encoded.states.iter().map(|t| t.shallow_clone()).collect();
        let mut prev = BOS;
        let mut sum = 0.0;
        for &t in tokens.iter().chain([EOS].iter()) {
            let inp = Tensor::from_slice(&[prev]).view([1, 1]);
            let (logits, st) = tch::no_grad(|| m.decode(&inp, &states, &encoded, false, 0, &[0])).unwrap();
            states = st;
            let lp = logits.log_softmax(-1, Kind::Float).view([-1]).double_value(&[t]);
            if t == EOS {
                with_eos += (sum + lp) / models.len() as f64;
                without += sum / models.len() as f64;
            }
            sum += lp;
            prev = t;
        }
    }
    (with_eos, without)
}

/// Label smoothing ε: the training loss is `(1 − ε) · CE + ε · mean_k(−log p_k)`
/// per token, averaged over each word's tokens and summed over words, by
/// hand from the decoder's logits; validation (train = false) stays plain CE.
#[test]
fn label_smoothing_matches_the_formula_and_leaves_validation_alone() {
    let eps = 0.1;
    let c = G2pConfig { label_smoothing: eps, ..tiny(false) };
    let m = dv_train::with_rng(4, || G2p::new(&c, Device::Cpu)).unwrap();
    let data = toy();
    let batch: Batch = data.batch(&(0..data.len()).collect::<Vec<_>>(), Device::Cpu).unwrap();
    let (mut smoothed, mut plain) = (0.0, 0.0);
    for i in 0..data.len() {
        let (letters, tokens) = (&data.letters[i], &data.tokens[i]);
        let n = letters.len() as i64;
        let encoded = m.encode(&Tensor::from_slice(letters).view([1, n]), &[n], false, 0, &[0]).unwrap();
        let inputs: Vec<i64> = std::iter::once(BOS).chain(tokens.iter().copied()).collect();
        let t = inputs.len() as i64;
        let (logits, _) =
            m.decode(&Tensor::from_slice(&inputs).view([1, t]), &encoded.states, &encoded, false, 0, &[0]).unwrap();
        let lp = logits.log_softmax(-1, Kind::Double).view([t, -1]);
        let targets: Vec<i64> = tokens.iter().copied().chain(std::iter::once(EOS)).collect();
        let (mut s, mut p) = (0.0, 0.0);
        for (row, &y) in targets.iter().enumerate() {
            let ce = -lp.double_value(&[row as i64, y]);
            let uniform = -lp.get(row as i64).mean(Kind::Double).double_value(&[]);
            s += (1.0 - eps) * ce + eps * uniform;
            p += ce;
        }
        smoothed += s / targets.len() as f64;
        plain += p / targets.len() as f64;
    }
    let train = m.loss_sum(&batch, true, 0).unwrap().double_value(&[]);
    let val = m.loss_sum(&batch, false, 0).unwrap().double_value(&[]);
    assert!((train - smoothed).abs() < 1e-4 * smoothed, "train {train} vs {smoothed}");
    assert!((val - plain).abs() < 1e-4 * plain, "validation {val} vs {plain}");
    assert!((train - val).abs() > 1e-3, "smoothing changed nothing: {train} vs {val}");
}

/// The n-best list starts with beam search's answer and is sorted; the
/// teacher-forced sequence score matches forced_mean's; rescoring with weight 0
/// keeps the first hypothesis, and with another model it picks the best sum.
#[test]
fn nbest_lists_sequence_scores_and_right_to_left_rescoring() {
    use dv_train::g2p::{beam_ensemble, beam_ensemble_nbest, rescore, rescore_weights, sequence_score};
    let a = dv_train::with_rng(5, || G2p::new(&tiny(false), Device::Cpu)).unwrap();
    let b = dv_train::with_rng(7, || G2p::new(&tiny(false), Device::Cpu)).unwrap();
    let mut reordered = 0;
    for w in ["speech", "synthesis", "deep", "voice", "onomatopoeia", "queue"] {
        let l = encode_word(w).unwrap();
        let nbest = beam_ensemble_nbest(&[&a], &l, 5, 5).unwrap();
        assert!(!nbest.is_empty());
        assert_eq!(nbest[0], beam_ensemble(&[&a], &l, 5).unwrap(), "{w}");
        assert!(nbest.windows(2).all(|p| p[0].1 >= p[1].1), "{w}: not best first");
        for (toks, score) in &nbest {
            let forced = sequence_score(&[&a], &l, toks).unwrap();
            let (with_eos, without) = forced_mean(&[&a], &l, toks);
            assert!((forced - with_eos).abs() < 1e-4, "{w}");
            // A finished hypothesis scores its tokens and EOS; the list is one live
            // hypothesis (no EOS) only when none finished.
            let live = nbest.len() == 1 && (score - without).abs() < 1e-4;
            assert!((forced - score).abs() < 1e-4 || live, "{w}: {score} vs {forced}");
        }
        assert_eq!(rescore(&nbest, &[&b], &l, 0.0).unwrap().0, nbest[0].0, "{w}: weight 0");
        // Two untrained models rank hypotheses alike (shorter first), so a negative
        // weight is what makes the second one reorder a list here.
        for weight in [1.0, -10.0] {
            let (pick, s) = rescore(&nbest, &[&b], &l, weight).unwrap();
            let sums: Vec<f64> = nbest
                .iter()
                .map(|(t, sc)| {
                    sc + weight * sequence_score(&[&b], &l, &t.iter().rev().copied().collect::<Vec<_>>()).unwrap()
                })
                .collect();
            // The batched scores of rescore against one sequence at a time.
            let best = sums.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            assert!((s - best).abs() < 1e-4, "{w}: {s} vs {best}");
            assert_eq!(pick, nbest[sums.iter().position(|&x| x == best).unwrap()].0, "{w}");
            reordered += usize::from(pick != nbest[0].0);
        }
        // Several weights from one scoring give what each weight gives alone.
        let many = rescore_weights(&nbest, &[&b], &l, &[0.0, 1.0, -10.0]).unwrap();
        for (weight, got) in [0.0, 1.0, -10.0].into_iter().zip(many) {
            let one = rescore(&nbest, &[&b], &l, weight).unwrap();
            assert_eq!(got.0, one.0, "{w}: weight {weight}");
            assert!((got.1 - one.1).abs() < 1e-9, "{w}: weight {weight}");
        }
    }
    assert!(reordered > 0, "the second model never changed a choice: the test would not see it ignored");
}
