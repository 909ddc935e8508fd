// Kernel 2e: many independent utterances ("streams") with the streams as the
// warpgroup MMA's N dimension (issue 9). Kernel 2c (wavenet_tiles.cu with
// WGMMA = 1) puts a block's streams on the wgmma's 64 rows, so a block holds
// 64 streams at least, and one 64-stream block's step is a latency chain
// (benchmarks/gpu.md). Here the weights are the A operand (64 output rows
// per MMA) and the activations the B operand, so a block holds any multiple
// of 8 streams (BS ≤ 64): fewer streams per block shorten every product, the
// gate and the residual update, and more blocks share the GPU.
//
// 256 threads, two warpgroups; warpgroup wg, warp w (of 4) in it, lane =
// 4·g + tq. An MMA's accumulator fragment gives a thread rows 16·w + g and
// 16·w + g + 8 of its 64-row tile, for streams 8·t + 2·tq + e (t < BS / 8,
// e < 2): d[t][e] and d[t][2 + e].
//   * Dilated product [2r, 2r]·[2r, BS] (r = 64): warpgroup wg takes tile wg
//     of W_dil, whose rows the host orders so that rows 16·w + g and
//     16·w + g + 8 are the tanh and sigmoid rows of unit u = 32·wg + 8·w + g:
//     each thread gates one unit for its 2·BS/8 streams where the product ends.
//   * [W_res; W_skip] (r + s rows): warpgroup 0 takes the residual tile, and
//     keeps the residual stream x of channels 16·w + g, + 8 in registers for
//     the whole step (and writes their history rings); warpgroup 1 takes the
//     s / 64 skip tiles, the skip sum accumulating in its registers over all
//     layers, and under them writes the next layer's x(t - d) (read from the
//     rings a layer ahead) into its B operand.
//   * Relu and output layers: their 64-row tiles alternate over the two
//     warpgroups; the logits go to shared memory for sampling.
// Activations are split into two bfloat16 terms hi + lo (as kernel 2c) and
// stored as the B operand: rows of K contiguous inputs (one row per stream),
// 8 × 8 core matrices (WG_OFF). Where a thread writes channels c and c + 8 of
// one stream (x, the relu layers), the inputs are stored permuted (PI: c and
// c + 8 side by side), so each pair is one 32-bit store per term; the host
// permutes the weights' inputs to match (MultiLayout::cols).
//
// Weights stream from L2 through NSLOT shared-memory slots of SLOT bytes, one
// bulk copy (TMA) per chunk, in kernel 2c's chunk order: per layer W_dil, then
// [W_res; W_skip]; the relu layer in chunks of CR1 rows, the output layer in
// chunks of CR2 rows (multiples of 64). The barrier that starts a chunk also
// publishes the activations it reads: a layer costs two block barriers.
//
// Slot state between launches is the same as the other many-stream kernels';
// the history rings hold each stream's channels in PI order (they start at
// zero and only this kernel reads them).
//
// Defines: BS (a multiple of 8, at most 64), NT (256), SLOT, NSLOT (2 or 3),
// CR1, CR2; R = 64; S a multiple of 64; wgmma.cuh before this file.

#if R != 64 || S % 64 != 0 || BS % 8 != 0 || BS > 64 || NT != 256
#error "wavenet_cols: r = 64, s a multiple of 64, BS a multiple of 8 up to 64, 256 threads"
#endif

__constant__ int k_dil[NL] = DILS;
__constant__ int k_hoff[NL] = HOFFS;

#define NB (BS / 8)   // 8-stream column tiles
#define NW (NT / 32)
#define MS (S / 64)   // skip tiles (warpgroup 1)
#define NCH (2 * NL + A / CR1 + A / CR2)
#define LK (A + 4)
#define G 4                // sampling threads per stream
#ifdef FAST_EXPF
#define EX2_SOFTMAX false  // the softmax's exponentials by __expf (kernel 2c's)
#else
#define EX2_SOFTMAX true
#endif
#define MAXI(a, b) ((a) > (b) ? (a) : (b))
#define REG1_BYTES MAXI(MAXI(2 * BS * 2 * R * 2, 2 * BS * S * 2), BS * LK * 4)
#define REG2_BYTES MAXI(MAXI(2 * BS * R * 2, 2 * BS * A * 2), NW * A * 4)
// Input c of a 16-aligned group stored at PI(c): c and c + 8 side by side.
#define PI(c) ((((c) >> 4) << 4) + (((c) & 7) << 1) + (((c) >> 3) & 1))

// tanh(a)·σ(b) = (e^2a − 1) / ((e^2a + 1)(1 + e^−b)) in three multi-function
// operations (kernel 2c's gate_fast3): a clamped to ±15, b from −40, so the
// denominator stays within [1, 3e30].
__device__ __forceinline__ float cols_gate(float a, float b) {
#ifdef FAST_EXPF
    const float e1 = __expf(2.0f * fminf(fmaxf(a, -15.0f), 15.0f));
    const float e2 = __expf(-fmaxf(b, -40.0f));
    return __fdividef(e1 - 1.0f, (e1 + 1.0f) * (1.0f + e2));
#else
    const float e1 = ex2_ftz(fminf(fmaxf(a, -15.0f), 15.0f) * 2.8853900817779268f);  // 2·log2(e)
    const float e2 = ex2_ftz(fmaxf(b, -40.0f) * -1.4426950408889634f);
    return (e1 - 1.0f) * rcp_ftz((e1 + 1.0f) * (1.0f + e2));
#endif
}
// x ≈ hi + lo, both bfloat16 (hi rounded, lo the rounded rest).
__device__ __forceinline__ void split_one(float x, u16& hi, u16& lo) {
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(hi) : "f"(x));
    const float r = x - __uint_as_float(((u32)hi) << 16);
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(lo) : "f"(r));
}
// One value at input k of stream row s of a K-wide B operand (hi, then lo BS·K further).
template <int K>
__device__ __forceinline__ void put_one(u16* buf, int s, int k, float x) {
    u16 h, l;
    split_one(x, h, l);
    buf[WG_OFF(s, k, K)] = h;
    buf[BS * K + WG_OFF(s, k, K)] = l;
}
// Input k of stream rows s and s + 1: each term of both in one conversion.
template <int K>
__device__ __forceinline__ void put_rows2(u16* buf, int s, int k, float x0, float x1) {
    u32 h, l;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(h) : "f"(x1), "f"(x0));
    const float r0 = x0 - __uint_as_float(h << 16), r1 = x1 - __uint_as_float(h & 0xffff0000u);
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(l) : "f"(r1), "f"(r0));
    buf[WG_OFF(s, k, K)] = (u16)(h & 0xffffu);
    buf[WG_OFF(s + 1, k, K)] = (u16)(h >> 16);
    buf[BS * K + WG_OFF(s, k, K)] = (u16)(l & 0xffffu);
    buf[BS * K + WG_OFF(s + 1, k, K)] = (u16)(l >> 16);
}
// Two values at inputs k, k + 1 (k even) of stream row s: one 32-bit store per term.
template <int K>
__device__ __forceinline__ void put_two(u16* buf, int s, int k, float x0, float x1) {
    u32 h, l;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(h) : "f"(x1), "f"(x0));
    const float r0 = x0 - __uint_as_float(h << 16), r1 = x1 - __uint_as_float(h & 0xffff0000u);
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(l) : "f"(r1), "f"(r0));
    *(u32*)(buf + WG_OFF(s, k, K)) = h;
    *(u32*)(buf + BS * K + WG_OFF(s, k, K)) = l;
}

// acc[64 rows, BS] += W[64 rows at w, K] · X[BS, K]ᵀ with X = hi + lo (two
// MMAs per 16 inputs); issued and committed as one group.
// The descriptors are built once per product and stepped along K by adding
// to their address field (16 inputs: 256 bytes, 16 units; no carry out of the
// field below 256 KB), instead of rebuilding each from its address: about ten
// instructions fewer per MMA (DESC_EACH: the old way).
template <int K>
__device__ __forceinline__ void cols_issue(u32 w, u32 x_hi, u32 x_lo, float (&acc)[NB][4]) {
    wg_fence();
    constexpr u32 LBO = 128, SBO = K * 16;
#ifdef DESC_EACH
    asm volatile("" : "+r"(w), "+r"(x_hi), "+r"(x_lo));
#pragma unroll
    for (int k0 = 0; k0 < K; k0 += 16) {
        const u64 da = wg_desc(w + k0 * 16, LBO, SBO);
        wg_mma<BS>(acc, da, wg_desc(x_hi + k0 * 16, LBO, SBO));
        wg_mma<BS>(acc, da, wg_desc(x_lo + k0 * 16, LBO, SBO));
    }
#else
    const u64 da = wg_desc(w, LBO, SBO), dh = wg_desc(x_hi, LBO, SBO), dl = wg_desc(x_lo, LBO, SBO);
#pragma unroll
    for (int k0 = 0; k0 < K; k0 += 16) {
        wg_mma<BS>(acc, da + k0, dh + k0);
        wg_mma<BS>(acc, da + k0, dl + k0);
    }
#endif
    wg_commit();
}
// The MS skip tiles of [W_res; W_skip] (at `w`, R inputs) on the gate outputs, one group.
__device__ __forceinline__ void skip_issue(u32 w, u32 x_hi, u32 x_lo, float (&acc)[MS][NB][4]) {
    wg_fence();
    constexpr u32 LBO = 128, SBO = R * 16;
    const u64 da = wg_desc(w, LBO, SBO), dh = wg_desc(x_hi, LBO, SBO), dl = wg_desc(x_lo, LBO, SBO);
#pragma unroll
    for (int m = 0; m < MS; m++)
#pragma unroll
        for (int k0 = 0; k0 < R; k0 += 16) {
            const u64 a = da + (m * 64 * R * 2 >> 4) + k0;
            wg_mma<BS>(acc[m], a, dh + k0);
            wg_mma<BS>(acc[m], a, dl + k0);
        }
    wg_commit();
}
__device__ __forceinline__ void cols_done(float (&acc)[NB][4]) {
    wg_wait<0>();
    wg_pin(acc);
}
__device__ __forceinline__ void zero(float (&acc)[NB][4]) {
#pragma unroll
    for (int t = 0; t < NB; t++) acc[t][0] = acc[t][1] = acc[t][2] = acc[t][3] = 0.0f;
}

// The 64-row tiles m ≡ wg (mod 2) of a weight chunk of CR rows of K inputs
// at `cw` on the B operand at in_hi / in_lo; epi(m, z) takes each product.
template <int K, int CR, typename Epi>
__device__ __forceinline__ void chunk_tiles(u32 cw, u32 in_hi, u32 in_lo, int wg, Epi epi) {
#pragma unroll
    for (int m = 0; m < CR / 64; m++) {
        if (m % 2 != wg) continue;
        float z[NB][4];
        zero(z);
        cols_issue<K>(cw + m * 64 * K * 2, in_hi, in_lo, z);
        cols_done(z);
        epi(m, z);
    }
}


extern "C" __global__ void __launch_bounds__(NT, 1)
wavenet_cols(MULTI_KERNEL_PARAMS(w_rs, w_unused))
{
    extern __shared__ __align__(1024) unsigned char smem[];
    unsigned char* slots = smem;                // NSLOT x SLOT
    unsigned char* reg1 = smem + NSLOT * SLOT;  // DIN | RIN | LOG
    unsigned char* reg2 = reg1 + REG1_BYTES;    // HIN | OIN | PW
    u16* DIN = (u16*)reg1;                      // [2][BS][2R]: [x(t - d) | x(t)], channels in PI order
    u16* RIN = (u16*)reg1;                      // [2][BS][S]: relu(skip), PI order
    float* LOG = (float*)reg1;                  // [BS][LK] logits
    u16* HIN = (u16*)reg2;                      // [2][BS][R]: gate outputs, unit order
    u16* OIN = (u16*)reg2;                      // [2][BS][A]: relu layer outputs, PI order
    float* PW = (float*)reg2;                   // [NW][A] (temperature sampling, after the output layer)
    int* pos = (int*)(reg2 + REG2_BYTES);       // [BS]
    int* live = pos + BS;
    int* y1 = live + BS;
    int* y2 = y1 + BS;
    int* len = y2 + BS;
    u64* mbar = (u64*)(len + BS);               // [NSLOT]: a slot's chunk has arrived
    long long* coff = (long long*)(mbar + NSLOT);  // [BS] conditioning offsets
    long long* pacc = coff + BS;                // [10] profile sums ([8]: the chunks' bytes)
    float* RB = (float*)(pacc + 10);            // [NL][R] residual biases

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int g = lane >> 2, tq = lane & 3;
    const int wg = warp >> 2, w4 = warp & 3;
    const int slot0 = blockIdx.x * BS;
    const int u = 32 * wg + 8 * w4 + g;  // this thread's gate unit
    const int ch = 16 * w4 + g;          // warpgroup 0: its channels ch, ch + 8 (residual); skip rows 64m + ch, + 8
    u64* rng = st_rng + 4 * (size_t)slot0;
#ifndef PROF_TID
#define PROF_TID 0
#endif
    const bool profiling = prof != nullptr && blockIdx.x == 0 && tid == PROF_TID;
    if (profiling)
        for (int k = 0; k < 10; k++) pacc[k] = 0;
    for (int k = tid; k < NL * R; k += NT) RB[k] = res_b[k];
    long long plast = clock64();
#define MARK(k) \
    if (profiling) { const long long now = clock64(); pacc[k] += now - plast; plast = now; }

    const Slots slots_st{pos, live, y1, y2, len};
    slots_st.load(BS, slot0, st_pos, st_len, st_y);
    if (tid < BS) coff[tid] = st_cond[slot0 + tid];
    int next_chunk = 0, next_slot = 0;
    auto issue = [&]() {
        if (warp == 0) {
            u32 bytes;
            const wt* src = chunk_src(w_dil, w_rs, w_relu, w_out, next_chunk, bytes);
            const u32 bar = smem_u32(mbar + next_slot);
            if (lane == 0) {
#ifdef RELEASE_EXPECT
                mbar_expect(bar, bytes);
#else
                mbar_expect_relaxed(bar, bytes);
#endif
                bulk_load(smem_u32(slots + next_slot * SLOT), src, bytes, bar);
            }
        }
        next_chunk = next_chunk + 1 == NCH ? 0 : next_chunk + 1;
        next_slot = next_slot + 1 == NSLOT ? 0 : next_slot + 1;
    };
    u32 phases = 0;  // bit k: the parity of slot k's next phase
    if (tid == 0) {
        for (int k = 0; k < NSLOT; k++) mbar_init(smem_u32(mbar + k), 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    // Starts the next chunk: waits for its data, one block barrier (which also
    // publishes the activations written before it, through the proxy fence).
    // Returns the chunk's address. The slot the previous chunk used is free
    // from here: every thread calls issue() once per begin(), after it has
    // issued its MMAs (warp 0's bulk copy then runs under them, instead of
    // holding its warpgroup's MMAs back: run v58).
    int used_slot = 0;
    auto begin = [&]() -> u32 {
        mbar_wait(smem_u32(mbar + used_slot), (phases >> used_slot) & 1, false);
        phases ^= 1u << used_slot;
        MARK(8);  // the wait for the chunk's bytes alone
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        __syncthreads();
        const u32 p = smem_u32(slots + used_slot * SLOT);
        used_slot = used_slot + 1 == NSLOT ? 0 : used_slot + 1;
        return p;
    };
    for (int k = 0; k < NSLOT - 1; k++) issue();
    __syncthreads();

    float2* const hb = (float2*)hist + (8 * w4 + g);  // this thread's column of every ring row
    const int trow = (slot0 + 2 * tq) * HIST_ROWS;     // ring row 0 of its first stream
    const u32 din_hi = smem_u32(DIN), din_lo = din_hi + BS * 2 * R * 2;
    const u32 hin_hi = smem_u32(HIN), hin_lo = hin_hi + BS * R * 2;
    const u32 rin_hi = smem_u32(RIN), rin_lo = rin_hi + BS * S * 2;
    const u32 oin_hi = smem_u32(OIN), oin_lo = oin_hi + BS * A * 2;

    for (int step = 0; step < steps; step++) {
        // This thread's streams: s = 8t + 2tq + e.
        int ps[NB][2];
        bool lv[NB][2];
        const float* crow[NB][2];
#pragma unroll
        for (int t = 0; t < NB; t++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                const int s = 8 * t + 2 * tq + e;
                ps[t][e] = pos[s];
                lv[t][e] = live[s];
                // A dead slot reads its first frame (in the pool since start()), so the
                // loads need no branch; what it computes is never used.
                crow[t][e] = cond_pool + coff[s] + (long long)(lv[t][e] ? ps[t][e] / HOP : 0) * NL * 2 * R + 2 * u;
            }
        // The history ring of stream s = 8t + 2tq + e at ring row ho + (t & dm)
        // of a layer: channels ch, ch + 8 as one float2 (rows of R / 2 float2s
        // from hb, the thread's column; row numbers fit 32 bits).
        auto ring = [&](int t, int e, int ho, int dm) -> float2* {
            return hb + (size_t)(unsigned)(trow + (8 * t + e) * HIST_ROWS + ho + (ps[t][e] & dm)) * (R / 2);
        };
        // x(t) (warpgroup 0) and x(t - d) of channels ch, ch + 8 ([t][e], [t][2 + e]).
        float x[NB][4], xo[NB][4];
        auto load_old = [&](int i) {
            const int ho = k_hoff[i], dm = k_dil[i] - 1;
#pragma unroll
            for (int t = 0; t < NB; t++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const float2 v = *ring(t, e, ho, dm);
                    xo[t][e] = v.x;
                    xo[t][2 + e] = v.y;
                }
        };
        // Layer i's x(t) half of its B operand [x(t - d) | x(t)], and x(t)
        // into the ring (warpgroup 0). Dead slots write their rings too (no
        // branch per stream): a slot's histories are zeroed when a stream
        // starts in it, and its position stays in range.
        auto put_din = [&](int i) {
            const int ho = k_hoff[i], dm = k_dil[i] - 1;
#pragma unroll
            for (int t = 0; t < NB; t++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const int s = 8 * t + 2 * tq + e;
                    put_two<2 * R>(DIN, s, R + PI(ch), x[t][e], x[t][2 + e]);
                    *ring(t, e, ho, dm) = make_float2(x[t][e], x[t][2 + e]);
                }
        };
        // The x(t - d) half (loaded by load_old): warpgroup 0 for layer 0,
        // warpgroup 1 for the others. Warpgroup 1's thread reads the ring slots
        // of warpgroup 0's thread of the same (w4, g, tq) a layer ahead, before
        // the barrier after which that thread overwrites them.
        auto put_old = [&]() {
#pragma unroll
            for (int t = 0; t < NB; t++)
#pragma unroll
                for (int e = 0; e < 2; e++)
                    put_two<2 * R>(DIN, 8 * t + 2 * tq + e, PI(ch), xo[t][e], xo[t][2 + e]);
        };
        // The gate's additive terms (conditioning + bias) of unit u: (tanh, sigmoid) per stream.
        float2 lb[NB][2];
        auto load_lb = [&](int i) {
#pragma unroll
            for (int t = 0; t < NB; t++)
#pragma unroll
                for (int e = 0; e < 2; e++)
                    lb[t][e] = *(const float2*)(crow[t][e] + i * 2 * R);
        };
        if (wg == 0) {
            load_old(0);
#pragma unroll
            for (int t = 0; t < NB; t++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const int s = 8 * t + 2 * tq + e;
                    const int c1 = y1[s] * R, c2 = y2[s] * R;
                    x[t][e] = emb_c[c1 + ch] + emb_p[c2 + ch] + emb_b[ch];
                    x[t][2 + e] = emb_c[c1 + ch + 8] + emb_p[c2 + ch + 8] + emb_b[ch + 8];
                }
            put_old();
            put_din(0);
        }
        load_lb(0);
        float sk[MS][NB][4];
#pragma unroll
        for (int m = 0; m < MS; m++) zero(sk[m]);
        MARK(0);

        for (int i = 0; i < NL; i++) {
            // Layer i + 1's x(t - d) (warpgroup 1), read before warpgroup 0 overwrites its ring slot.
            if (wg == 1 && i + 1 < NL) load_old(i + 1);
            const u32 cd = begin();
            MARK(1);
            float zd[NB][4];
            zero(zd);
            cols_issue<2 * R>(cd + wg * 64 * 2 * R * 2, din_hi, din_lo, zd);
            issue();
            cols_done(zd);
            MARK(2);
#pragma unroll
            for (int t = 0; t < NB; t++)
                put_rows2<R>(HIN, 8 * t + 2 * tq, u, cols_gate(zd[t][0] + lb[t][0].x, zd[t][2] + lb[t][0].y),
                             cols_gate(zd[t][1] + lb[t][1].x, zd[t][3] + lb[t][1].y));
            if (i + 1 < NL) load_lb(i + 1);
            MARK(3);
            const u32 crs = begin();
            MARK(1);
            if (wg == 0) {
                if (i + 1 == NL) issue();
                if (i + 1 < NL) {
                    float zr[NB][4];
                    zero(zr);
                    cols_issue<R>(crs, hin_hi, hin_lo, zr);
                    issue();
                    cols_done(zr);
                    const float r0 = RB[i * R + ch], r1 = RB[i * R + ch + 8];
#pragma unroll
                    for (int t = 0; t < NB; t++) {
                        x[t][0] += zr[t][0] + r0;
                        x[t][1] += zr[t][1] + r0;
                        x[t][2] += zr[t][2] + r1;
                        x[t][3] += zr[t][3] + r1;
                    }
                    put_din(i + 1);
                }
                MARK(4);
            } else {
                // The skip tiles as one group of MMAs, waited for once; under
                // them, layer i + 1's x(t - d) half of its B operand.
                skip_issue(crs + R * R * 2, hin_hi, hin_lo, sk);
                issue();
                if (i + 1 < NL) put_old();
                wg_wait<0>();
#pragma unroll
                for (int m = 0; m < MS; m++) wg_pin(sk[m]);
                MARK(5);
            }
        }
        // relu(skip + b) as the relu layer's B operand (warpgroup 1's rows 64m + ch, + 8).
        if (wg == 1) {
#pragma unroll
            for (int m = 0; m < MS; m++) {
                const int c = 64 * m + ch;
                const float b0 = skip_b[c], b1 = skip_b[c + 8];
#pragma unroll
                for (int t = 0; t < NB; t++)
#pragma unroll
                    for (int e = 0; e < 2; e++)
                        put_two<S>(RIN, 8 * t + 2 * tq + e, PI(c), fmaxf(sk[m][t][e] + b0, 0.0f),
                                   fmaxf(sk[m][t][2 + e] + b1, 0.0f));
            }
        }
        for (int c = 0; c < A / CR1; c++) {
            const u32 cw = begin();
            issue();
            chunk_tiles<S, CR1>(cw, rin_hi, rin_lo, wg, [&](int m, const float(&z)[NB][4]) {
                const int o = c * CR1 + 64 * m + ch;
                const float a0 = relu_b[o], a1 = relu_b[o + 8];
#pragma unroll
                for (int t = 0; t < NB; t++)
#pragma unroll
                    for (int e = 0; e < 2; e++)
                        put_two<A>(OIN, 8 * t + 2 * tq + e, PI(o), fmaxf(z[t][e] + a0, 0.0f), fmaxf(z[t][2 + e] + a1, 0.0f));
            });
        }
        for (int c = 0; c < A / CR2; c++) {
            const u32 cw = begin();
            issue();
            chunk_tiles<A, CR2>(cw, oin_hi, oin_lo, wg, [&](int m, const float(&z)[NB][4]) {
                const int o = c * CR2 + 64 * m + ch;
                const float a0 = out_b[o], a1 = out_b[o + 8];
#pragma unroll
                for (int t = 0; t < NB; t++)
#pragma unroll
                    for (int e = 0; e < 2; e++) {
                        float* row = LOG + (8 * t + 2 * tq + e) * LK;
                        row[o] = z[t][e] + a0;
                        row[o + 8] = z[t][2 + e] + a1;
                    }
            });
        }
        __syncthreads();
        MARK(6);
        auto advance = [&](int b, int y, const u64* rs) {
            slots_st.advance(b, slot0 + b, y, rs, rng, out, forced, st_lead, steps, step);
        };
        // Live stream b's step: conditioning row st_cond / (ℓ·2r) + pos / HOP of the pool.
        auto mode_of = [&](int b) {
            if (mode != SAMPLE_VOICED_TEMPERATURE || !live[b]) return mode == SAMPLE_VOICED_TEMPERATURE ? SAMPLE_DIRECT : mode;
            return step_mode(mode, voiced, st_cond[slot0 + b] / (NL * 2 * R) + slots_st.pos[b] / HOP);
        };
        sample_streams<BS, G, NW, LK, EX2_SOFTMAX>(LOG, PW, live, rng, probs_out, slot0, steps, step, mode, inv_tau, advance, mode_of);
        __syncthreads();
        MARK(7);
    }
    // The chunks issued ahead land before the block exits.
    for (int k = 0; k < NSLOT - 1; k++) {
        mbar_wait(smem_u32(mbar + used_slot), (phases >> used_slot) & 1, false);
        phases ^= 1u << used_slot;
        used_slot = used_slot + 1 == NSLOT ? 0 : used_slot + 1;
    }
    if (profiling) {
        // Phase 1 is the chunk starts (bytes' wait + barrier), [8] the bytes' wait alone.
        for (int k = 0; k < 8; k++) prof[k] = pacc[k] + (k == 1 ? pacc[8] : 0);
        prof[8] = pacc[8];
        prof[9] = pacc[2] + pacc[4] + pacc[5];
    }
    slots_st.store(BS, slot0, st_pos, st_y);
}
