// Shared by every dv-gpu kernel (wavenet_single, wavenet_small, wavenet_multi, wavenet_tiles): prepended by the host
// (src/source.rs) after the size defines, so NVRTC needs no include path.
//
// Defines set by the host: R (residual channels), S (skip channels),
// A (256 output classes), NL (layers), HOP (samples per conditioning frame),
// DILS / HOFFS (brace lists: each layer's dilation and the start of its
// history ring in rows of R), HIST_ROWS (sum of dilations), WBF16 (1: the
// streamed weight matrices are bfloat16, accumulated in float32).

typedef unsigned long long u64;
typedef unsigned int u32;
typedef unsigned short u16;

#if WBF16
typedef u16 wt;
__device__ __forceinline__ float wf(wt v) { return __uint_as_float(((u32)v) << 16); }
#else
typedef float wt;
__device__ __forceinline__ float wf(wt v) { return v; }
#endif

__device__ const int c_dil[NL] = DILS;
__device__ const int c_hoff[NL] = HOFFS;

// Sampling modes (src/sampling.rs `GpuSampling`).
#define SAMPLE_DIRECT 0
#define SAMPLE_MODE 1
#define SAMPLE_TEMPERATURE 2
#define SAMPLE_VOICED_TEMPERATURE 3

// The mode of one step: voiced-only temperature is temperature where the
// step's conditioning frame is voiced (`voiced[row]`, one byte per
// conditioning row) and direct sampling elsewhere (dv_synth's
// `Sampling::for_frame`); every other mode is itself.
__device__ __forceinline__ int step_mode(int mode, const unsigned char* voiced, long long row) {
    if (mode != SAMPLE_VOICED_TEMPERATURE) return mode;
    return voiced[row] ? SAMPLE_TEMPERATURE : SAMPLE_DIRECT;
}

// xoshiro256++ (dv_synth::Rng): uniform in [0, 1) is the top 24 bits * 2^-24.
__device__ __forceinline__ u64 rotl64(u64 x, int k) { return (x << k) | (x >> (64 - k)); }
__device__ __forceinline__ u64 rng_next(u64* s) {
    u64 out = rotl64(s[0] + s[3], 23) + s[0];
    u64 t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl64(s[3], 45);
    return out;
}
__device__ __forceinline__ float rng_uniform(u64* s) { return (float)(rng_next(s) >> 40) * (1.0f / 16777216.0f); }
// Gumbel noise of class a for a step whose generator output is `key`
// (src/sampling.rs `gumbel`, the CPU reference): u = the top 24 bits of
// splitmix64(key + (a + 1)·φ), centred in its cell, so 0 < u < 1; then
// −ln(−ln u). argmax over classes of (logit + noise) is a draw from the
// softmax (the Gumbel-max rule).
__device__ __forceinline__ float gumbel(u64 key, int a) {
    u64 z = key + (u64)(a + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    const float u = ((float)(z >> 40) + 0.5f) * (1.0f / 16777216.0f);
    float l1, l2;
    asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(l1) : "f"(u));
    asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(l2) : "f"(l1 * -0.6931471805599453f));
    return l2 * -0.6931471805599453f;
}

// Shared-memory address of a generic pointer (for cp.async, mapa, DSMEM).
__device__ __forceinline__ u32 smem_u32(const void* p) {
    u32 a;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
    return a;
}
// This block's rank in its thread-block cluster.
__device__ __forceinline__ u32 cluster_rank() {
    u32 r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
// `local` (a shared-memory address of this block) in block `rank`'s shared window.
__device__ __forceinline__ u32 map_rank(u32 local, u32 rank) {
    u32 r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(local), "r"(rank));
    return r;
}
// Cluster barrier. `release` threads publish their earlier shared-memory
// writes (local and remote) to the other blocks; the rest arrive relaxed, so
// that their pending global stores (history rings, output samples) are not
// waited for here: those are read back only inside their own block, after a
// __syncthreads.
__device__ __forceinline__ void cluster_sync(bool release) {
    if (release) {
        asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
    } else {
        asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
    }
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// mbarriers (wavenet_chain's hand-offs, wavenet_tiles' weight chunks).
__device__ __forceinline__ void mbar_init(u32 bar, u32 count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
// One arrival, and `bytes` more to come by st.async or a bulk copy (the owner
// arms each phase).
__device__ __forceinline__ void mbar_expect(u32 bar, u32 bytes) {
    asm volatile("{ .reg .b64 s; mbarrier.arrive.expect_tx.release.cluster.shared::cta.b64 s, [%0], %1; }" ::"r"(bar),
                 "r"(bytes)
                 : "memory");
}
// The same, relaxed at block scope: for a bulk copy of data that no write of
// this thread precedes (weight chunks), the arrival need not wait for this
// thread's earlier stores to be performed as a release does (about a
// thousand cycles behind global stores; benchmarks/gpu.md, kernel 2e).
__device__ __forceinline__ void mbar_expect_relaxed(u32 bar, u32 bytes) {
    asm volatile("{ .reg .b64 s; mbarrier.arrive.expect_tx.relaxed.cta.shared::cta.b64 s, [%0], %1; }" ::"r"(bar),
                 "r"(bytes)
                 : "memory");
}
// The same at cluster scope: the owner arming a phase that other blocks'
// st.async complete (wavenet_chain), which publishes none of its own writes.
__device__ __forceinline__ void mbar_expect_relaxed_cluster(u32 bar, u32 bytes) {
    asm volatile("{ .reg .b64 s; mbarrier.arrive.expect_tx.relaxed.cluster.shared::cta.b64 s, [%0], %1; }" ::"r"(bar),
                 "r"(bytes)
                 : "memory");
}
// One arrival (release at block scope: this thread's earlier writes).
__device__ __forceinline__ void mbar_arrive(u32 bar) {
    asm volatile("{ .reg .b64 s; mbarrier.arrive.shared::cta.b64 s, [%0]; }" ::"r"(bar) : "memory");
}
// Waits for the phase of parity `par` to complete; `cluster`: the data came
// from other blocks (st.async), otherwise from this block's threads or a bulk
// copy into this block.
__device__ __forceinline__ void mbar_wait(u32 bar, u32 par, bool cluster) {
    u32 done = 0;
    while (!done) {
        if (cluster) {
            asm volatile(
                "{ .reg .pred p; mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                : "=r"(done)
                : "r"(bar), "r"(par)
                : "memory");
        } else {
            asm volatile(
                "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                : "=r"(done)
                : "r"(bar), "r"(par)
                : "memory");
        }
    }
}
// `bytes` (a multiple of 16) from global memory into this block's shared
// memory by the tensor-memory accelerator, completing them on `bar`.
__device__ __forceinline__ void bulk_load(u32 dst, const void* src, u32 bytes, u32 bar) {
#ifdef W_EVICT_LAST
    // Experiment (DV_GPU_DEFINES=W_EVICT_LAST): the weight chunks marked evict-last in L2, so
    // that thousands of streams' own conditioning and history rows do not push them out.
    unsigned long long policy;
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;" ::"r"(dst),
        "l"(src), "r"(bytes), "r"(bar), "l"(policy)
        : "memory");
#else
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
                 "l"(src), "r"(bytes), "r"(bar)
                 : "memory");
#endif
}
// 2^x and 1/x on the multi-function unit, denormals flushed: __expf and
// __fdividef add range fix-ups around them (a predicated scaling before and a
// squaring after each exponential) that this kernel's ranges never need.
__device__ __forceinline__ float ex2_ftz(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
__device__ __forceinline__ float rcp_ftz(float x) {
    float y;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
// Sum over `W` consecutive lanes (a power of two <= 32).
template <int W>
__device__ __forceinline__ float group_sum(float v) {
#pragma unroll
    for (int o = W / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float sigmoidf_exact(float x) { return 1.0f / (1.0f + expf(-x)); }

// One warp turns 256 logits (shared memory) into probabilities `p` (shared,
// may alias nothing else) and a sample, as dv_synth's softmax and
// `Sampling::sample` do: p = exp(l - max) * (1 / sum); mode is the argmax
// of p (lowest index on ties); direct is the first k whose running sum of p
// exceeds u (the last k with p > 0 if rounding leaves none); temperature
// renormalizes p^(1/tau) first. Lane l owns classes 8l .. 8l + 7. Every
// lane returns the sample. `u` is one uniform, drawn by the caller for
// every mode but mode sampling. FAST: `__expf` for the softmax (relative
// error ~1e-6, for the bfloat16 kernels).
template <bool FAST = false>
__device__ int warp_sample(const float* logits, float* p, int mode, float inv_tau, float u) {
    const int lane = threadIdx.x & 31;
    float v[8];
    float m = __int_as_float(0xff800000);  // -inf
#pragma unroll
    for (int e = 0; e < 8; e++) {
        v[e] = logits[lane * 8 + e];
        m = fmaxf(m, v[e]);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    float sum = 0.0f;
#pragma unroll
    for (int e = 0; e < 8; e++) {
        v[e] = FAST ? ex2_ftz((v[e] - m) * 1.4426950408889634f) : expf(v[e] - m);
        sum += v[e];
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    const float inv = 1.0f / sum;
#pragma unroll
    for (int e = 0; e < 8; e++) {
        v[e] *= inv;
        p[lane * 8 + e] = v[e];
    }
    if (mode == SAMPLE_MODE) {
        float best = v[0];
        int bi = lane * 8;
#pragma unroll
        for (int e = 1; e < 8; e++)
            if (v[e] > best) { best = v[e]; bi = lane * 8 + e; }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            float ob = __shfl_xor_sync(0xffffffffu, best, o);
            int oi = __shfl_xor_sync(0xffffffffu, bi, o);
            if (ob > best || (ob == best && oi < bi)) { best = ob; bi = oi; }
        }
        return bi;
    }
    if (mode == SAMPLE_TEMPERATURE) {
        float z = 0.0f;
#pragma unroll
        for (int e = 0; e < 8; e++) {
            v[e] = powf(v[e], inv_tau);
            z += v[e];
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) z += __shfl_xor_sync(0xffffffffu, z, o);
        if (!(z > 0.0f && z <= 3.402823466e38f)) {  // zero, inf or NaN
            // Every power underflowed: the limit is the mode of p.
            return warp_sample<FAST>(logits, p, SAMPLE_MODE, 1.0f, 0.0f);
        }
        const float iz = 1.0f / z;
#pragma unroll
        for (int e = 0; e < 8; e++) v[e] *= iz;
    }
    // Direct: inclusive running sums within the lane, exclusive scan over lanes.
    float c[8];
    float run = 0.0f;
#pragma unroll
    for (int e = 0; e < 8; e++) {
        run += v[e];
        c[e] = run;
    }
    float before = run;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        float n = __shfl_up_sync(0xffffffffu, before, o);
        if (lane >= o) before += n;
    }
    before -= run;
    int first = 256;
#pragma unroll
    for (int e = 7; e >= 0; e--)
        if (before + c[e] > u) first = lane * 8 + e;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) first = min(first, __shfl_xor_sync(0xffffffffu, first, o));
    if (first < 256) return first;
    int last = -1;
#pragma unroll
    for (int e = 0; e < 8; e++)
        if (v[e] > 0.0f) last = lane * 8 + e;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) last = max(last, __shfl_xor_sync(0xffffffffu, last, o));
    return last < 0 ? 0 : last;
}

// Kernel 2's parameters (wavenet_multi.cu and wavenet_tiles.cu take the same
// arguments, pushed in this order by src/cuda.rs); W1 and W2 name the second
// and third weight pointers, which the two kernels lay out differently.
// The sampling stage of the many-stream kernels (wavenet_tiles.cu and
// wavenet_cols.cu): stream b < BS_ of the block draws from its logits at
// LOG + b·LK_. Direct and mode sampling: G consecutive threads per stream
// (threads G·BS_ and up idle), A / G logits each, softmax and the draw by group
// shuffles, every stream at once. Temperature: one warp per stream
// (warp_sample, PW [NW_][A] scratch). A live stream's probabilities go to
// probs_out (when asked) and advance(b, y, rs) takes its sample, called by the
// group's (warp's) first thread with the stream's random state after the draw.
// Direct: the first class whose running sum passes u (the last with p > 0 if
// rounding leaves none), as warp_sample, though with another exponential and
// summation order: a draw within rounding of a class boundary may pick its
// neighbour. EX2: exponentials by ex2.approx.ftz, not __expf. Voiced-only
// temperature takes the group path, each stream in the mode of its own step,
// mode_of(b) (step_mode): a temperature step draws from the softmax of its
// logits scaled by 1/tau, which is p^(1/tau) renormalized without a power
// per class (and cannot underflow: its largest term is 1); probs_out still
// gets p, recomputed from the logits.
template <int BS_, int G, int NW_, int LK_, bool EX2, typename Adv, typename ModeOf>
__device__ __forceinline__ void sample_streams(const float* LOG, float* PW, const int* live, u64* rng, float* probs_out,
                                               int slot0, int steps, int step, int mode, float inv_tau, Adv advance,
                                               ModeOf mode_of) {
    constexpr int PER = A / G;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    if (mode != SAMPLE_TEMPERATURE) {
        if (tid >= G * BS_) return;
        const int b = tid / G, gl = tid % G, s = slot0 + b;
        const unsigned gmask = 0xffffffffu;
        const bool lv = live[b];  // read by every thread before the group's first updates it
        float v[PER];
#pragma unroll
        for (int k = 0; k < PER; k += 4) {
            const float4 q = *(const float4*)(LOG + b * LK_ + gl * PER + k);
            v[k] = q.x; v[k + 1] = q.y; v[k + 2] = q.z; v[k + 3] = q.w;
        }
        float m = v[0];
#pragma unroll
        for (int k = 1; k < PER; k++) m = fmaxf(m, v[k]);
#pragma unroll
        for (int o = G / 2; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(gmask, m, o));
        // This step's mode (voiced-only temperature: per stream), read before any advance;
        // a temperature step scales its logits by 1/tau (sc = 1: exactly the direct softmax).
        const int md = mode == SAMPLE_VOICED_TEMPERATURE ? mode_of(b) : mode;
        const float sc = md == SAMPLE_TEMPERATURE ? inv_tau : 1.0f;
        float sum = 0.0f;
#pragma unroll
        for (int k = 0; k < PER; k++) {
            v[k] = EX2 ? ex2_ftz((v[k] - m) * sc * 1.4426950408889634f) : __expf((v[k] - m) * sc);
            sum += v[k];
        }
#pragma unroll
        for (int o = G / 2; o > 0; o >>= 1) sum += __shfl_xor_sync(gmask, sum, o);
        const float inv = 1.0f / sum;
#pragma unroll
        for (int k = 0; k < PER; k++) v[k] *= inv;
        if (probs_out) {
            // p itself (parity checks): a tempered step's from its logits again (two passes, no array).
            const float* lg = LOG + b * LK_ + gl * PER;
            auto ex = [&](int k) { return EX2 ? ex2_ftz((lg[k] - m) * 1.4426950408889634f) : __expf(lg[k] - m); };
            float psum = 0.0f;
            if (sc != 1.0f)
#pragma unroll
                for (int k = 0; k < PER; k++) psum += ex(k);
#pragma unroll
            for (int o = G / 2; o > 0; o >>= 1) psum += __shfl_xor_sync(gmask, psum, o);
            if (lv) {
                float* po = probs_out + ((size_t)s * steps + step) * A + gl * PER;
#pragma unroll
                for (int k = 0; k < PER; k++) po[k] = sc == 1.0f ? v[k] : ex(k) / psum;
            }
        }
        // One uniform per sample, drawn by the group's first thread (kept only for live streams).
        u64 rs[4];
        float u = 0.0f;
        if (gl == 0) {
#pragma unroll
            for (int k = 0; k < 4; k++) rs[k] = rng[4 * b + k];
            if (mode != SAMPLE_MODE) u = rng_uniform(rs);
        }
        u = __shfl_sync(gmask, u, lane & ~(G - 1));
        int y;
        if (mode == SAMPLE_MODE) {
            float best = v[0];
            int bi = gl * PER;
#pragma unroll
            for (int k = 1; k < PER; k++)
                if (v[k] > best) { best = v[k]; bi = gl * PER + k; }
#pragma unroll
            for (int o = G / 2; o > 0; o >>= 1) {
                const float ob = __shfl_xor_sync(gmask, best, o);
                const int oi = __shfl_xor_sync(gmask, bi, o);
                if (ob > best || (ob == best && oi < bi)) { best = ob; bi = oi; }
            }
            y = bi;
        } else {
            float run = 0.0f;
#pragma unroll
            for (int k = 0; k < PER; k++) run += v[k];
            float before = run;
#pragma unroll
            for (int o = 1; o < G; o <<= 1) {
                const float n = __shfl_up_sync(gmask, before, o);
                if (gl >= o) before += n;
            }
            before -= run;
            int first = A, last = -1;
            float c = before;
#pragma unroll
            for (int k = 0; k < PER; k++) {
                c += v[k];
                if (c > u && first == A) first = gl * PER + k;
                if (v[k] > 0.0f) last = gl * PER + k;
            }
#pragma unroll
            for (int o = G / 2; o > 0; o >>= 1) {
                first = min(first, __shfl_xor_sync(gmask, first, o));
                last = max(last, __shfl_xor_sync(gmask, last, o));
            }
            y = first < A ? first : (last < 0 ? 0 : last);
        }
        __syncwarp();
        if (lv && gl == 0) advance(b, y, rs);
        return;
    }
    for (int b = warp; b < BS_; b += NW_) {
        const int s = slot0 + b;
        u64 rs[4];
#pragma unroll
        for (int k = 0; k < 4; k++) rs[k] = rng[4 * b + k];
        const int md = mode_of(b);
        float u = 0.0f;
        if (md != SAMPLE_MODE) u = rng_uniform(rs);
        const int y = warp_sample(LOG + b * LK_, PW + warp * A, md, inv_tau, u);
        __syncwarp();  // the lanes' probabilities in PW, visible to every lane
        if (live[b]) {
            if (probs_out) {
                for (int k = lane; k < A; k += 32) probs_out[((size_t)s * steps + step) * A + k] = PW[warp * A + k];
            }
            __syncwarp();
            if (lane == 0) advance(b, y, rs);
        }
        __syncwarp();
    }
}

#ifdef CR1
// The many-stream kernels' weight chunks (wavenet_tiles.cu with WGMMA,
// wavenet_cols.cu): chunk c of a step (per layer W_dil, then [W_res; W_skip];
// the relu layer in chunks of CR1 rows, the output layer in chunks of CR2) as
// one contiguous range of the host-tiled weights, and its bytes.
__device__ __forceinline__ const wt* chunk_src(const wt* w_dil, const wt* w_rs, const wt* w_relu, const wt* w_out,
                                               int c, u32& bytes) {
    if (c < 2 * NL) {
        const int i = c >> 1;
        bytes = (c & 1) == 0 ? 4 * R * R * 2 : (R + S) * R * 2;
        return (c & 1) == 0 ? w_dil + (size_t)i * 4 * R * R : w_rs + (size_t)i * (R + S) * R;
    }
    c -= 2 * NL;
    if (c < A / CR1) {
        bytes = CR1 * S * 2;
        return w_relu + (size_t)c * CR1 * S;
    }
    c -= A / CR1;
    bytes = CR2 * A * 2;
    return w_out + (size_t)c * CR2 * A;
}
#endif

// A many-stream block's slot state in shared memory (wavenet_tiles.cu,
// wavenet_cols.cu): position, live flag, the last two samples and the length
// of each of its BS slots.
struct Slots {
    int *pos, *live, *y1, *y2, *len;
    // From device memory (threads below `n`, slot0 + thread).
    __device__ void load(int n, int slot0, const int* st_pos, const int* st_len, const int* st_y) const {
        const int t = threadIdx.x;
        if (t >= n) return;
        const int s = slot0 + t;
        pos[t] = st_pos[s];
        live[t] = st_pos[s] < st_len[s];
        y1[t] = st_y[2 * s];
        y2[t] = st_y[2 * s + 1];
        len[t] = st_len[s];
    }
    // Back to device memory at the end of the launch.
    __device__ void store(int n, int slot0, int* st_pos, int* st_y) const {
        const int t = threadIdx.x;
        if (t >= n) return;
        const int s = slot0 + t;
        st_pos[s] = pos[t];
        st_y[2 * s] = y1[t];
        st_y[2 * s + 1] = y2[t];
    }
    // Live slot b (stream s) took sample y at `step`: its random state kept in
    // rng, y written, fed back (or the forced sample), its position advanced;
    // within the stream's lead (st_lead) silence is written and fed instead.
    __device__ void advance(int b, int s, int y, const u64* rs, u64* rng, int* out, const unsigned char* forced,
                            const int* st_lead, int steps, int step) const {
#pragma unroll
        for (int k = 0; k < 4; k++) rng[4 * b + k] = rs[k];
        const bool lead = pos[b] < st_lead[s];
        out[(size_t)s * steps + step] = lead ? 128 : y;
        y2[b] = y1[b];
        y1[b] = lead ? 128 : (forced ? (int)forced[(size_t)s * steps + step] : y);
        pos[b] += 1;
        live[b] = pos[b] < len[b];
    }
};

#define MULTI_KERNEL_PARAMS(W1, W2)                                                                            \
    const wt *__restrict__ w_dil, const wt *__restrict__ W1, const wt *__restrict__ W2,                      \
        const wt *__restrict__ w_relu, const wt *__restrict__ w_out, const float *__restrict__ gate_b,        \
        const float *__restrict__ res_b, const float *__restrict__ skip_b, const float *__restrict__ relu_b,   \
        const float *__restrict__ out_b, const float *__restrict__ emb_c, const float *__restrict__ emb_p,    \
        const float *__restrict__ emb_b,                                                                      \
        const float *__restrict__ cond_pool, /* conditioning rows [*, NL*2R] */                               \
        float *__restrict__ hist,            /* [slots][HIST_ROWS][R] */                                      \
        int *__restrict__ st_pos, const int *__restrict__ st_len, int *__restrict__ st_y,                     \
        u64 *__restrict__ st_rng, const long long *__restrict__ st_cond, int steps, int mode, float inv_tau,   \
        const unsigned char *__restrict__ voiced, /* [*] per conditioning row, or null (mode 3 only) */       \
        const int *__restrict__ st_lead, /* [slots] leading samples fed and written as silence (128) */      \
        int *__restrict__ out,                    /* [slots][steps], poisoned by the host */                  \
        const unsigned char *__restrict__ forced, /* [slots][steps] or null */                                \
        float *__restrict__ probs_out,            /* [slots][steps][A] or null */                             \
        long long *__restrict__ prof              /* [10] cycles per phase (block 0, thread 0) or null */

// Kernel 1's parameters (wavenet_single.cu, wavenet_small.cu and
// wavenet_chain.cu take the same arguments, pushed in this order by
// src/cuda.rs `SingleStream::launch`); each kernel lays out the six weight
// matrices its own way (see the comment above it).
#define SINGLE_KERNEL_PARAMS                                                                                  \
    const wt *__restrict__ g_wc, const wt *__restrict__ g_wp, const wt *__restrict__ g_wr,                   \
        const wt *__restrict__ g_wsk, const wt *__restrict__ g_wz, const wt *__restrict__ g_wo,              \
        const float *__restrict__ gate_b,  /* [NL][2R] */                                                     \
        const float *__restrict__ res_b,   /* [NL-1][R] */                                                    \
        const float *__restrict__ skip_b, const float *__restrict__ relu_b, const float *__restrict__ out_b, \
        const float *__restrict__ emb_c, const float *__restrict__ emb_p, const float *__restrict__ emb_b,   \
        const float *__restrict__ cond, /* [frames][NL*2R] */                                                 \
        int n_samples, float *__restrict__ hist, /* history rings, zero at launch */                          \
        int mode, float inv_tau,                                                                              \
        const unsigned char *__restrict__ voiced, /* [frames], or null (mode 3 only) */                      \
        int n_lead, /* leading samples fed and written as silence (128), still drawn */                       \
        u64 *__restrict__ rng_state, /* [4], read at start, written at end */                                \
        int *__restrict__ out, const unsigned char *__restrict__ forced, float *__restrict__ probs_out,       \
        long long *__restrict__ prof /* phase clock or null */
