// Kernel 2b: many independent utterances ("streams"), highest throughput,
// with every per-step product laid out as a tensor-core GEMM tile grid
// (issue 9). It replaces wavenet_multi.cu's per-panel loops, whose
// multiplies ran at ~3 % of the tensor cores (long dependent MMA chains,
// two barriers and an activation split per panel, ALU-bound indexing).
//
// Each block owns BS = 16·WM stream slots and advances them one sample per
// step; blocks never wait for one another. Warp (wm, wn) of the WM × WN
// warps owns stream rows [16·wm, 16·wm + 16) of every product and a fixed
// contiguous range of its output columns, so:
//   * each layer's dilated product [BS, 2r] x [2r, 2r] lands in registers
//     with the tanh and sigmoid rows of a unit interleaved (the host stores
//     W_dil's rows as tanh_0, sigmoid_0, tanh_1, ...): the gate is computed
//     where the product ends, with no shared-memory round trip;
//   * the residual stream x (float32) stays in the registers of the warps
//     owning the residual product's columns for the whole step, and those
//     threads alone read and write its history rings (so a ring slot is
//     read before it is overwritten by the same thread);
//   * the skip sum accumulates in registers over all layers.
// Products read their A operand (the activations, split into two bfloat16
// terms hi + lo so they keep ~16 bits, as wavenet_multi) and their B
// operand (the weights) from shared memory with ldmatrix, and multiply with
// mma.sync m16n8k16 (float32 accumulation); the k loop is unrolled at
// compile time and each warp has 2 × its n tiles of independent MMAs per k.
//
// Weights stream from L2 through NSLOT shared-memory slots of SLOT bytes in
// a fixed chunk order per step: per layer W_dil, then [W_res; W_skip]; then
// the relu layer in chunks of CR1 rows and the output layer in chunks of
// CR2 rows. Chunk c + NSLOT − 1 is issued (cp.async) when chunk c starts;
// the barrier that starts a chunk is also the one that publishes the
// activations it reads, so a layer costs two block barriers.
//
// Slot state between launches is the same as wavenet_multi's.
//
// F16 = 1: the activations are IEEE half precision, one tensor-core pass
// (weights bfloat16-rounded, then scaled by SC_* into half by the host; the
// sums are multiplied back by SC_*), instead of two bfloat16 terms.
//
// WGMMA = 1 (sm_90a, 64 slots per block): the products are warpgroup MMAs
// (wgmma.mma_async, wgmma.cuh) with both operands read from shared memory by
// descriptor, instead of ldmatrix fragments and mma.sync: warpgroup wn (warps
// 4·wn … 4·wn + 3) multiplies all 64 rows by its column range, and warp wm of
// it gets the same accumulator fragments as above. The activation buffers
// and the weight chunks (tiled so by the host, MultiLayout::tiles_wg) are
// stored as 8 × 8 core matrices (WG_OFF); a layer's skip product runs while
// its residual update is computed. Writes by ordinary stores and cp.async
// are made visible to the MMAs (the async proxy) by a proxy fence before the
// block barrier that starts each chunk.
//
// Defines: BS (slots per block, 16·WM), NT (threads, 32·WM·WN), WN, SLOT,
// NSLOT (2 or 3), CR1, CR2 (multiples of 16·WN dividing A), F16, SC_DIL,
// SC_RS, SC_RELU, SC_OUT (F16 only), WGMMA (with wgmma.cuh before this file).
#ifndef WGMMA
#define WGMMA 0
#endif
#ifndef WG_SW
#define WG_SW 0
#endif
#if WGMMA
// Per-layer constants read with a uniform index through the constant cache:
// as global loads (c_dil, c_hoff) they began a chain of two dependent loads
// per layer (ncu, run v48).
__constant__ int k_dil[NL] = DILS;
__constant__ int k_hoff[NL] = HOFFS;
#define L_DIL k_dil
#define L_HOFF k_hoff
#else
#define L_DIL c_dil
#define L_HOFF c_hoff
#endif
// TMA (default with WGMMA; NO_TMA switches it off): each weight chunk is one
// bulk copy by the tensor-memory accelerator, issued by thread 0 and
// completing on its slot's mbarrier, instead of cp.async by every thread.
#if WGMMA && !defined(NO_TMA)
#define TMA 1
#else
#define TMA 0
#endif
// Bulk copies per chunk (a power of two up to 8: every chunk's bytes are a
// multiple of 512). More than one was slower in run v43.
#ifndef TMA_SPLIT
#define TMA_SPLIT 1
#endif
// RS_JOINT (switch, with WGMMA): the residual and skip products issued
// together and both waited for before the residual update.
#if WGMMA && defined(RS_JOINT_ON)
#define RS_JOINT 1
#else
#define RS_JOINT 0
#endif
#if F16
#define TERMS 1
#define MMA_TYPES "f16.f16"
#define CVT_X2 "cvt.rn.f16x2.f32"
#else
#define TERMS 2
#define MMA_TYPES "bf16.bf16"
#define CVT_X2 "cvt.rn.bf16x2.f32"
#endif
#ifndef SC_DIL  // unscaled weights (the bfloat16 path; set by the host for F16)
#define SC_DIL 1.0f
#define SC_RS 1.0f
#define SC_RELU 1.0f
#define SC_OUT 1.0f
#endif

#define NW (NT / 32)
#define WM (BS / 16)
#define NTD (2 * R / 8 / WN)  // dilated n tiles per warp
#define NTR (R / 8 / WN)      // residual n tiles per warp
#define NTS (S / 8 / WN)      // skip n tiles per warp
#define NT1 (CR1 / 8 / WN)    // relu n tiles per warp per chunk
#define NT2 (CR2 / 8 / WN)    // output n tiles per warp per chunk
#define NCH (2 * NL + A / CR1 + A / CR2)  // weight chunks per step
#define G (NT / BS)                       // sampling threads per stream (2·WN)

// Row strides (elements) of the bfloat16 activation buffers and the logits:
// 16 bytes past a multiple of 128, so ldmatrix rows hit distinct banks
// (unpadded when the buffers are core-matrix tiled for WGMMA).
#if WGMMA
#define DK (2 * R)
#define HK R
#define RK S
#define OK A
// Element (row, col) of an A operand of K inputs and row stride STRIDE, and
// the offset of its lo terms: core matrices, or 128-byte swizzled (WG_SW).
#if WG_SW
#define AIX(row, col, K, STRIDE) SW_OFF(row, col, BS)
#else
#define AIX(row, col, K, STRIDE) WG_OFF(row, col, K)
#endif
#else
#define DK (2 * R + 8)
#define HK (R + 8)
#define RK (S + 8)
#define OK (A + 8)
#define AIX(row, col, K, STRIDE) ((row) * (STRIDE) + (col))
#endif
#define LO_OFF(STRIDE) (BS * (STRIDE))
#if WGMMA
#define LK (A + 4)  // 1 KB less, so that three 32 KB weight slots fit beside 64 streams
#else
#define LK (A + 8)
#endif

#define MAXI(a, b) ((a) > (b) ? (a) : (b))
#define REG1_BYTES MAXI(MAXI(TERMS * BS * DK * 2, TERMS * BS * RK * 2), BS * LK * 4)
#define REG2_BYTES MAXI(TERMS * BS * HK * 2, TERMS * BS * OK * 2)

// The gate in fast math: ex2.approx and a fast reciprocal, absolute errors
// ~1e-7, far below the bfloat16 weights' rounding this kernel is checked
// against (the accurate tanhf/expf cost several times the gate's products).
__device__ __forceinline__ float gate_fast(float a, float b) {
    const float th = 1.0f - __fdividef(2.0f, 1.0f + __expf(2.0f * a));
    const float sg = __fdividef(1.0f, 1.0f + __expf(-b));
    return th * sg;
}

// The gate with three fast-math operations instead of four:
// tanh(a)·σ(b) = (e^2a − 1) / ((e^2a + 1)(1 + e^−b)), a clamped to ±15 (where
// tanh is ±1 in float32) and b from −40 (σ < 5e-18) so nothing overflows.
__device__ __forceinline__ float gate_fast3(float a, float b) {
    const float e1 = __expf(2.0f * fminf(fmaxf(a, -15.0f), 15.0f));
    const float e2 = __expf(-fmaxf(b, -40.0f));
    return __fdividef(e1 - 1.0f, (e1 + 1.0f) * (1.0f + e2));
}

// WGMMA's vector layouts (the host permutes to match): this thread's values
// of the history rings, the conditioning and the gate output are adjacent.
// `n` floats at `p` (a multiple of 4, or 2) into d[t][2h], d[t][2h + 1].
template <int NTW>
__device__ __forceinline__ void ld_pairs(const float* p, float (&d)[NTW][4], int h) {
#pragma unroll
    for (int t = 0; t < NTW; t += 2) {
        if (NTW == 1) {
            const float2 v = *(const float2*)p;
            d[0][2 * h] = v.x; d[0][2 * h + 1] = v.y;
        } else {
            const float4 v = *(const float4*)(p + 2 * t);
            d[t][2 * h] = v.x; d[t][2 * h + 1] = v.y; d[t + 1][2 * h] = v.z; d[t + 1][2 * h + 1] = v.w;
        }
    }
}
template <int NTW>
__device__ __forceinline__ void st_pairs(float* p, const float (&d)[NTW][4], int h) {
#pragma unroll
    for (int t = 0; t < NTW; t += 2) {
        if (NTW == 1) *(float2*)p = make_float2(d[0][2 * h], d[0][2 * h + 1]);
        else *(float4*)(p + 2 * t) = make_float4(d[t][2 * h], d[t][2 * h + 1], d[t + 1][2 * h], d[t + 1][2 * h + 1]);
    }
}

__device__ __forceinline__ void mma_bf16(float* c, const u32* a, u32 b0, u32 b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32." MMA_TYPES ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ void ldsm4(u32* r, u32 addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
// Two values as the A operand's 16-bit pairs (x0 in the low half): bfloat16
// hi and lo terms (x ≈ hi + lo), or half precision (lo unused).
__device__ __forceinline__ void split2(float x0, float x1, u32& hi, u32& lo) {
    asm(CVT_X2 " %0, %1, %2;" : "=r"(hi) : "f"(x1), "f"(x0));
#if F16
    lo = 0;
#else
    const float r0 = x0 - __uint_as_float(hi << 16), r1 = x1 - __uint_as_float(hi & 0xffff0000u);
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(lo) : "f"(r1), "f"(r0));
#endif
}
// Writes x0, x1 as columns col, col + 1 of row `row` of an A operand of K
// inputs and row stride STRIDE (its hi terms, then its lo terms).
template <int K, int STRIDE>
__device__ __forceinline__ void put_pair(u16* buf, int row, int col, float x0, float x1) {
    u32 h, l;
    split2(x0, x1, h, l);
    *(u32*)(buf + AIX(row, col, K, STRIDE)) = h;
    if (TERMS == 2) *(u32*)(buf + LO_OFF(STRIDE) + AIX(row, col, K, STRIDE)) = l;
}
__device__ __forceinline__ void split1(float x, u16& hi, u16& lo) {
    u32 h, l;
    split2(x, 0.0f, h, l);
    hi = (u16)(h & 0xffffu);
    lo = (u16)(l & 0xffffu);
}

// acc[t] += A[16 rows of this warp, K] · B[8 rows of tile t, K]ᵀ for NTW
// tiles: `a_hi`/`a_lo` are this lane's ldmatrix addresses of the A operand
// at k = 0 (row stride `ak` elements), `b` its address of tile pair 0 at
// k = 0 in a weight chunk of row stride K + 8.
#if WGMMA
// The same product by the warp's warpgroup: all 64 rows, its NTW · 8 columns;
// `a_hi`/`a_lo` are the A operand's hi and lo terms' shared addresses, `b`
// the chunk's row group of this warpgroup's first column (b_addr). Issued
// and committed as one group; tiles_done waits for it.
// BROWS: the weight chunk's rows (its swizzle atoms' height with WG_SW).
template <int K, int NTW, int BROWS>
__device__ __forceinline__ void tiles_issue(u32 a_hi, u32 a_lo, u32 b, float (&acc)[NTW][4]) {
    // The addresses made opaque here, so that the compiler builds each
    // descriptor where it is used instead of hoisting dozens of loop-invariant
    // 64-bit descriptors out of the step loop (they spilled).
    asm volatile("" : "+r"(a_hi), "+r"(a_lo), "+r"(b));
    wg_fence();  // the accumulators were written by ordinary instructions
    // Leading byte offset: the next core matrix along K; stride: the next 8
    // rows (WG_SWAP=1 swaps them, a diagnostic for the descriptor's fields).
#if WG_SWAP
    constexpr u32 LBO = K * 16, SBO = 128;
#else
    constexpr u32 LBO = 128, SBO = K * 16;
#endif
#pragma unroll
    for (int k0 = 0; k0 < K; k0 += 16) {
#if WG_SW
        // Atom k0 / 64, then 32 bytes per 16 inputs inside it.
        const u32 ka = (k0 >> 6) * BS * 128 + (k0 & 63) * 2, kb = (k0 >> 6) * BROWS * 128 + (k0 & 63) * 2;
        const u64 db = wg_desc_sw(b + kb);
        wg_mma<NTW * 8>(acc, wg_desc_sw(a_hi + ka), db);
        if (TERMS == 2) wg_mma<NTW * 8>(acc, wg_desc_sw(a_lo + ka), db);
#else
        const u64 db = wg_desc(b + k0 * 16, LBO, SBO);
        wg_mma<NTW * 8>(acc, wg_desc(a_hi + k0 * 16, LBO, SBO), db);
        if (TERMS == 2) wg_mma<NTW * 8>(acc, wg_desc(a_lo + k0 * 16, LBO, SBO), db);
#endif
    }
    wg_commit();
}
// Waits until at most PENDING of this warpgroup's product groups are in flight.
template <int PENDING, int NTW>
__device__ __forceinline__ void tiles_done(float (&acc)[NTW][4]) {
    wg_wait<PENDING>();
    wg_pin(acc);
}
#else
template <int K, int NTW, int BROWS>
__device__ __forceinline__ void tiles_issue(u32 a_hi, u32 a_lo, u32 b, float (&acc)[NTW][4]) {
    static_assert(NTW % 2 == 0, "n tiles per warp come in pairs");
#pragma unroll
    for (int k0 = 0; k0 < K; k0 += 16) {
        u32 ah[4], al[4], bb[NTW / 2][4];
        ldsm4(ah, a_hi + k0 * 2);
        if (TERMS == 2) ldsm4(al, a_lo + k0 * 2);
#pragma unroll
        for (int p = 0; p < NTW / 2; p++) ldsm4(bb[p], b + (p * 16 * (K + 8) + k0) * 2);
#pragma unroll
        for (int p = 0; p < NTW / 2; p++) {
            mma_bf16(acc[2 * p], ah, bb[p][0], bb[p][1]);
            mma_bf16(acc[2 * p + 1], ah, bb[p][2], bb[p][3]);
        }
#pragma unroll
        for (int p = 0; p < NTW / 2; p++) {
            if (TERMS == 2) {
                mma_bf16(acc[2 * p], al, bb[p][0], bb[p][1]);
                mma_bf16(acc[2 * p + 1], al, bb[p][2], bb[p][3]);
            }
        }
    }
}
// mma.sync products are done when tiles_issue returns.
template <int PENDING, int NTW>
__device__ __forceinline__ void tiles_done(float (&)[NTW][4]) {}
#endif

// This lane's ldmatrix address for an A operand (hi at `base`, lo `lo_off`
// bytes further) of row stride `ak` elements, rows of warp row tile wm.
__device__ __forceinline__ u32 a_addr(const u16* base, int ak, int wm, int lane) {
    if (WGMMA) return smem_u32(base);
    const int mi = lane >> 3, r = lane & 7;
    return smem_u32(base + (wm * 16 + r + (mi & 1) * 8) * ak + (mi >> 1) * 8);
}
// This lane's ldmatrix address of the first tile pair `t0` of a weight chunk.
__device__ __forceinline__ u32 b_addr(const unsigned char* chunk, int K, int t0, int lane) {
    if (WGMMA) return smem_u32(chunk) + t0 * (WG_SW ? 1024 : K * 16);  // row group t0, tiled
    const int mi = lane >> 3, r = lane & 7;
    return smem_u32((const u16*)chunk + (t0 * 8 + r + (mi >> 1) * 8) * (K + 8) + (mi & 1) * 8);
}

// Copies ROWS rows of K weights into a slot (row stride K + 8), 16 bytes
// per cp.async; sizes are compile-time, so the indexing is shifts.
template <int K, int ROWS>
__device__ __forceinline__ void copy_chunk(unsigned char* dst, const wt* src) {
#if WGMMA
    // Tiled by the host in this order already: one contiguous copy.
#pragma unroll 4
    for (int c = threadIdx.x; c < ROWS * K / 8; c += NT)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_u32(dst + c * 16)), "l"(src + (size_t)c * 8));
    return;
#endif
    constexpr int CPR = K / 8, N = ROWS * CPR;
#pragma unroll 4
    for (int c = threadIdx.x; c < N; c += NT) {
        const int r = c / CPR, q = c % CPR;
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_u32(dst + (r * (K + 8) + q * 8) * 2)),
                     "l"(src + (size_t)r * K + q * 8));
    }
}
// Chunk c of a step (per layer W_dil, [W_res; W_skip]; relu chunks; output chunks) into `dst`.
__device__ __forceinline__ void copy_step_chunk(const wt* w_dil, const wt* w_rs, const wt* w_relu, const wt* w_out,
                                                int c, unsigned char* dst) {
    if (c < 2 * NL) {
        const int i = c >> 1;
        if ((c & 1) == 0) copy_chunk<2 * R, 2 * R>(dst, w_dil + (size_t)i * 4 * R * R);
        else copy_chunk<R, R + S>(dst, w_rs + (size_t)i * (R + S) * R);
        return;
    }
    c -= 2 * NL;
    if (c < A / CR1) {
        copy_chunk<S, CR1>(dst, w_relu + (size_t)c * CR1 * S);
        return;
    }
    c -= A / CR1;
    copy_chunk<A, CR2>(dst, w_out + (size_t)c * CR2 * A);
}

extern "C" __global__ void __launch_bounds__(NT, 1)
wavenet_tiles(MULTI_KERNEL_PARAMS(w_rs, w_unused))
{
    extern __shared__ __align__(1024) unsigned char smem[];  // 1024: the swizzle atoms (WG_SW)
#if WG_SW
    // The swizzle is applied to absolute shared addresses: a base off 1024
    // bytes would scramble every operand, so stop rather than compute wrong.
    if ((smem_u32(smem) & 1023) != 0) __trap();
#endif
    unsigned char* slots = smem;                           // NSLOT x SLOT
    unsigned char* reg1 = smem + NSLOT * SLOT;             // DIN | RIN | LOG
    unsigned char* reg2 = reg1 + REG1_BYTES;               // HIN | OIN
    u16* DIN = (u16*)reg1;                                 // [2][BS][DK]: [x(t - d) | x(t)], hi then lo
    u16* RIN = (u16*)reg1;                                 // [2][BS][RK]: relu(skip)
    float* LOG = (float*)reg1;                             // [BS][LK] logits
    u16* HIN = (u16*)reg2;                                 // [2][BS][HK]: gate output
    u16* OIN = (u16*)reg2;                                 // [2][BS][OK]: relu layer output
#if WGMMA
    // Room for a third weight slot: the warps' probabilities alias the relu
    // layer's output (temperature sampling runs after the output layer), and
    // the random states stay in device memory (below).
    float* PW = (float*)reg2;                              // [NW][A]
    int* pos = (int*)(reg2 + REG2_BYTES);                  // [BS]
#else
    float* PW = (float*)(reg2 + REG2_BYTES);               // [NW][A]
    int* pos = (int*)(PW + NW * A);                        // [BS]
#endif
    int* live = pos + BS;
    int* y1 = live + BS;
    int* y2 = y1 + BS;
    int* len = y2 + BS;
#if WGMMA
    u64* mbar = (u64*)(len + BS);                          // [NSLOT] (TMA): a slot's chunk has arrived
#else
    u64* rng = (u64*)(len + BS);                           // [BS][4] random states for the launch
    u64* mbar = rng + 4 * BS;
#endif

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int g = lane >> 2, tq = lane & 3;
    const int wm = warp % WM, wn = warp / WM;
    const int b0 = wm * 16 + g, b1 = b0 + 8;  // this thread's two stream rows in every product
    const int slot0 = blockIdx.x * BS;
#if WGMMA
    u64* rng = st_rng + 4 * (size_t)slot0;  // [BS][4] random states, in device memory
#endif
    // PROF_TID (switch): the thread whose clock the profile reads (0: the one issuing the chunks).
#ifndef PROF_TID
#define PROF_TID 0
#endif
    const bool profiling = prof != nullptr && blockIdx.x == 0 && tid == PROF_TID;
#if WGMMA
    // The profile's sums in shared memory: 20 registers fewer for every thread.
    long long* pacc = (long long*)(mbar + NSLOT);  // [10]
    if (profiling)
        for (int k = 0; k < 10; k++) pacc[k] = 0;
    // The residual biases in shared memory (read per layer on the residual update's path).
    float* RB = (float*)(pacc + 10);  // [NL][R]
    for (int k = tid; k < NL * R; k += NT) RB[k] = res_b[k];
#else
    long long pacc[10] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    const float* RB = res_b;
#endif
    long long plast = clock64();
#define MARK(k) \
    if (profiling) { const long long now = clock64(); pacc[k] += now - plast; plast = now; }

    const Slots slots_st{pos, live, y1, y2, len};
    slots_st.load(BS, slot0, st_pos, st_len, st_y);
#if !WGMMA
    if (tid < BS)
#pragma unroll
        for (int k = 0; k < 4; k++) rng[4 * tid + k] = st_rng[4 * (slot0 + tid) + k];
#endif
    // The weight-chunk pipeline: the q-th chunk issued lives in slot q % NSLOT.
    int next_chunk = 0, next_slot = 0;  // = issued % NCH, issued % NSLOT
    auto issue = [&]() {
#if TMA
        // TMA_SPLIT bulk copies by the first lanes of warp 0, completing on
        // the slot's mbarrier (armed first by lane 0 for the whole chunk).
        if (warp == 0) {
            u32 bytes;
            const wt* src = chunk_src(w_dil, w_rs, w_relu, w_out, next_chunk, bytes);
            const u32 bar = smem_u32(mbar + next_slot);
            // Relaxed: the chunk needs no release of this thread's stores
            // (RELEASE_EXPECT restores the release arrival, for comparison).
#ifdef RELEASE_EXPECT
            if (lane == 0) mbar_expect(bar, bytes);
#else
            if (lane == 0) mbar_expect_relaxed(bar, bytes);
#endif
            __syncwarp();
            const u32 part = bytes / TMA_SPLIT;
            if (lane < TMA_SPLIT)
                bulk_load(smem_u32(slots + next_slot * SLOT) + lane * part, (const unsigned char*)src + lane * part,
                          part, bar);
        }
#else
        copy_step_chunk(w_dil, w_rs, w_relu, w_out, next_chunk, slots + next_slot * SLOT);
        asm volatile("cp.async.commit_group;" ::: "memory");
#endif
        next_chunk = next_chunk + 1 == NCH ? 0 : next_chunk + 1;
        next_slot = next_slot + 1 == NSLOT ? 0 : next_slot + 1;
    };
#if TMA
    u32 phases = 0;  // bit k: the parity of slot k's next phase
    if (tid == 0) {
        for (int k = 0; k < NSLOT; k++) mbar_init(smem_u32(mbar + k), 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
#endif
    // Starts the next chunk: waits for its data, one block barrier (which
    // also publishes the activations written before it), refills the slot
    // the previous chunk used. Returns the chunk's slot.
    int used_slot = 0;  // = chunks consumed % NSLOT
    auto begin = [&]() -> const unsigned char* {
#if TMA
        mbar_wait(smem_u32(mbar + used_slot), (phases >> used_slot) & 1, false);
        phases ^= 1u << used_slot;
#else
        asm volatile("cp.async.wait_group %0;" ::"n"(NSLOT - 2) : "memory");
#endif
#if WGMMA && !defined(ABL_PROXY_FENCE)
        // This thread's chunk copies and activation stores, to the async proxy
        // (ABL_PROXY_FENCE leaves it out: an ablation to time its cost only).
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
        __syncthreads();
        issue();
        const unsigned char* p = slots + used_slot * SLOT;
        used_slot = used_slot + 1 == NSLOT ? 0 : used_slot + 1;
        return p;
    };
    for (int k = 0; k < NSLOT - 1; k++) issue();
    __syncthreads();

    const u32 din_hi = a_addr(DIN, DK, wm, lane), din_lo = din_hi + LO_OFF(DK) * 2;
    const u32 hin_hi = a_addr(HIN, HK, wm, lane), hin_lo = hin_hi + LO_OFF(HK) * 2;
    const u32 rin_hi = a_addr(RIN, RK, wm, lane), rin_lo = rin_hi + LO_OFF(RK) * 2;
    const u32 oin_hi = a_addr(OIN, OK, wm, lane), oin_lo = oin_hi + LO_OFF(OK) * 2;

    for (int step = 0; step < steps; step++) {
        const int p0 = pos[b0], p1 = pos[b1];
        const bool l0 = live[b0], l1 = live[b1];
        const float* crow0 = cond_pool + st_cond[slot0 + b0] + (long long)(p0 / HOP) * NL * 2 * R;
        const float* crow1 = cond_pool + st_cond[slot0 + b1] + (long long)(p1 / HOP) * NL * 2 * R;
        float* hrow0 = hist + (size_t)(slot0 + b0) * HIST_ROWS * R;
        float* hrow1 = hist + (size_t)(slot0 + b1) * HIST_ROWS * R;
        // x (the residual stream) in this warp's residual columns; x(t - d) of layer 0.
        // x(t - d) of layer 0; each later layer's is read a layer ahead (the
        // history rings are in device memory). Reading two layers ahead
        // added registers and spills and gained nothing (run v27).
        float xr[NTR][4], xo[NTR][4];
        auto load_old = [&](int i, float (&dst)[NTR][4]) {
#if WGMMA
            // Ring rows permuted: this thread's 2·NTR values at (wn·4 + tq)·2·NTR.
            const int q = (wn * 4 + tq) * 2 * NTR;
            ld_pairs<NTR>(hrow0 + (L_HOFF[i] + (p0 & (L_DIL[i] - 1))) * R + q, dst, 0);
            ld_pairs<NTR>(hrow1 + (L_HOFF[i] + (p1 & (L_DIL[i] - 1))) * R + q, dst, 1);
#else
#pragma unroll
            for (int t = 0; t < NTR; t++) {
                const int col = (wn * NTR + t) * 8 + 2 * tq;
                const float2 o0 = *(const float2*)(hrow0 + (L_HOFF[i] + (p0 & (L_DIL[i] - 1))) * R + col);
                const float2 o1 = *(const float2*)(hrow1 + (L_HOFF[i] + (p1 & (L_DIL[i] - 1))) * R + col);
                dst[t][0] = o0.x; dst[t][1] = o0.y; dst[t][2] = o1.x; dst[t][3] = o1.y;
            }
#endif
        };
        load_old(0, xo);
        const int cy0 = y1[b0] * R, cy1 = y1[b1] * R, py0 = y2[b0] * R, py1 = y2[b1] * R;
#pragma unroll
        for (int t = 0; t < NTR; t++) {
            const int col = (wn * NTR + t) * 8 + 2 * tq;
#pragma unroll
            for (int e = 0; e < 2; e++) {
                xr[t][e] = emb_c[cy0 + col + e] + emb_p[py0 + col + e] + emb_b[col + e];
                xr[t][2 + e] = emb_c[cy1 + col + e] + emb_p[py1 + col + e] + emb_b[col + e];
            }
        }
        // The gate's additive terms of layer 0 (conditioning + bias) in this
        // warp's dilated columns: per tile, unit j = 4·tile + tq, rows b0, b1.
        float lb[NTD][4];
        auto load_lb = [&](int i) {
#if WGMMA
            // The pool permuted by the host (this thread's (tanh, sigmoid)
            // pairs at (wn·4 + tq)·2·NTD, the gate biases added): dead
            // streams' terms do not matter.
            const int q = i * 2 * R + (wn * 4 + tq) * 2 * NTD;
#pragma unroll
            for (int t = 0; t < NTD; t++) lb[t][0] = lb[t][1] = lb[t][2] = lb[t][3] = 0.0f;
            if (l0) ld_pairs<NTD>(crow0 + q, lb, 0);
            if (l1) ld_pairs<NTD>(crow1 + q, lb, 1);
#else
#pragma unroll
            for (int t = 0; t < NTD; t++) {
                const int j = (wn * NTD + t) * 4 + tq;
                const float bh = gate_b[i * 2 * R + j], bg = gate_b[i * 2 * R + R + j];
                lb[t][0] = bh + (l0 ? crow0[i * 2 * R + j] : 0.0f);
                lb[t][1] = bg + (l0 ? crow0[i * 2 * R + R + j] : 0.0f);
                lb[t][2] = bh + (l1 ? crow1[i * 2 * R + j] : 0.0f);
                lb[t][3] = bg + (l1 ? crow1[i * 2 * R + R + j] : 0.0f);
            }
#endif
        };
        load_lb(0);
        // Layer i's A operand [x(t - d) | x(t)] and x_i(t) into its ring.
        auto put_din = [&](int i, const float (&old)[NTR][4]) {
#if WGMMA
            // The ring rows in this thread's vector order.
            const int q = (wn * 4 + tq) * 2 * NTR;
            if (l0) st_pairs<NTR>(hrow0 + (L_HOFF[i] + (p0 & (L_DIL[i] - 1))) * R + q, xr, 0);
            if (l1) st_pairs<NTR>(hrow1 + (L_HOFF[i] + (p1 & (L_DIL[i] - 1))) * R + q, xr, 1);
#endif
#pragma unroll
            for (int t = 0; t < NTR; t++) {
                const int col = (wn * NTR + t) * 8 + 2 * tq;
                put_pair<2 * R, DK>(DIN, b0, col, old[t][0], old[t][1]);
                put_pair<2 * R, DK>(DIN, b1, col, old[t][2], old[t][3]);
                put_pair<2 * R, DK>(DIN, b0, R + col, xr[t][0], xr[t][1]);
                put_pair<2 * R, DK>(DIN, b1, R + col, xr[t][2], xr[t][3]);
#if !WGMMA
                if (l0) *(float2*)(hrow0 + (L_HOFF[i] + (p0 & (L_DIL[i] - 1))) * R + col) = make_float2(xr[t][0], xr[t][1]);
                if (l1) *(float2*)(hrow1 + (L_HOFF[i] + (p1 & (L_DIL[i] - 1))) * R + col) = make_float2(xr[t][2], xr[t][3]);
#endif
            }
        };
        put_din(0, xo);
        float sk[NTS][4];
#pragma unroll
        for (int t = 0; t < NTS; t++) sk[t][0] = sk[t][1] = sk[t][2] = sk[t][3] = 0.0f;
        MARK(0);

        for (int i = 0; i < NL; i++) {
            // Layer i + 1's x(t - d), read before this thread overwrites its
            // ring slot with x_{i+1}(t) below.
            if (i + 1 < NL) load_old(i + 1, xo);
            const unsigned char* cd = begin();
            MARK(1);
            float zd[NTD][4];
#pragma unroll
            for (int t = 0; t < NTD; t++) zd[t][0] = zd[t][1] = zd[t][2] = zd[t][3] = 0.0f;
            tiles_issue<2 * R, NTD, 2 * R>(din_hi, din_lo, b_addr(cd, 2 * R, wn * NTD, lane), zd);
            tiles_done<0>(zd);
            MARK(2);
            // Gate: (zd[t][0], zd[t][1]) are (tanh, sigmoid) of unit j for row b0, [2], [3] for b1.
#if WGMMA
            // Units j and j + 4 (tiles 2m, 2m + 1) are adjacent columns of
            // HIN (the host permuted W_res and W_skip's inputs to match), so
            // each pair is one 32-bit store per term and row.
#pragma unroll
            for (int t = 0; t < NTD; t += 2) {
                const int c = (wn * NTD + t) * 4 + 2 * tq;
                float h[4];
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    h[e] = gate_fast3(zd[t + e][0] * SC_DIL + lb[t + e][0], zd[t + e][1] * SC_DIL + lb[t + e][1]);
                    h[2 + e] = gate_fast3(zd[t + e][2] * SC_DIL + lb[t + e][2], zd[t + e][3] * SC_DIL + lb[t + e][3]);
                }
                put_pair<R, HK>(HIN, b0, c, h[0], h[1]);
                put_pair<R, HK>(HIN, b1, c, h[2], h[3]);
            }
#else
#pragma unroll
            for (int t = 0; t < NTD; t++) {
                const int j = (wn * NTD + t) * 4 + tq;
                const float h0 = gate_fast(zd[t][0] * SC_DIL + lb[t][0], zd[t][1] * SC_DIL + lb[t][1]);
                const float h1 = gate_fast(zd[t][2] * SC_DIL + lb[t][2], zd[t][3] * SC_DIL + lb[t][3]);
                u16 hi, lo;
                split1(h0, hi, lo);
                HIN[AIX(b0, j, R, HK)] = hi;
                if (TERMS == 2) HIN[LO_OFF(HK) + AIX(b0, j, R, HK)] = lo;
                split1(h1, hi, lo);
                HIN[AIX(b1, j, R, HK)] = hi;
                if (TERMS == 2) HIN[LO_OFF(HK) + AIX(b1, j, R, HK)] = lo;
            }
#endif
            if (i + 1 < NL) load_lb(i + 1);
            MARK(3);
            const unsigned char* crs = begin();
            MARK(1);
            float zr[NTR][4];
            if (i + 1 < NL) {
#pragma unroll
                for (int t = 0; t < NTR; t++) zr[t][0] = zr[t][1] = zr[t][2] = zr[t][3] = 0.0f;
                tiles_issue<R, NTR, R + S>(hin_hi, hin_lo, b_addr(crs, R, wn * NTR, lane), zr);
            }
#if RS_JOINT
            // The skip product beside the residual product. (Issued before
            // the residual update and read after it, ptxas serializes every
            // wgmma: it does not follow a partial wgmma.wait_group.)
            tiles_issue<R, NTS, R + S>(hin_hi, hin_lo, b_addr(crs, R, R / 8 + wn * NTS, lane), sk);
#endif
            if (i + 1 < NL) {
                tiles_done<0>(zr);
#if RS_JOINT
                wg_pin(sk);
#endif
#pragma unroll
                for (int t = 0; t < NTR; t++) {
                    const int col = (wn * NTR + t) * 8 + 2 * tq;
                    const float r0 = RB[i * R + col], r1 = RB[i * R + col + 1];
                    xr[t][0] += zr[t][0] * SC_RS + r0;
                    xr[t][1] += zr[t][1] * SC_RS + r1;
                    xr[t][2] += zr[t][2] * SC_RS + r0;
                    xr[t][3] += zr[t][3] * SC_RS + r1;
                }
                put_din(i + 1, xo);
            }
            MARK(4);
#if !RS_JOINT
            tiles_issue<R, NTS, R + S>(hin_hi, hin_lo, b_addr(crs, R, R / 8 + wn * NTS, lane), sk);
#endif
            tiles_done<0>(sk);
            MARK(5);
        }
        // relu(skip + b) as the relu layer's A operand.
#pragma unroll
        for (int t = 0; t < NTS; t++) {
            const int col = (wn * NTS + t) * 8 + 2 * tq;
            const float s0 = skip_b[col], s1 = skip_b[col + 1];
            put_pair<S, RK>(RIN, b0, col, fmaxf(sk[t][0] * SC_RS + s0, 0.0f), fmaxf(sk[t][1] * SC_RS + s1, 0.0f));
            put_pair<S, RK>(RIN, b1, col, fmaxf(sk[t][2] * SC_RS + s0, 0.0f), fmaxf(sk[t][3] * SC_RS + s1, 0.0f));
        }
        for (int c = 0; c < A / CR1; c++) {
            const unsigned char* cw = begin();
            float z[NT1][4];
#pragma unroll
            for (int t = 0; t < NT1; t++) z[t][0] = z[t][1] = z[t][2] = z[t][3] = 0.0f;
            tiles_issue<S, NT1, CR1>(rin_hi, rin_lo, b_addr(cw, S, wn * NT1, lane), z);
            tiles_done<0>(z);
#pragma unroll
            for (int t = 0; t < NT1; t++) {
                const int col = c * CR1 + (wn * NT1 + t) * 8 + 2 * tq;
                const float a0 = relu_b[col], a1 = relu_b[col + 1];
                put_pair<A, OK>(OIN, b0, col, fmaxf(z[t][0] * SC_RELU + a0, 0.0f), fmaxf(z[t][1] * SC_RELU + a1, 0.0f));
                put_pair<A, OK>(OIN, b1, col, fmaxf(z[t][2] * SC_RELU + a0, 0.0f), fmaxf(z[t][3] * SC_RELU + a1, 0.0f));
            }
        }
        for (int c = 0; c < A / CR2; c++) {
            const unsigned char* cw = begin();
            float z[NT2][4];
#pragma unroll
            for (int t = 0; t < NT2; t++) z[t][0] = z[t][1] = z[t][2] = z[t][3] = 0.0f;
            tiles_issue<A, NT2, CR2>(oin_hi, oin_lo, b_addr(cw, A, wn * NT2, lane), z);
            tiles_done<0>(z);
#pragma unroll
            for (int t = 0; t < NT2; t++) {
                const int col = c * CR2 + (wn * NT2 + t) * 8 + 2 * tq;
                const float a0 = out_b[col], a1 = out_b[col + 1];
                *(float2*)(LOG + b0 * LK + col) = make_float2(z[t][0] * SC_OUT + a0, z[t][1] * SC_OUT + a1);
                *(float2*)(LOG + b1 * LK + col) = make_float2(z[t][2] * SC_OUT + a0, z[t][3] * SC_OUT + a1);
            }
        }
        __syncthreads();
        MARK(6);
        // A live stream's sample y is written, its random state kept and it moves on.
        auto advance = [&](int b, int y, const u64* rs) {
            slots_st.advance(b, slot0 + b, y, rs, rng, out, forced, st_lead, steps, step);
        };
        // Live stream b's step: conditioning row st_cond / (ℓ·2r) + pos / HOP of the pool.
        auto mode_of = [&](int b) {
            if (mode != SAMPLE_VOICED_TEMPERATURE || !live[b]) return mode == SAMPLE_VOICED_TEMPERATURE ? SAMPLE_DIRECT : mode;
            return step_mode(mode, voiced, st_cond[slot0 + b] / (NL * 2 * R) + slots_st.pos[b] / HOP);
        };
        sample_streams<BS, G, NW, LK, false>(LOG, PW, live, rng, probs_out, slot0, steps, step, mode, inv_tau, advance, mode_of);
        __syncthreads();
        MARK(7);
    }
#if TMA
    // The chunks issued ahead land before the block exits.
    for (int k = 0; k < NSLOT - 1; k++) {
        mbar_wait(smem_u32(mbar + used_slot), (phases >> used_slot) & 1, false);
        phases ^= 1u << used_slot;
        used_slot = used_slot + 1 == NSLOT ? 0 : used_slot + 1;
    }
#else
    asm volatile("cp.async.wait_group 0;" ::: "memory");
#endif
    if (profiling) {
        // Phases 0-7 as PROFILE_PHASES_TILES; [8] chunk waits, [9] products.
        for (int k = 0; k < 8; k++) prof[k] = pacc[k];
        prof[8] = pacc[1];
        prof[9] = pacc[2] + pacc[4] + pacc[5];
    }
    slots_st.store(BS, slot0, st_pos, st_y);
#if !WGMMA
    if (tid < BS)
#pragma unroll
        for (int k = 0; k < 4; k++) st_rng[4 * (slot0 + tid) + k] = rng[4 * tid + k];
#endif
}
