//! Beam search over an autoregressive decoder (Deep Voice §3.1; FORMAT.md,
//! "Grapheme-to-phoneme model", for the exact rule the trainer shares).
//!
//! Scores are sums of natural-log probabilities. Each step feeds every live
//! hypothesis its last token (BOS first) and ranks all its extensions, best
//! score first, ties by the hypothesis' rank and then the token index. The
//! ranking is walked from the top: an EOS extension becomes a finished
//! hypothesis, any other becomes live, until `width` live ones are kept
//! (finished ones are not counted). The search stops once the best finished
//! score is at least the best live score (log-probabilities are ≤ 0, so no
//! live hypothesis can overtake it) or after `max_steps` steps. The result
//! is the best finished hypothesis (the earliest on ties), or the best live
//! one when none finished. With width 1 this is exactly greedy decoding.

/// A decoder the search drives.
pub(crate) trait Decoder {
    /// Everything the decoder carries from one token to the next.
    type State: Clone;

    /// Feeds `token` to `state` and writes the log-probabilities of the next
    /// token into `lp` (`[outputs]`).
    fn advance(&mut self, state: &mut Self::State, token: usize, lp: &mut [f64]);
}

/// What to search for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Search {
    pub width: usize,
    pub max_steps: usize,
    pub outputs: usize,
    pub bos: usize,
    pub eos: usize,
}

struct Hypothesis<S> {
    tokens: Vec<usize>,
    score: f64,
    /// The state after every token but the last (fed at the next step).
    state: S,
}

impl Search {
    /// The best hypothesis from `init`: its tokens (without EOS) and score.
    /// Allocates.
    pub(crate) fn run<D: Decoder>(&self, decoder: &mut D, init: D::State) -> (Vec<usize>, f64) {
        let width = self.width.max(1);
        let mut live = vec![Hypothesis { tokens: Vec::new(), score: 0.0, state: init }];
        let mut finished: Option<(Vec<usize>, f64)> = None;
        let mut lp = vec![0.0f64; width * self.outputs]; // [live, outputs]
        let mut ranked: Vec<(f64, usize, usize)> = Vec::with_capacity(width * self.outputs);
        for _ in 0..self.max_steps {
            ranked.clear();
            for (i, h) in live.iter_mut().enumerate() {
                let token = h.tokens.last().copied().unwrap_or(self.bos);
                let row = &mut lp[i * self.outputs..(i + 1) * self.outputs];
                decoder.advance(&mut h.state, token, row);
                ranked.extend(row.iter().enumerate().map(|(t, &v)| (h.score + v, i, t)));
            }
            ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
            let mut next = Vec::with_capacity(width);
            for &(score, i, t) in &ranked {
                if next.len() == width {
                    break;
                }
                let parent = &live[i];
                if t == self.eos {
                    if finished.as_ref().is_none_or(|f| score > f.1) {
                        finished = Some((parent.tokens.clone(), score));
                    }
                } else {
                    let mut tokens = Vec::with_capacity(parent.tokens.len() + 1);
                    tokens.extend_from_slice(&parent.tokens);
                    tokens.push(t);
                    next.push(Hypothesis { tokens, score, state: parent.state.clone() });
                }
            }
            live = next;
            match (&finished, live.first()) {
                (_, None) => break,
                (Some(f), Some(best)) if f.1 >= best.score => break,
                _ => {}
            }
        }
        match (finished, live.into_iter().next()) {
            (Some(f), _) => f,
            (None, Some(best)) => (best.tokens, best.score),
            (None, None) => (Vec::new(), f64::NEG_INFINITY),
        }
    }

    /// Greedy decoding from `init`, written independently of [`Search::run`]
    /// as its width-1 oracle: the most probable token each step (the lowest
    /// index on ties) until EOS or `max_steps` tokens. Allocates.
    pub(crate) fn greedy<D: Decoder>(&self, decoder: &mut D, mut state: D::State) -> (Vec<usize>, f64) {
        let mut lp = vec![0.0f64; self.outputs];
        let (mut tokens, mut score, mut token) = (Vec::new(), 0.0f64, self.bos);
        for _ in 0..self.max_steps {
            decoder.advance(&mut state, token, &mut lp);
            let mut best = 0;
            for (t, &v) in lp.iter().enumerate() {
                if v > lp[best] {
                    best = t;
                }
            }
            score += lp[best];
            if best == self.eos {
                break;
            }
            tokens.push(best);
            token = best;
        }
        (tokens, score)
    }
}
