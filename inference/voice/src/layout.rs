//! The tensor list a config calls for (FORMAT.md, "WaveNet", "Conditioning
//! network", "Duration and F0 model" and "Grapheme-to-phoneme model"): one
//! source of truth for the reader, the writer
//! and the trainer's exporter.

use crate::config::{DurationConfig, G2pConfig, VoiceConfig};

/// Every tensor `model.safetensors` must hold for `config`, with its exact
/// shape, in a fixed order (embedding, layers, skip and output layers, then
/// the conditioning network, then the duration model and the G2P model
/// when the config has them).
pub fn expected_tensors(config: &VoiceConfig) -> Vec<(String, Vec<usize>)> {
    let w = &config.wavenet;
    let (l, r, s, a) = (w.layers, w.residual_channels, w.skip_channels, config.quantization_channels);
    let mut t: Vec<(String, Vec<usize>)> = vec![
        ("wavenet.embed_cur".into(), vec![a, r]),
        ("wavenet.embed_prev".into(), vec![a, r]),
        ("wavenet.embed_bias".into(), vec![r]),
    ];
    for i in 0..l {
        t.push((format!("wavenet.layers.{i}.w_prev"), vec![2 * r, r]));
        t.push((format!("wavenet.layers.{i}.w_cur"), vec![2 * r, r]));
        t.push((format!("wavenet.layers.{i}.bias"), vec![2 * r]));
        if i + 1 < l {
            t.push((format!("wavenet.layers.{i}.w_res"), vec![r, r]));
            t.push((format!("wavenet.layers.{i}.b_res"), vec![r]));
        }
    }
    t.push(("wavenet.skip.weight".into(), vec![s, l * r]));
    t.push(("wavenet.skip.bias".into(), vec![s]));
    t.push(("wavenet.relu.weight".into(), vec![a, s]));
    t.push(("wavenet.relu.bias".into(), vec![a]));
    t.push(("wavenet.out.weight".into(), vec![a, a]));
    t.push(("wavenet.out.bias".into(), vec![a]));
    let c = &config.conditioning;
    let h = c.hidden;
    for k in 0..c.qrnn_layers {
        let d = if k == 0 { c.input_dim } else { 2 * h };
        for dir in ["fwd", "bwd"] {
            t.push((format!("cond.qrnn.{k}.{dir}.w_prev"), vec![3 * h, d]));
            t.push((format!("cond.qrnn.{k}.{dir}.w_cur"), vec![3 * h, d]));
            t.push((format!("cond.qrnn.{k}.{dir}.bias"), vec![3 * h]));
        }
    }
    t.push(("cond.proj.weight".into(), vec![l * 2 * r, 2 * h]));
    t.push(("cond.proj.bias".into(), vec![l * 2 * r]));
    if let Some(d) = &config.duration {
        t.extend(duration_tensors(d));
    }
    if let Some(g) = &config.g2p {
        t.extend(g2p_tensors(g));
    }
    t
}

/// The `g2p.*` tensors of a G2P model (FORMAT.md, "Grapheme-to-phoneme
/// model"), in order: the two embeddings, each encoder layer (forward then
/// backward), each decoder layer, out, and attention's when it has it. Every GRU carries the `_l0` suffix of
/// a one-layer `torch.nn.GRU`.
pub fn g2p_tensors(g: &G2pConfig) -> Vec<(String, Vec<usize>)> {
    let (e, h) = (g.embed, g.hidden);
    let gru = |t: &mut Vec<(String, Vec<usize>)>, prefix: String, input: usize| {
        t.push((format!("{prefix}.weight_ih_l0"), vec![3 * h, input]));
        t.push((format!("{prefix}.weight_hh_l0"), vec![3 * h, h]));
        t.push((format!("{prefix}.bias_ih_l0"), vec![3 * h]));
        t.push((format!("{prefix}.bias_hh_l0"), vec![3 * h]));
    };
    let mut t: Vec<(String, Vec<usize>)> =
        vec![("g2p.enc_embed".into(), vec![g.grapheme_rows(), e]), ("g2p.dec_embed".into(), vec![g.outputs + 1, e])];
    for k in 0..g.layers {
        for dir in ["fwd", "bwd"] {
            gru(&mut t, format!("g2p.enc.{k}.{dir}"), if k == 0 { e } else { 2 * h });
        }
    }
    for k in 0..g.layers {
        gru(&mut t, format!("g2p.dec.{k}"), if k == 0 { e } else { h });
    }
    t.push(("g2p.out.weight".into(), vec![g.outputs, h]));
    t.push(("g2p.out.bias".into(), vec![g.outputs]));
    if g.attention {
        t.push(("g2p.att.w".into(), vec![h, 2 * h]));
        t.push(("g2p.att.combine.weight".into(), vec![h, 3 * h]));
        t.push(("g2p.att.combine.bias".into(), vec![h]));
    }
    t
}

/// The `duration.*` tensors of a duration model (FORMAT.md, "Duration and
/// F0 model"), in order: fc1, fc2, each GRU layer (then its reverse
/// direction, `gru_rev`, when bidirectional), out. Every GRU layer carries
/// the `_l0` suffix of a one-layer `torch.nn.GRU`.
fn duration_tensors(d: &DurationConfig) -> Vec<(String, Vec<usize>)> {
    let (fc, h, width) = (d.fc, d.gru, d.gru_output());
    let mut t: Vec<(String, Vec<usize>)> = vec![
        ("duration.fc1.weight".into(), vec![fc, d.input_dim]),
        ("duration.fc1.bias".into(), vec![fc]),
        ("duration.fc2.weight".into(), vec![fc, fc]),
        ("duration.fc2.bias".into(), vec![fc]),
    ];
    let directions: &[&str] = if d.bidirectional { &["gru", "gru_rev"] } else { &["gru"] };
    for k in 0..d.gru_layers {
        let input = if k == 0 { fc } else { width };
        for dir in directions {
            t.push((format!("duration.{dir}.{k}.weight_ih_l0"), vec![3 * h, input]));
            t.push((format!("duration.{dir}.{k}.weight_hh_l0"), vec![3 * h, h]));
            t.push((format!("duration.{dir}.{k}.bias_ih_l0"), vec![3 * h]));
            t.push((format!("duration.{dir}.{k}.bias_hh_l0"), vec![3 * h]));
        }
    }
    t.push(("duration.out.weight".into(), vec![d.output_dim(), width]));
    t.push(("duration.out.bias".into(), vec![d.output_dim()]));
    t
}
