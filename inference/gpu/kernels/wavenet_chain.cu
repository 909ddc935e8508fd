// Kernel 1c: one utterance per launch, bfloat16 weights, r = 64 ((20, 64,
// 128), (40, 64, 128), (40, 64, 256) of Table 2) or r = 32.
// Kernel 1 (wavenet_single.cu) splits every layer's units over the cluster
// and pays one cluster barrier per layer; kernel 1b (wavenet_small.cu)
// keeps the whole chain in one block, which only r = 32 fits. Here the
// chain is split by *layers*: chain block k holds W_cur and W_res of LPB
// consecutive layers in shared memory and runs them on x alone, then hands
// x (64 floats) to block k + 1 with `st.async` into that block's shared
// memory, completing bytes on its `mbarrier`: a point-to-point hand-off
// every LPB layers and no cluster barrier in the sample loop.
//
//   chain block k (ranks 0 .. NCB-1), NT = 512 threads:
//     CW = (r / 32)·CQ chain warps: warp (u = w % (r/32), q = w / (r/32)),
//        lane j owns gate unit and residual output 32u + j, and products
//        over inputs [q·NQ, (q+1)·NQ) (NQ = r / CQ); each warp keeps x and
//        h of that input slice (lane j % NQ), so a layer takes two named
//        barriers (none with one chain warp: r = 32, CQ = 1).
//     the other warps: one thread per skip row accumulates W_skip · h of
//        the block's layers and sends its partial sum to block P; then all
//        of them store the block's x_i(t) into the history rings and
//        compute the next sample's W_prev rows (+ gate bias +
//        conditioning) of the block's layers from L2. All of it waits for
//        the block's part of the chain to end, so that nothing competes
//        with the chain warps for the SM (the chain warps keep only shared
//        memory on their path).
//     The last chain block's skip rows would be on the sample's critical
//     path: its chain warps send each layer's h to block P instead, which
//     follows the chain layer by layer (an mbarrier per layer) with
//     W_skip from L2, while it waits anyway.
//   block P (rank NCB): the last block's skip rows, the sum of all skip
//        partials, relu, the relu layer (on the tensor cores: "The head" below).
//   block Q (rank NCB + 1): the output layer (tensor cores), the Gumbel-max
//        draw, and the next sample's embedding (emb_c in shared memory),
//        sent to block 0.
//
// Every buffer another block writes has one mbarrier that completes one
// phase per sample (its owner arms it with the bytes it expects); so each
// wait is on parity t & 1. A buffer is rewritten only after the sample
// that read it has produced its output, which needs every reader done.
//
// Each sample's buffers are armed by their owner with a relaxed arrival
// (RELEASE_EXPECT: the release one): the owner publishes none of its own
// writes through them, and a release waits for the arming thread's earlier
// global stores (the sampled output, the rings) to complete.
#ifdef RELEASE_EXPECT
#define ARM(bar, bytes) mbar_expect(bar, bytes)
#else
#define ARM(bar, bytes) mbar_expect_relaxed_cluster(bar, bytes)
#endif
// The gate runs in fast math (`ex2`, `rcp`; ACCURATE_GATE for `tanhf` and
// `expf`), as kernel 2b's gate does. ABL_GATE, ABL_GPROD and ABL_RES leave out a part of each layer
// (they fail parity; `gpu_bench gpu-single --force-timing` times them).
// SPIN_WAIT is a measured alternative, off by default (benchmarks/gpu.md,
// runs v38 and v80). The chain blocks' layer loop is unrolled for r = 32
// (ROLL_LAYERS: not) and not for r = 64 (UNROLL_LAYERS: unrolled), the
// faster of each (runs v39, v77, v80).
//
// Extra defines: NT (512), CQ (input parts: 2 or 4), LPB (layers per chain
// block).
#if (R == 32 && !defined(ROLL_LAYERS)) || defined(UNROLL_LAYERS)
#define UNROLL 1
#else
#define UNROLL 0
#endif
#if !WBF16 || (R != 64 && R != 32) || A != 256 || NT != 512
#error "wavenet_chain takes r = 32 or 64, 256 classes, 512 threads and bfloat16 weights"
#endif

#define NCB ((NL + LPB - 1) / LPB)   // chain blocks
#define C (NCB + 2)
#define RP NCB                       // rank of the relu block
#define RQ (NCB + 1)                 // rank of the output block
#define UH (R / 32)                  // unit halves (warps side by side along the units)
#define CW (UH * CQ)                 // chain warps
#define NQ (R / CQ)                  // inputs per chain-warp part
#define NCW (NT / 32 - CW)           // non-chain warps of a chain block
#if NQ > 32 || NQ % 4 != 0
#error "each chain-warp part takes 4 to 32 inputs"
#endif
#define NLAST (NL - (NCB - 1) * LPB)  // layers of the last chain block
#define TPSP (NT / S)                 // block P's threads per skip row
#if NCW * 32 < S || S % 32 != 0 || NT % S != 0
#error "wavenet_chain needs one non-chain thread per skip row"
#endif

// A wait on the sample's critical path (data from another block): with
// SPIN_WAIT a busy poll (`test_wait`, which never suspends the thread), else
// as mbar_wait (`try_wait` may suspend it until the phase completes).
__device__ __forceinline__ void mbar_wait_critical(u32 bar, u32 par) {
#ifdef SPIN_WAIT
    u32 done = 0;
    while (!done) {
        asm volatile(
            "{ .reg .pred p; mbarrier.test_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
            : "=r"(done)
            : "r"(bar), "r"(par)
            : "memory");
    }
#else
    mbar_wait(bar, par, true);
#endif
}
// 4 or 8 bytes into another block's shared memory, completing them on its mbarrier.
__device__ __forceinline__ void send1(u32 addr, float v, u32 bar) {
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];" ::"r"(addr),
                 "r"(__float_as_uint(v)), "r"(bar)
                 : "memory");
}
__device__ __forceinline__ void send2(u32 addr, float a, float b, u32 bar) {
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.b32 [%0], {%1, %2}, [%3];" ::"r"(addr),
                 "r"(__float_as_uint(a)), "r"(__float_as_uint(b)), "r"(bar)
                 : "memory");
}
__device__ __forceinline__ float lo16(u32 p) { return __uint_as_float(p << 16); }
__device__ __forceinline__ float hi16(u32 p) { return __uint_as_float(p & 0xffff0000u); }
// NP bf16 pairs of a skip row from L2 (layout [.][R/2][S][2]: pair m at src[m·S]).
template <int NP>
__device__ __forceinline__ void load_pairs(u32* wv, const u32* src) {
#pragma unroll
    for (int m = 0; m < NP; m++) wv[m] = src[m * S];
}
// acc + Σ over NP pairs of (lo, hi) · (h[2m], h[2m + 1]); h 16-byte aligned.
template <int NP>
__device__ __forceinline__ float pair_dot(const u32* wv, const float* h, float acc) {
    const float4* h4 = (const float4*)h;
#pragma unroll
    for (int m = 0; m < NP / 2; m++) {
        const float4 hk = h4[m];
        acc += lo16(wv[2 * m]) * hk.x + hi16(wv[2 * m]) * hk.y + lo16(wv[2 * m + 1]) * hk.z + hi16(wv[2 * m + 1]) * hk.w;
    }
    return acc;
}

// d = A · B (fresh accumulator), and d += A · B.
__device__ __forceinline__ void mma16816(float (&d)[4], const uint4& a, u32 b0, u32 b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%10,%10,%10};"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b0), "r"(b1), "f"(0.0f));
}
__device__ __forceinline__ void mma16816_acc(float (&d)[4], const uint4& a, u32 b0, u32 b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b0), "r"(b1));
}

// The head: the relu layer (block P) and the output layer (block Q) run on
// the tensor cores, mma.sync m16n8k16 with the weights as A (bfloat16
// fragments laid out by the host, in each thread's registers for the
// launch) and the input vector as B. B's eight columns
// carry one vector: even columns its bfloat16 hi terms, odd ones its lo terms
// (v ≈ hi + lo), so a row's result is the sum of a lane's two accumulator
// columns and the products keep float32 inputs to about 16 bits. Warp w (16
// warps) owns rows 16w .. 16w + 15 of the 256; its lane (g = lane / 4,
// c = lane % 4) gets rows 16w + g and 16w + g + 8. Block P sends the relu
// output to Q already split into the B terms (head_input's layout, 1 KB), so
// Q starts its products as soon as the bytes land.
//
// Block Q draws by the Gumbel-max rule: argmax of logit/τ + noise (noise 0
// for mode sampling; `gumbel` in common.cuh, `sampling::gumbel` the CPU
// reference). Each lane draws the noise of its two rows before the wait, so
// the draw after the output layer is one argmax (by shuffles, then over the
// 16 warps) and no softmax; the probabilities are formed only when asked
// for, after x has been sent. The other kernels draw by the inverse CDF
// (`warp_sample`): a seed gives the same distribution, not the same samples.
// Where element k (k even: and k + 1) of an input vector sits in
// head_input's layout, in u16 (its hi term; the lo term 16 later).
__device__ __forceinline__ int head_at(int k) {
    const int rr = k & 15;
    return (k >> 4) * 32 + ((rr & 7) >> 1) * 4 + (rr >> 3) * 2 + (rr & 1);
}
// Element k of an input vector into the B operand's shared layout, u16
// [K/16][hi, lo][c][2][2]: lane (g, c) reads one uint2 per k tile, its hi
// terms for even g and its lo terms for odd g (inputs 2c, 2c + 1, 2c + 8, 2c + 9).
__device__ __forceinline__ void head_input(u16* zf, int k, float v) {
    u32 h, l;
    asm("cvt.rn.bf16x2.f32 %0, %1, %1;" : "=r"(h) : "f"(v));
    const float r = v - __uint_as_float(h << 16);
    asm("cvt.rn.bf16x2.f32 %0, %1, %1;" : "=r"(l) : "f"(r));
    const int at = head_at(k);
    zf[at] = (u16)h;
    zf[at + 16] = (u16)l;
}
// (v0, v1) as a bfloat16 hi pair and a lo pair (v0 in the low halves).
__device__ __forceinline__ void split_pair(float v0, float v1, u32& h, u32& l) {
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(h) : "f"(v1), "f"(v0));
    const float r0 = v0 - __uint_as_float(h << 16), r1 = v1 - __uint_as_float(h & 0xffff0000u);
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(l) : "f"(r1), "f"(r0));
}
// This lane's A fragments of W's row tile `warp` (W [A][K] as
// src/model.rs `mma_fragments`: uint4 ((mt·K/16 + kt)·32 + lane)), kept in
// registers for the launch: 64 KB (W_relu) or 128 KB (W_out) over 512
// threads. From shared memory the products were bound by its bandwidth
// (16 KB per k tile of the block): run v81, 8.57x against 8.09x.
template <int K>
__device__ __forceinline__ void head_regs(uint4 (&wr)[K / 16], const wt* W) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const uint4* wf = (const uint4*)W;
#pragma unroll
    for (int kt = 0; kt < K / 16; kt++) wr[kt] = wf[((size_t)warp * (K / 16) + kt) * 32 + lane];
}
// Rows 16·warp + g (r0) and + 8 (r1) of W · v, W as head_regs, v as head_input.
template <int K>
__device__ __forceinline__ void head_rows(const uint4 (&wr)[K / 16], const u16* zf, float& r0, float& r1) {
    const int lane = threadIdx.x & 31;
    const uint2* z = (const uint2*)zf + ((lane >> 2) & 1) * 4 + (lane & 3);
    float d[4][4];
#pragma unroll
    for (int kt = 0; kt < K / 16; kt++) {
        const uint2 b = z[kt * 8];
        const uint4 a = wr[kt];
        if (kt < 4) mma16816(d[kt], a, b.x, b.y);
        else mma16816_acc(d[kt & 3], a, b.x, b.y);
    }
    r0 = ((d[0][0] + d[0][1]) + (d[1][0] + d[1][1])) + ((d[2][0] + d[2][1]) + (d[3][0] + d[3][1]));
    r1 = ((d[0][2] + d[0][3]) + (d[1][2] + d[1][3])) + ((d[2][2] + d[2][3]) + (d[3][2] + d[3][3]));
}

// Weights (SINGLE_KERNEL_PARAMS): g_wc [NL][R k][R j][2] as (W_cur[j][k],
// W_cur[R + j][k]) pairs; g_wp [NL][2R][R] (FORMAT.md rows); g_wr [NL-1][R k]
// [R o] (W_res transposed); g_wsk [NL][R/2][S][2] as (W_skip[s][iR + 2m],
// W_skip[s][iR + 2m + 1]) pairs; g_wz and g_wo (W_relu [A][S], W_out [A][A]) as
// `mma_fragments` (src/model.rs). hist
// [HIST_ROWS][R]; prof [32] cycles (src/cuda.rs CHAIN_CLOCK) or null.
extern "C" __global__ void __cluster_dims__(C, 1, 1) __launch_bounds__(NT, 1)
wavenet_chain(SINGLE_KERNEL_PARAMS)
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int rank = (int)cluster_rank();
    // mbarriers first: [0] the input another block sends (x, the skip
    // partials or the relu output), [1] chain done, [2] rows ready,
    // [3 + il] (block P) h of the last chain block's layer il.
    const u32 bars = smem_u32(smem_raw);
    const u32 bar_in = bars, bar_seg = bars + 8, bar_pre = bars + 16;
    unsigned char* base = smem_raw + ((8 * (3 + LPB) + 15) & ~15);
    // Chain-block carve-up.
    u32* wc = (u32*)base;                    // [LPB][R k][R j] bf16 pairs
    wt* wr = (wt*)(wc + LPB * R * R);        // [LPB][R k][R o]
    float* xin = (float*)(wr + LPB * R * R);  // [R] this block's input x (sent)
    float* pre = xin + R;                    // [LPB][2R] W_prev rows + gate bias + conditioning
    float* gpart = pre + LPB * 2 * R;        // [CQ][2][R] gate partial sums
    float* rpart = gpart + CQ * 2 * R;       // [CQ][R] residual partial sums
    float* xw = rpart + CQ * R;              // [CW][NQ] each chain warp's x slice
    float* hw = xw + CW * NQ;                // [CW][NQ] each chain warp's h slice
    float* xall = hw + CW * NQ;              // [LPB][R] the layers' inputs x_i(t)
    float* hsm = xall + LPB * R;             // [LPB][R] the layers' h
    float* olds = hsm + LPB * R;             // [LPB][R] x_i(t + 1 - d_i)
    float* rbs = olds + LPB * R;             // [LPB][R] residual biases
    // Block P.
    float* skb = (float*)base;               // [NCB][S] skip partials (sent)
    float* zs = skb + NCB * S;               // [S] relu(skip) as B terms (u16 [2S], head_input)
    float* ppart = zs + S;                   // [2][A] (only [TPSP][S]: skip partials)
    float* hl = ppart + 2 * A;               // [LPB][R] the last chain block's h (sent)
    // Block Q.
    float* embc = (float*)base;              // [A][R]
    float* za = embc + A * R;                // [A] relu-layer output as B terms (u16 [2A], sent)
    float* probs = za + A;                   // [A]
    float* qpart = probs + A;                // [2][A] (only [32]: each warp's best class)
    float* logits = qpart + 2 * A;           // [A]

    const int first = rank * LPB;
    const int nl = rank < NCB ? min(LPB, NL - first) : 0;
    if (rank < NCB) {
        const u32* src = (const u32*)g_wc + (size_t)first * R * R;
        const int nres = min(nl, NL - 1 - first);
        for (int e = tid; e < nl * R * R; e += NT) wc[e] = src[e];
        for (int e = tid; e < nres * R * R; e += NT) wr[e] = g_wr[(size_t)first * R * R + e];
        for (int e = tid; e < nres * R; e += NT) rbs[e] = res_b[first * R + e];
        for (int e = tid; e < LPB * R; e += NT) xall[e] = 0.0f;  // x_i(-1) = 0
        if (tid == 0) {
            mbar_init(bar_in, 1);
            mbar_init(bar_seg, CW);
            mbar_init(bar_pre, NCW);
        }
    } else if (rank == RP) {
        if (tid == 0) {
            mbar_init(bar_in, 1);
            for (int il = 0; il < NLAST; il++) {
                mbar_init(bars + 24 + 8 * il, 1);
                mbar_expect(bars + 24 + 8 * il, R * 4);  // phase 0
            }
        }
    } else {
        for (int e = tid; e < A * R; e += NT) embc[e] = emb_c[e];
        if (tid == 0) mbar_init(bar_in, 1);
    }
    if (tid == 0) {
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        const u32 bytes = rank < NCB ? R * 4 : rank == RP ? (NCB - 1) * S * 4 : A * 4;
        if (rank != RP || NCB > 1) mbar_expect(bar_in, bytes);  // phase 0 (P has no partials to wait for with one chain block)
    }
    __syncthreads();
    cluster_sync(true);

    long long pacc[2] = {0, 0};
    long long lacc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    const bool profiling = prof != nullptr && tid == 0;

    if (rank < NCB) {
        const bool last_block = rank == NCB - 1;
        const u32 next_xin = map_rank(smem_u32(xin), last_block ? 0 : rank + 1);
        const u32 next_bar = map_rank(bar_in, last_block ? 0 : rank + 1);
        const u32 p_hl = map_rank(smem_u32(hl), RP), p_hbar = map_rank(bars + 24, RP);
        if (warp < CW) {
            // The chain.
            const int u = warp % UH, q = warp / UH;
            const int V = q * NQ + (lane % NQ);  // this lane's element of the warp's input slice
            const int U = 32 * u + lane;         // this lane's gate unit and residual output
            const bool writer = lane < NQ;
            float* xwp = xw + warp * NQ;
            float* hwp = hw + warp * NQ;
            for (int t = 0; t < n_samples; t++) {
                mbar_wait(bar_pre, t & 1, false);
                mbar_wait_critical(bar_in, t & 1);
                const long long c1 = clock64();
                long long cl = c1;
                float xr = xin[V];
#if UNROLL
                // The block's layers unrolled (LPB is a compile-time constant), so
                // that loads of a later layer can be issued early.
#pragma unroll
#endif
                for (int il = 0; il < LPB; il++) {
                    if (il >= nl) break;
                    const int i = first + il;
                    if (writer) {
                        xwp[lane] = xr;
                        if (u == 0) xall[il * R + V] = xr;
                    }
                    __syncwarp();
                    // Two accumulators per gate row and four for the residual
                    // output: shorter dependent chains of FMAs.
                    const u32* w = wc + (size_t)il * R * R + q * NQ * R + U;
                    const float4* x4 = (const float4*)xwp;
                    float tp0 = 0.0f, sp0 = 0.0f, tp1 = 0.0f, sp1 = 0.0f;
#ifdef ABL_GPROD  // ablation (fails parity): no gate product
                    tp0 = xr;
#else
#pragma unroll
#endif
                    for (int m = 0; m < NQ / 4; m++) {
#ifdef ABL_GPROD
                        break;
#endif
                        const float4 xk = x4[m];
                        const u32 w0 = w[(4 * m) * R], w1 = w[(4 * m + 1) * R], w2 = w[(4 * m + 2) * R],
                                  w3 = w[(4 * m + 3) * R];
                        tp0 += lo16(w0) * xk.x;
                        sp0 += hi16(w0) * xk.x;
                        tp1 += lo16(w1) * xk.y;
                        sp1 += hi16(w1) * xk.y;
                        tp0 += lo16(w2) * xk.z;
                        sp0 += hi16(w2) * xk.z;
                        tp1 += lo16(w3) * xk.w;
                        sp1 += hi16(w3) * xk.w;
                    }
#if CQ > 1
                    gpart[(2 * q) * R + U] = tp0 + tp1;
                    gpart[(2 * q + 1) * R + U] = sp0 + sp1;
                    asm volatile("bar.sync 3, %0;" ::"n"(CW * 32) : "memory");
                    float vt = pre[il * 2 * R + V], vs = pre[il * 2 * R + R + V];
#pragma unroll
                    for (int c = 0; c < CQ; c++) {
                        vt += gpart[(2 * c) * R + V];
                        vs += gpart[(2 * c + 1) * R + V];
                    }
#else
                    // One warp holds whole rows (r = 32): lane j = unit j = V = U.
                    const float vt = pre[il * 2 * R + V] + (tp0 + tp1), vs = pre[il * 2 * R + R + V] + (sp0 + sp1);
#endif
#if defined(ABL_GATE)  // ablation (fails parity): no transcendental
                    const float h = vt * vs;
#elif defined(ACCURATE_GATE)
                    const float h = tanhf(vt) * sigmoidf_exact(vs);
#elif defined(FAST_EXPF)
                    const float h = (1.0f - __fdividef(2.0f, __expf(2.0f * vt) + 1.0f)) * __fdividef(1.0f, 1.0f + __expf(-vs));
#else
                    // ex2/rcp without __expf's range fix-ups (an overflow to inf gives 1·σ or 0, as it should).
                    const float h = (1.0f - 2.0f * rcp_ftz(ex2_ftz(vt * 2.8853900817779268f) + 1.0f)) *
                                    rcp_ftz(1.0f + ex2_ftz(vs * -1.4426950408889634f));
#endif
                    if (writer) {
                        hwp[lane] = h;
                        if (u == 0) {
                            if (last_block) {
                                send1(p_hl + 4 * (il * R + V), h, p_hbar + 8 * il);
                            } else {
                                hsm[il * R + V] = h;
                            }
                        }
                    }
                    __syncwarp();
#ifdef ABL_RES  // ablation (fails parity): no residual product
                    if (false) {
#else
                    if (i + 1 < NL) {
#endif
                        const wt* wrr = wr + (size_t)il * R * R + q * NQ * R + U;
                        const float4* h4 = (const float4*)hwp;
                        float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
#pragma unroll
                        for (int m = 0; m < NQ / 4; m++) {
                            const float4 hk = h4[m];
                            a0 += wf(wrr[(4 * m) * R]) * hk.x;
                            a1 += wf(wrr[(4 * m + 1) * R]) * hk.y;
                            a2 += wf(wrr[(4 * m + 2) * R]) * hk.z;
                            a3 += wf(wrr[(4 * m + 3) * R]) * hk.w;
                        }
#if CQ > 1
                        rpart[q * R + U] = (a0 + a1) + (a2 + a3);
                        asm volatile("bar.sync 3, %0;" ::"n"(CW * 32) : "memory");
                        float sum = rbs[il * R + V];
#pragma unroll
                        for (int c = 0; c < CQ; c++) sum += rpart[c * R + V];
                        xr += sum;
#else
                        xr += rbs[il * R + V] + ((a0 + a1) + (a2 + a3));
#endif
                    }
                    if (profiling && rank == 0) {
                        const long long now = clock64();
#pragma unroll
                        for (int k = 0; k < 8; k++)  // constant indices: lacc stays in registers
                            if (k == il) lacc[k] += now - cl;
                        cl = now;
                    }
                }
                if (!last_block && writer && u == 0) send1(next_xin + 4 * V, xr, next_bar);
                // Armed for the next sample's x only now, off the chain: the
                // release at cluster scope waits for this thread's stores.
                if (tid == 0) ARM(bar_in, R * 4);
                __syncwarp();
                if (lane == 0) mbar_arrive(bar_seg);
                if (profiling) pacc[0] += clock64() - c1;
            }
        } else {
            // Skip rows as the chain goes, then the next sample's W_prev rows.
            const int nt = tid - 32 * CW;
            const u32 p_skb = map_rank(smem_u32(skb), RP) + 4 * (rank * S + nt);
            const u32 p_bar = map_rank(bar_in, RP);
            // x_i(t1 - 1) into the rings (d > 1), then the W_prev rows of
            // sample t1 (all layers of the block) into pre.
            auto rows = [&](int t1) {
                if (t1 > 0) {
                    for (int e = nt; e < nl * R; e += NCW * 32) {
                        const int i = first + e / R, d = c_dil[i];
                        if (d > 1) hist[(size_t)(c_hoff[i] + ((t1 - 1) & (d - 1))) * R + e % R] = xall[e];
                    }
                }
                for (int e = nt; e < nl * R; e += NCW * 32) {
                    const int il = e / R, i = first + il, d = c_dil[i];
                    olds[e] = d == 1 ? xall[e] : hist[(size_t)(c_hoff[i] + (t1 & (d - 1))) * R + e % R];
                }
                asm volatile("bar.sync 1, %0;" ::"n"(NCW * 32) : "memory");
                const float* crow = cond + (size_t)(t1 / HOP) * NL * 2 * R;
                for (int row = nt; row < nl * 2 * R; row += NCW * 32) {
                    const int il = row / (2 * R), qq = row % (2 * R), i = first + il;
                    const uint4* w = (const uint4*)(g_wp + ((size_t)i * 2 * R + qq) * R);
                    const float* o = olds + il * R;
                    float acc = 0.0f;
#pragma unroll
                    for (int v = 0; v < R / 8; v++) {
                        const uint4 p = w[v];
                        acc += lo16(p.x) * o[8 * v] + hi16(p.x) * o[8 * v + 1] + lo16(p.y) * o[8 * v + 2] +
                               hi16(p.y) * o[8 * v + 3] + lo16(p.z) * o[8 * v + 4] + hi16(p.z) * o[8 * v + 5] +
                               lo16(p.w) * o[8 * v + 6] + hi16(p.w) * o[8 * v + 7];
                    }
                    pre[row] = acc + gate_b[i * 2 * R + qq] + crow[i * 2 * R + qq];
                }
                __syncwarp();
                if (lane == 0) mbar_arrive(bar_pre);
            };
            rows(0);
            for (int t = 0; t < n_samples; t++) {
                if (nt < S && !last_block) {
                    float acc = 0.0f;
                    const u32* wsk = (const u32*)g_wsk + (size_t)first * (R / 2) * S + nt;
                    u32 wv[R / 2];
                    load_pairs<R / 2>(wv, wsk);
                    mbar_wait(bar_seg, t & 1, false);
                    for (int il = 0; il < nl; il++) {
                        acc = pair_dot<R / 2>(wv, hsm + il * R, acc);
                        if (il + 1 < nl) load_pairs<R / 2>(wv, wsk + (il + 1) * (R / 2) * S);
                    }
                    send1(p_skb, acc, p_bar);
                }
                if (t + 1 < n_samples) {
                    mbar_wait(bar_seg, t & 1, false);
                    rows(t + 1);
                }
            }
        }
        if (profiling) {
            prof[rank] = pacc[0];
            if (rank == 0) {
                for (int il = 0; il < 8; il++) prof[20 + il] = il < nl ? lacc[il] : 0;
            }
        }
    } else if (rank == RP) {
        const u32 q_za = map_rank(smem_u32(za), RQ) + 4 * tid;
        const u32 q_bar = map_rank(bar_in, RQ);
        // The last chain block's skip rows: thread (s = tid % S, p = tid / S)
        // takes pairs [p·R/(2·TPSP), (p+1)·R/(2·TPSP)) of each layer's inputs.
        constexpr int PM = R / 2 / TPSP;
        const int s_row = tid % S, s_part = tid / S;
        const u32* wsk = (const u32*)g_wsk + ((size_t)(NCB - 1) * LPB * (R / 2) + s_part * PM) * S + s_row;
        // This thread's biases, in registers: its skip row and its two relu rows.
        const int a0 = 16 * warp + (lane >> 2);
        const float sb = tid < S ? skip_b[tid] : 0.0f, rb0 = relu_b[a0], rb1 = relu_b[a0 + 8];
        const u32 q0 = q_za - 4 * tid;  // Q's za, as bytes
        uint4 wreg[S / 16];
        head_regs<S>(wreg, g_wz);
        for (int t = 0; t < n_samples; t++) {
            const long long c0 = clock64();
            float acc = 0.0f;
            u32 wv[PM];
            load_pairs<PM>(wv, wsk);
            for (int il = 0; il < NLAST; il++) {
                mbar_wait_critical(bars + 24 + 8 * il, t & 1);
                if (tid == 0) ARM(bars + 24 + 8 * il, R * 4);  // the next sample's
                acc = pair_dot<PM>(wv, hl + il * R + s_part * 2 * PM, acc);
                if (il + 1 < NLAST) load_pairs<PM>(wv, wsk + (il + 1) * (R / 2) * S);
            }
            ppart[s_part * S + s_row] = acc;
#if NCB > 1
            mbar_wait_critical(bar_in, t & 1);  // the other chain blocks' partials (long there)
            if (tid == 0) ARM(bar_in, (NCB - 1) * S * 4);
#endif
            const long long c1 = clock64();
            __syncthreads();
            if (tid < S) {
                float v = sb;
#pragma unroll
                for (int k = 0; k < NCB - 1; k++) v += skb[k * S + tid];
#pragma unroll
                for (int p = 0; p < TPSP; p++) v += ppart[p * S + tid];
                head_input((u16*)zs, tid, fmaxf(v, 0.0f));
            }
            __syncthreads();
            {
                float r0, r1;
                head_rows<S>(wreg, (const u16*)zs, r0, r1);
                // Rows a0, a0 + 1 (and + 8) from the lanes of g and g + 1, as hi
                // and lo pairs (u32 at head_at / 2 and 8 further) into Q's za.
                const float z0 = fmaxf(r0 + rb0, 0.0f), z1 = fmaxf(r1 + rb1, 0.0f);
                const float n0 = __shfl_down_sync(0xffffffffu, z0, 4), n1 = __shfl_down_sync(0xffffffffu, z1, 4);
                if ((lane & 7) == 0) {
                    u32 h, l;
                    split_pair(z0, n0, h, l);
                    send1(q0 + 2 * head_at(a0), __uint_as_float(h), q_bar);
                    send1(q0 + 2 * head_at(a0) + 32, __uint_as_float(l), q_bar);
                    split_pair(z1, n1, h, l);
                    send1(q0 + 2 * head_at(a0 + 8), __uint_as_float(h), q_bar);
                    send1(q0 + 2 * head_at(a0 + 8) + 32, __uint_as_float(l), q_bar);
                }
            }
            if (profiling) {
                pacc[0] += c1 - c0;
                pacc[1] += clock64() - c1;
            }
        }
        if (profiling) {
            prof[16] = pacc[0];
            prof[17] = pacc[1];
        }
    } else {
        const u32 b0_xin = map_rank(smem_u32(xin), 0) + 8 * lane;
        const u32 b0_bar = map_rank(bar_in, 0);
        u64 rs[4];
#pragma unroll
        for (int k = 0; k < 4; k++) rs[k] = rng_state[k];
        // e = emb_p[y(t-1)] + emb_b, this lane's pair; x(0) from y = 128.
        float e0 = 0.0f, e1 = 0.0f;
        const bool xlane = 2 * lane < R;  // lanes sending a pair of x
        if (warp == 0 && xlane) {
            e0 = emb_p[128 * R + 2 * lane] + emb_b[2 * lane];
            e1 = emb_p[128 * R + 2 * lane + 1] + emb_b[2 * lane + 1];
            send2(b0_xin, embc[128 * R + 2 * lane] + e0, embc[128 * R + 2 * lane + 1] + e1, b0_bar);
        }
        const u16* zf = (const u16*)za;        // the relu output as B terms (sent by P)
        float* cand_v = qpart;                 // [16] each warp's best
        int* cand_i = (int*)(qpart + 16);      // [16] its class
        const int a0 = 16 * warp + (lane >> 2);  // this lane's rows: a0, a0 + 8
        const float ob0 = out_b[a0], ob1 = out_b[a0 + 8];
        uint4 wreg[A / 16];
        head_regs<A>(wreg, g_wo);
        for (int t = 0; t < n_samples; t++) {
            const long long c0 = clock64();
            // The step's random draw, before the wait (it does not depend on it).
            float g0 = 0.0f, g1 = 0.0f;
            if (mode != SAMPLE_MODE) {
                const u64 key = rng_next(rs);
                g0 = gumbel(key, a0);
                g1 = gumbel(key, a0 + 8);
            }
            mbar_wait_critical(bar_in, t & 1);
            const long long c1 = clock64();
            if (tid == 0) ARM(bar_in, A * 4);
            float l0, l1;
            head_rows<A>(wreg, zf, l0, l1);
            l0 += ob0;
            l1 += ob1;
            if (probs_out && (lane & 3) == 0) {
                logits[a0] = l0;
                logits[a0 + 8] = l1;
            }
            {
                const float sc = step_mode(mode, voiced, t / HOP) == SAMPLE_TEMPERATURE ? inv_tau : 1.0f;
                float best = l0 * sc + g0, v1 = l1 * sc + g1;
                int bi = a0;
                if (v1 > best) {
                    best = v1;
                    bi = a0 + 8;
                }
#pragma unroll
                for (int o = 4; o < 32; o <<= 1) {  // over g (rows); every c holds the same
                    const float ov = __shfl_xor_sync(0xffffffffu, best, o);
                    const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
                    if (ov > best || (ov == best && oi < bi)) {
                        best = ov;
                        bi = oi;
                    }
                }
                if (lane == 0) {
                    cand_v[warp] = best;
                    cand_i[warp] = bi;
                }
            }
            __syncthreads();
            const long long c2 = clock64();
            if (warp == 0) {
                // Lanes 0-15 reduce the 16 candidates (lanes 16-31 hold none).
                float best = lane < 16 ? cand_v[lane] : __int_as_float(0xff800000);
                int bi = lane < 16 ? cand_i[lane] : A;
#pragma unroll
                for (int o = 1; o < 16; o <<= 1) {
                    const float ov = __shfl_xor_sync(0xffffffffu, best, o);
                    const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
                    if (ov > best || (ov == best && oi < bi)) {
                        best = ov;
                        bi = oi;
                    }
                }
                const int y = R > 32 ? __shfl_sync(0xffffffffu, bi, 0) : bi;  // lanes 0-15 send x for r = 32
                const bool lead = t < n_lead;  // the lead: silence fed and written
                const int yin = lead ? 128 : (forced ? (int)forced[t] : y);
                if (t + 1 < n_samples && xlane)
                    send2(b0_xin, embc[yin * R + 2 * lane] + e0, embc[yin * R + 2 * lane + 1] + e1, b0_bar);
                __syncwarp();
                if (lane == 0) out[t] = lead ? 128 : y;
                if (probs_out) {
                    warp_sample<true>(logits, probs, SAMPLE_MODE, 1.0f, 0.0f);  // the probabilities only
                    __syncwarp();
                    for (int k = lane; k < A; k += 32) probs_out[(size_t)t * A + k] = probs[k];
                }
                if (xlane) {
                    e0 = emb_p[yin * R + 2 * lane] + emb_b[2 * lane];
                    e1 = emb_p[yin * R + 2 * lane + 1] + emb_b[2 * lane + 1];
                }
            }
            if (profiling) {
                const long long c3 = clock64();
                pacc[0] += c1 - c0;
                pacc[1] += c3 - c1;
                lacc[0] += c3 - c2;
            }
        }
        if (tid == 0) {
            for (int k = 0; k < 4; k++) rng_state[k] = rs[k];
        }
        if (profiling) {
            prof[18] = pacc[0];
            prof[19] = pacc[1];
            for (int k = NCB; k < 16; k++) prof[k] = 0;  // the counters no block writes
            prof[28] = lacc[0];
            for (int k = 29; k < 32; k++) prof[k] = 0;
        }
    }
    cluster_sync(true);
}
