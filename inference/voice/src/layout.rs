//! The tensor list a config calls for (FORMAT.md, "WaveNet" and
//! "Conditioning network"): one source of truth for the reader, the writer
//! and the trainer's exporter.

use crate::config::VoiceConfig;

/// Every tensor `model.safetensors` must hold for `config`, with its exact
/// shape, in a fixed order (embedding, layers, skip and output layers, then
/// the conditioning network).
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
    t
}
