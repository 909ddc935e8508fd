//! The two-thread pipeline of Deep Voice §5.1 / Figure 2, one main and one
//! auxiliary thread exchanging buffers under spin-waited counters.
//!
//! * Main: x^(0), a_cur = W_cur · x^(i), h^(i), x^(i+1) for every layer, then
//!   z_a, the logits, the softmax and the sample.
//! * Auxiliary: q += W_skip^(i) · h^(i) as each h^(i) appears, z_s = relu(q),
//!   then, while the main thread runs the output layers, a_prev =
//!   W_prev^(i) · x^(i)(t + 1 − d_i) for every layer of the next step (all
//!   those inputs exist once step t's stack is done, since d_i ≥ 1).
//!
//! Protocol (counters only grow; a writer publishes with `Release` after
//! writing, a reader spins with `Acquire` before reading):
//!
//! | buffer | writer | published by | reader | overwritten only after |
//! | --- | --- | --- | --- | --- |
//! | `hall[i]` | main, step k | `h_ready ≥ kℓ + i + 1` | aux | aux published z_s(k) (main waits for it before step k + 1) |
//! | `zs`, `ns` | aux, step k | `zs_ready ≥ k + 1` | main | main published h(k + 1) (after its output phase of step k) |
//! | `aprev[i]` | aux, for step k | `ap_ready ≥ kℓ + i + 1` | main | aux saw all of h(k) (main read `aprev[i]` before h^(i)(k)) |
//! | `hist` slot of layer i | main, step k | `h_ready` | aux | main waited `ap_ready` for layer i of step k (aux read the slot before) |
//!
//! Each call runs both threads in a `std::thread::scope`, so the buffers,
//! borrowed from the caller's `EngineState`, outlive every access; between
//! calls the state (histories, `aprev` for the next step) carries over, so
//! streaming block by block works as on one thread.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::conditioning::Conditioning;
use crate::engine::{Conv, Engine, EngineState, Out};

/// A raw view of a buffer that both threads touch under the protocol.
#[derive(Clone, Copy)]
struct View<T> {
    ptr: *mut T,
    len: usize,
}

// SAFETY: `View` is only shared between the two threads of one `run`, which
// access disjoint parts or hand parts over through the counters above.
unsafe impl<T> Send for View<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for View<T> {}

impl<T> View<T> {
    fn new(s: &mut [T]) -> Self {
        Self { ptr: s.as_mut_ptr(), len: s.len() }
    }

    /// # Safety
    /// No other thread writes `range` while the slice lives (protocol).
    #[allow(clippy::mut_from_ref)]
    unsafe fn slice_mut(&self, start: usize, len: usize) -> &mut [T] {
        assert!(start + len <= self.len);
        std::slice::from_raw_parts_mut(self.ptr.add(start), len)
    }

    /// # Safety
    /// No thread writes `range` while the slice lives (protocol).
    unsafe fn slice(&self, start: usize, len: usize) -> &[T] {
        assert!(start + len <= self.len);
        std::slice::from_raw_parts(self.ptr.add(start), len)
    }
}

/// Busy-wait rounds before a waiting thread starts yielding.
const SPINS_BEFORE_YIELD: u32 = 2_000;

#[repr(align(128))]
struct Counter(AtomicUsize);

impl Counter {
    /// Spins until the counter reaches `target`; after a while (about 10 µs)
    /// yields the core each round, so that an oversubscribed machine (more
    /// runnable threads than cores) slows down instead of stalling for whole
    /// scheduler time slices while the partner thread waits for a core.
    #[inline]
    fn wait(&self, target: usize) {
        let mut spins = 0u32;
        while self.0.load(Ordering::Acquire) < target {
            if spins < SPINS_BEFORE_YIELD {
                spins += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }

    #[inline]
    fn publish(&self, v: usize) {
        self.0.store(v, Ordering::Release);
    }
}

pub(crate) struct Pipeline<'a> {
    pub engine: &'a Engine,
    pub state: &'a mut EngineState,
    pub hop: usize,
}

impl Pipeline<'_> {
    /// Generates `out.len()` samples from position `t`; `sample(t, logits,
    /// &mut y)` turns each step's logits into y(t) on the main thread.
    pub fn run(
        &mut self,
        cond: &Conditioning,
        t: &mut usize,
        y1: &mut u8,
        y2: &mut u8,
        out: &mut [u8],
        sample: &mut dyn FnMut(usize, &[f32], &mut u8),
    ) {
        let e = self.engine;
        let (avx, r, s, l) = (e.avx, e.r, e.s, e.layers.len());
        let st = &mut *self.state;
        let n = out.len();
        let t0 = *t;
        let hist = View::new(st.hist.as_mut_slice());
        let aprev = View::new(st.aprev.as_mut_slice());
        let hall = View::new(st.hall.as_mut_slice());
        let zs = View::new(st.zs.as_mut_slice());
        let idx_s = View::new(&mut st.idx_s[..]);
        let ns = AtomicUsize::new(0);
        let (h_ready, zs_ready, ap_ready) =
            (Counter(AtomicUsize::new(0)), Counter(AtomicUsize::new(0)), Counter(AtomicUsize::new(l)));
        let EngineState { frame, condb, act, xq, za, idx_a, qbuf, qbuf_aux, .. } = st;
        let mut q = vec![0.0f32; s]; // per call, not per step
        let (h_ready, zs_ready, ap_ready, ns) = (&h_ready, &zs_ready, &ap_ready, &ns);

        std::thread::scope(|scope| {
            // ------------------------------------------------ auxiliary thread
            scope.spawn(move || {
                for k in 0..n {
                    let tt = t0 + k;
                    q.copy_from_slice(&e.skip_b);
                    for (i, layer) in e.layers.iter().enumerate() {
                        h_ready.wait(k * l + i + 1);
                        // SAFETY: h^(i)(k) is published and main rewrites it
                        // only at step k + 1, after zs_ready(k + 1) below.
                        let h = unsafe { hall.slice(i * r, r) };
                        if let Out::Split { skip, .. } = &layer.out {
                            skip.acc(avx, h, &mut q, qbuf_aux);
                        }
                    }
                    {
                        // SAFETY: main reads zs only after zs_ready(k + 1) and
                        // is done with zs(k − 1): it published h(k) since.
                        let (z, ix) = unsafe { (zs.slice_mut(0, s), idx_s.slice_mut(0, s)) };
                        z.copy_from_slice(&q);
                        ns.store(avx.relu_nonzero(z, ix), Ordering::Relaxed);
                    }
                    zs_ready.publish(k + 1);
                    // a_prev for step tt + 1.
                    for (i, layer) in e.layers.iter().enumerate() {
                        let slot = layer.hist_off + ((tt + 1) % layer.dilation) * r;
                        // SAFETY: main finished step k's stack (h_ready), and
                        // rewrites this slot and reads aprev[i] at step k + 1
                        // only after ap_ready for layer i below.
                        let (x_old, ap) = unsafe { (hist.slice(slot, r), aprev.slice_mut(i * 2 * r, 2 * r)) };
                        ap.fill(0.0);
                        if let Conv::Split { prev, .. } = &layer.conv {
                            prev.acc(avx, x_old, ap, qbuf_aux);
                        }
                        ap_ready.publish((k + 1) * l + i + 1);
                    }
                }
            });

            // ----------------------------------------------------- main thread
            let mut logits = vec![0.0f32; e.a]; // per call, not per step
            for (k, o) in out.iter_mut().enumerate() {
                let tt = t0 + k;
                let fr = tt / self.hop;
                if *frame != Some(fr) {
                    let r2 = 2 * r;
                    for (i, layer) in e.layers.iter().enumerate() {
                        let dst = &mut condb.as_mut_slice()[i * r2..(i + 1) * r2];
                        for ((d, c), b) in dst.iter_mut().zip(&cond.frame(fr)[i * r2..(i + 1) * r2]).zip(&layer.bias) {
                            *d = c + b;
                        }
                    }
                    *frame = Some(fr);
                }
                let x = &mut xq.as_mut_slice()[..r];
                e.embed(*y1, *y2, x);
                let act = act.as_mut_slice();
                for (i, layer) in e.layers.iter().enumerate() {
                    ap_ready.wait(k * l + i + 1);
                    let slot = layer.hist_off + (tt % layer.dilation) * r;
                    // SAFETY: aprev[i] for step k is published and aux writes it
                    // again only after h(k) is complete; aux read the hist slot
                    // before publishing aprev[i]; hall[i] is read by aux only
                    // after h_ready below, and was released by zs_ready(k).
                    let (ap, hs, h) =
                        unsafe { (aprev.slice(i * 2 * r, 2 * r), hist.slice_mut(slot, r), hall.slice_mut(i * r, r)) };
                    for ((a, c), p) in act.iter_mut().zip(&condb.as_slice()[i * 2 * r..(i + 1) * 2 * r]).zip(ap) {
                        *a = c + p;
                    }
                    hs.copy_from_slice(x);
                    if let Conv::Split { cur, .. } = &layer.conv {
                        cur.acc(avx, x, act, qbuf);
                    }
                    avx.gate(act, h, e.nl);
                    h_ready.publish(k * l + i + 1);
                    if let Out::Split { res: Some(res), .. } = &layer.out {
                        for (xv, b) in x.iter_mut().zip(&layer.b_res) {
                            *xv += b;
                        }
                        res.acc(avx, h, x, qbuf);
                    }
                }
                zs_ready.wait(k + 1);
                // SAFETY: zs(k) is published; aux rewrites it only after h(k + 1).
                let (z, ix) = unsafe { (zs.slice_mut(0, s), idx_s.slice(0, s)) };
                let cnt = ns.load(Ordering::Relaxed);
                let za = za.as_mut_slice();
                za.copy_from_slice(&e.relu_b);
                e.relu.acc_sparse(avx, z, &ix[..cnt], za, qbuf);
                let na = avx.relu_nonzero(za, idx_a);
                logits.copy_from_slice(&e.out_b);
                e.out.acc_sparse(avx, za, &idx_a[..na], &mut logits, qbuf);
                sample(tt, &logits, o);
                (*y2, *y1) = (*y1, *o);
            }
        });
        *t = t0 + n;
    }
}
