// Kernel 1: one utterance, one launch, lowest latency (issue 9, Deep Voice
// §5.2). A cluster of C thread blocks (CTAs) on C multiprocessors shares
// the work of every sample; CTA c owns gate units [c·U, (c+1)·U) of every
// layer, skip rows of those units, and A/C rows of the two output layers.
// Partial results cross CTAs through distributed shared memory, ordered by
// the cluster barrier (barrier.cluster.arrive.release / wait.acquire),
// which on Hopper costs a fraction of a grid-wide barrier.
//
// Per sample:
//   1. x = embed_cur[y(t-1)] + embed_prev[y(t-2)] + embed_bias
//   2. every layer's W_prev · x_i(t - d_i) + bias + L_i, for this CTA's rows
//      (off the layer chain: x_i(t - d_i) is already known)
//   3. the chain, layer by layer: W_cur · x_i, gate, this CTA's share of
//      W_res · h, cluster barrier, sum of the C shares: x_{i+1}
//   4. skip partial over this CTA's units of all layers, barrier, relu
//   5. relu layer rows, barrier, gather; 6. output rows, barrier, gather
//   7. softmax and sampling, redundantly in every CTA (same inputs, same
//      order, so every CTA draws the same sample).
//
// Extra defines: C (CTAs per cluster), NT (threads per CTA), U = R / C,
// AC = A / C, TPR / TPP / TPZ (threads per gate / W_prev / output row, powers
// of two, <= 32; 2U * TPR = 32), SKIP0 (first skip thread, 32: NT = 32 + S), SMEM_W (1: W_cur, W_prev, W_res slices live in shared
// memory for the whole launch; 0: read from global memory, L2-resident).

#define U (R / C)
#define AC (A / C)
#define SKIP0 (32 * CW)  // CW gate warps come first
// Rows of W_cur / W_prev in shared memory are rotated by row so that the
// lanes reading one column of several rows hit different banks:
// element j of gate row q sits at column (j + q*TPR) mod R, of W_prev row
// `row` at (j + row*TPP) mod R (R is a power of two).
#if SMEM_W
#define ROT_C(j, q) (((j) + (q) * TPR) & (R - 1))
#define ROT_P(j, row) (((j) + (row) * TPP) & (R - 1))
#else
#define ROT_C(j, q) (j)
#define ROT_P(j, row) (j)
#endif

__device__ __forceinline__ void cluster_sync_all() { cluster_sync(true); }
__device__ __forceinline__ float ld_cluster(u32 local_addr, u32 rank) {
    float v;
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(map_rank(local_addr, rank)));
    return v;
}
// The sum over the cluster of one float at `local_addr` in every CTA: all C
// loads are issued before the first add (one round trip, not C).
__device__ __forceinline__ float sum_cluster(u32 local_addr) {
    float v[C];
#pragma unroll
    for (int c = 0; c < C; c++) v[c] = ld_cluster(local_addr, c);
    float acc = 0.0f;
#pragma unroll
    for (int c = 0; c < C; c++) acc += v[c];
    return acc;
}

extern "C" __global__ void __cluster_dims__(C, 1, 1) __launch_bounds__(NT, 1)
wavenet_single(const wt* __restrict__ g_wc,   // [C][NL][2U][R]
               const wt* __restrict__ g_wp,   // [C][NL][2U][R]
               const wt* __restrict__ g_wr,   // [C][NL-1][U][R]
               const wt* __restrict__ g_wsk,  // [C][NL*U][S]
               const wt* __restrict__ g_wz,   // [C][AC][S]
               const wt* __restrict__ g_wo,   // [C][AC][A]
               const float* __restrict__ gate_b,  // [NL][2R]
               const float* __restrict__ res_b,   // [NL-1][R]
               const float* __restrict__ skip_b,  // [S]
               const float* __restrict__ relu_b,  // [A]
               const float* __restrict__ out_b,   // [A]
               const float* __restrict__ emb_c,   // [A][R]
               const float* __restrict__ emb_p,   // [A][R]
               const float* __restrict__ emb_b,   // [R]
               const float* __restrict__ cond,    // [frames][NL*2R]
               int n_samples,
               float* __restrict__ hist,          // [C][HIST_ROWS][R], zero at launch
               int mode, float inv_tau,
               const unsigned char* __restrict__ voiced,  // [frames], or null (mode 3 only)
               int n_lead,                                // leading samples fed and written as silence
               u64* __restrict__ rng_state,       // [4], read at start, written at end
               int* __restrict__ out,             // [n_samples], poisoned by the host
               const unsigned char* __restrict__ forced,  // [n_samples] or null
               float* __restrict__ probs_out,     // [n_samples][A] or null
               long long* __restrict__ prof)      // [8] cycles per phase (thread 0 of CTA 0) or null
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const u32 rank = cluster_rank();
    const int u0 = rank * U;
    // Phase clock of thread 0 in CTA 0 (src/cuda.rs PROFILE_PHASES).
    const bool profiling = prof != nullptr && rank == 0 && tid == 0;
    long long pacc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    long long plast = clock64();
#define MARK(k) \
    if (profiling) { const long long now = clock64(); pacc[k] += now - plast; plast = now; }

    // Shared memory: chain weights (when resident), then float buffers.
    unsigned char* cursor = smem_raw;
#if SMEM_W
    wt* wc = (wt*)cursor; cursor += sizeof(wt) * NL * 2 * U * R;
    wt* wp = (wt*)cursor; cursor += sizeof(wt) * NL * 2 * U * R;
    wt* wr = (wt*)cursor; cursor += sizeof(wt) * (NL - 1) * U * R;
    {
        const wt* src_c = g_wc + (size_t)rank * NL * 2 * U * R;
        const wt* src_p = g_wp + (size_t)rank * NL * 2 * U * R;
        const wt* src_r = g_wr + (size_t)rank * (NL - 1) * U * R;
        for (int k = tid; k < NL * 2 * U * R; k += NT) {
            const int row = k / R, j = k % R, q = row % (2 * U);
            wc[row * R + ROT_C(j, q)] = src_c[k];
            wp[row * R + ROT_P(j, row)] = src_p[k];
        }
        for (int k = tid; k < (NL - 1) * U * R; k += NT) wr[k] = src_r[k];
    }
#else
    const wt* wc = g_wc + (size_t)rank * NL * 2 * U * R;
    const wt* wp = g_wp + (size_t)rank * NL * 2 * U * R;
    const wt* wr = g_wr + (size_t)rank * (NL - 1) * U * R;
#endif
    const wt* wsk = g_wsk + (size_t)rank * NL * U * S;
    const wt* wz = g_wz + (size_t)rank * AC * S;
    const wt* wo = g_wo + (size_t)rank * AC * A;
    float* my_hist = hist + (size_t)rank * HIST_ROWS * R;

    cursor = (unsigned char*)(((size_t)cursor + 15) & ~(size_t)15);
    float* xs = (float*)cursor; cursor += sizeof(float) * R;
    float* pre = (float*)cursor; cursor += sizeof(float) * NL * 2 * U;
    float* olds = (float*)cursor; cursor += sizeof(float) * NL * R;
    float* bcs = (float*)cursor; cursor += sizeof(float) * NL * 2 * U;  // gate bias + L of this CTA's rows, current frame
    float* gpart = (float*)cursor; cursor += sizeof(float) * CW * 2 * U;  // the gate warps' partial sums
    float* hs = (float*)cursor; cursor += sizeof(float) * NL * U;
    float* xin = (float*)cursor; cursor += sizeof(float) * 2 * C * R;  // [2][C][R] partials pushed by each CTA
    float* sbuf = (float*)cursor; cursor += sizeof(float) * S;
    float* zs = (float*)cursor; cursor += sizeof(float) * S;
    float* zbuf = (float*)cursor; cursor += sizeof(float) * AC;
    float* za = (float*)cursor; cursor += sizeof(float) * A;
    float* lbuf = (float*)cursor; cursor += sizeof(float) * AC;
    float* logits = (float*)cursor; cursor += sizeof(float) * A;
    float* probs = (float*)cursor; cursor += sizeof(float) * A;
    int* ybuf = (int*)cursor; cursor += sizeof(int) * 4;

    // xin of every CTA in the cluster's shared window (for the pushes).
    u32 xin_remote[C];
#pragma unroll
    for (int c = 0; c < C; c++)
        xin_remote[c] = map_rank(smem_u32(xin), c);
    u64 rs[4];
#pragma unroll
    for (int k = 0; k < 4; k++) rs[k] = rng_state[k];
    int y1 = 128, y2 = 128;
    // This thread's relu- and output-layer weights, in registers for the
    // whole launch (the plan keeps (S + A) / TPZ small).
    float wz_reg[S / TPZ], wo_reg[A / TPZ];
    {
        const int q = tid / TPZ, k = tid % TPZ;
        const bool mine = tid < AC * TPZ;
#pragma unroll
        for (int m = 0; m < S / TPZ; m++) wz_reg[m] = mine ? wf(wz[(size_t)q * S + k + m * TPZ]) : 0.0f;
#pragma unroll
        for (int m = 0; m < A / TPZ; m++) wo_reg[m] = mine ? wf(wo[(size_t)q * A + k + m * TPZ]) : 0.0f;
    }
    __syncthreads();
    // Every CTA's shared memory must exist before any remote access.
    cluster_sync_all();

    for (int t = 0; t < n_samples; t++) {
        const float* crow = cond + (size_t)(t / HOP) * NL * 2 * R;
        // 1. Embedding.
        for (int j = tid; j < R; j += NT) xs[j] = emb_c[y1 * R + j] + emb_p[y2 * R + j] + emb_b[j];
        // 2. W_prev · x_i(t - d_i) + bias + L_i for this CTA's 2U rows of every layer.
        //    First x_i(t - d_i) of every layer into shared memory, every load
        //    in flight at once (one L2 round trip per sample).
        {
            constexpr int K = (NL * R + NT - 1) / NT;
            float v[K];
#pragma unroll
            for (int k = 0; k < K; k++) {
                const int e = tid + k * NT, i = e / R;
                v[k] = e < NL * R ? my_hist[(size_t)(c_hoff[i] + (t & (c_dil[i] - 1))) * R + e % R] : 0.0f;
            }
#pragma unroll
            for (int k = 0; k < K; k++)
                if (tid + k * NT < NL * R) olds[tid + k * NT] = v[k];
        }
        if (t % HOP == 0) {
            // A new frame: bias + L of this CTA's rows, every load in flight.
            constexpr int KB = (NL * 2 * U + NT - 1) / NT;
            float b[KB];
#pragma unroll
            for (int k = 0; k < KB; k++) {
                const int row = tid + k * NT, i = row / (2 * U), q = row % (2 * U);
                const int o = q < U ? u0 + q : R + u0 + (q - U);
                b[k] = row < NL * 2 * U ? gate_b[i * 2 * R + o] + crow[i * 2 * R + o] : 0.0f;
            }
#pragma unroll
            for (int k = 0; k < KB; k++)
                if (tid + k * NT < NL * 2 * U) bcs[tid + k * NT] = b[k];
        }
        __syncthreads();
        for (int g = tid; g < NL * 2 * U * TPP; g += NT) {
            const int row = g / TPP, k = g % TPP;  // row = i * 2U + q
            const int i = row / (2 * U);
            const float* old = olds + i * R;
            const wt* w = wp + (size_t)row * R;
            float acc = 0.0f;
#pragma unroll 4
            for (int j = k; j < R; j += TPP) acc += wf(w[ROT_P(j, row)]) * old[j];
            acc = group_sum<TPP>(acc);
            if (k == 0) pre[row] = acc + bcs[row];
        }
        __syncthreads();

        MARK(0);
        // 3. The layer chain. Warp 0 alone computes the gate of this CTA's
        //    U units (TPR = 32 / 2U threads per row) and its share of
        //    W_res · h, so it needs no block barrier before the cluster
        //    barrier, and it is the only warp that arrives with release
        //    semantics. Skip threads (SKIP0 + o, o < S) accumulate skip
        //    output o over this CTA's units, their weights loaded a layer
        //    ahead; ring writers (the last R threads) store x_i(t). Both
        //    arrive relaxed, so their global traffic is never waited for.
        const int so = tid - SKIP0;
        const bool skipper = so >= 0 && so < S;
        float skip_acc = 0.0f;
        float wsk_next[U];
#pragma unroll
        for (int j = 0; j < U; j++) wsk_next[j] = skipper ? wf(wsk[(size_t)j * S + so]) : 0.0f;
        for (int i = 0; i < NL; i++) {
            float wsk_cur[U];
#pragma unroll
            for (int j = 0; j < U; j++) {
                wsk_cur[j] = wsk_next[j];
                wsk_next[j] = (skipper && i + 1 < NL) ? wf(wsk[(size_t)((i + 1) * U + j) * S + so]) : 0.0f;
            }
            if (tid >= NT - R) {
                const int j = tid - (NT - R);
                my_hist[(size_t)(c_hoff[i] + (t & (c_dil[i] - 1))) * R + j] = xs[j];
            }
            if (tid < 32 * CW) {
                // CW gate warps: warp w takes inputs [w·R/CW, (w+1)·R/CW) of the gate rows and
                // outputs o ≡ w (mod CW) of the residual share. Block 0 folds the residual bias
                // into its share (loaded now, used after the gate).
                const int gw = tid >> 5;
                float rbv[R / 32];
#pragma unroll
                for (int m = 0; m < R / 32; m++) rbv[m] = (rank == 0 && i + 1 < NL) ? res_b[i * R + lane + 32 * m] : 0.0f;
                const int unit = lane / (2 * TPR), half = (lane / TPR) & 1, k = lane % TPR;
                const int q = half ? U + unit : unit;
                const wt* w = wc + (size_t)(i * 2 * U + q) * R;
                float acc0 = 0.0f, acc1 = 0.0f;
#pragma unroll
                for (int j = gw * (R / CW) + k; j < (gw + 1) * (R / CW); j += 2 * TPR) {
                    acc0 += wf(w[ROT_C(j, q)]) * xs[j];
                    acc1 += wf(w[ROT_C(j + TPR, q)]) * xs[j + TPR];
                }
#if CW > 1
                {
                    const float part = group_sum<TPR>(acc0 + acc1);
                    if (k == 0) gpart[gw * 2 * U + q] = part;
                    asm volatile("bar.sync 1, %0;" ::"n"(32 * CW) : "memory");
                    acc0 = 0.0f;
                    acc1 = 0.0f;
#pragma unroll
                    for (int c = 0; c < CW; c++) acc0 += gpart[c * 2 * U + q];
                }
                const float v = acc0 + pre[i * 2 * U + q];
#else
                const float v = group_sum<TPR>(acc0 + acc1) + pre[i * 2 * U + q];
#endif
                const float other = __shfl_xor_sync(0xffffffffu, v, TPR);
                // Both halves of the pair compute the same h.
                const float h = half ? tanhf(other) * sigmoidf_exact(v) : tanhf(v) * sigmoidf_exact(other);
                if (gw == 0 && lane % (2 * TPR) == 0) hs[i * U + unit] = h;
                if (i + 1 < NL) {
                    // Push this CTA's share into every CTA's xin[i & 1][rank].
                    const u32 off = 4 * (((i & 1) * C + rank) * R);
#pragma unroll
                    for (int o = lane + 32 * gw; o < R; o += 32 * CW) {
                        float p = rbv[o / 32];
#pragma unroll
                        for (int j = 0; j < U; j++) p += wf(wr[(size_t)(i * U + j) * R + o]) * __shfl_sync(0xffffffffu, h, j * 2 * TPR);
#ifdef PULL
                        xin[(i & 1) * C * R + o] = p;  // the others read it after the barrier
                        (void)off;
#else
#pragma unroll
                        for (int c = 0; c < C; c++)
                            asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(xin_remote[c] + off + 4 * o), "f"(p) : "memory");
#endif
                    }
                }
            }
            MARK(1);
            if (i + 1 < NL) {
                cluster_sync(tid < 32 * CW);
            } else {
                __syncthreads();
            }
            MARK(2);
            if (skipper) {
#pragma unroll
                for (int j = 0; j < U; j++) skip_acc += wsk_cur[j] * hs[i * U + j];
            }
            if (i + 1 == NL) break;
            for (int o = tid; o < R; o += NT) {
                float v[C];
#ifdef PULL
                // Every block's share, all C loads in flight.
#pragma unroll
                for (int c = 0; c < C; c++)
                    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v[c]) : "r"(xin_remote[c] + 4 * ((i & 1) * C * R + o)));
#else
                const float* in = xin + (i & 1) * C * R + o;
#pragma unroll
                for (int c = 0; c < C; c++) v[c] = in[c * R];
#endif
                float acc = 0.0f;
#pragma unroll
                for (int c = 0; c < C; c++) acc += v[c];
                xs[o] += acc;  // the residual bias came with block 0's share
            }
            __syncthreads();
            MARK(3);
        }

        // 4. Skip: this CTA's units of every layer, summed over CTAs, relu.
        if (skipper) sbuf[so] = skip_acc;
        cluster_sync_all();
        {
            const u32 addr = smem_u32(sbuf);
            for (int o = tid; o < S; o += NT) zs[o] = fmaxf(sum_cluster(addr + 4 * o) + skip_b[o], 0.0f);
        }
        __syncthreads();
        MARK(4);
        // 5. Relu layer: AC rows of S, TPZ threads per row.
        if (tid < AC * TPZ) {
            const int q = tid / TPZ, k = tid % TPZ;
            float acc = 0.0f;
#pragma unroll
            for (int m = 0; m < S / TPZ; m++) acc += wz_reg[m] * zs[k + m * TPZ];
            acc = group_sum<TPZ>(acc);
            if (k == 0) zbuf[q] = fmaxf(acc + relu_b[rank * AC + q], 0.0f);
        }
        cluster_sync_all();
        {
            const u32 addr = smem_u32(zbuf);
            for (int o = tid; o < A; o += NT) za[o] = ld_cluster(addr + 4 * (o % AC), o / AC);
        }
        __syncthreads();
        MARK(5);
        // 6. Output layer: AC rows of A.
        if (tid < AC * TPZ) {
            const int q = tid / TPZ, k = tid % TPZ;
            float acc = 0.0f;
#pragma unroll
            for (int m = 0; m < A / TPZ; m++) acc += wo_reg[m] * za[k + m * TPZ];
            acc = group_sum<TPZ>(acc);
            if (k == 0) lbuf[q] = acc + out_b[rank * AC + q];
        }
        cluster_sync_all();
        {
            const u32 addr = smem_u32(lbuf);
            for (int o = tid; o < A; o += NT) logits[o] = ld_cluster(addr + 4 * (o % AC), o / AC);
        }
        __syncthreads();
        MARK(6);
        // 7. Sampling in warp 0 of every CTA.
        if (tid < 32) {
            const int md = step_mode(mode, voiced, t / HOP);
            float u = 0.0f;
            if (md != SAMPLE_MODE) u = rng_uniform(rs);  // every lane steps its copy
            const int y = warp_sample(logits, probs, md, inv_tau, u);
            if (lane == 0) {
                ybuf[0] = t < n_lead ? 128 : (forced ? (int)forced[t] : y);  // the lead: silence
                ybuf[1] = t < n_lead ? 128 : y;
            }
            if (probs_out && rank == 0) {
                for (int k = lane; k < A; k += 32) probs_out[(size_t)t * A + k] = probs[k];
            }
        }
        __syncthreads();
        y2 = y1;
        y1 = ybuf[0];
        if (rank == 0 && tid == NT - 1) out[t] = ybuf[1];
        MARK(7);
    }
    if (profiling) {
        for (int k = 0; k < 8; k++) prof[k] = pacc[k];
    }
    if (rank == 0 && tid == 0) {
        for (int k = 0; k < 4; k++) rng_state[k] = rs[k];
    }
    // No CTA may leave while another can still read its shared memory.
    cluster_sync_all();
}
