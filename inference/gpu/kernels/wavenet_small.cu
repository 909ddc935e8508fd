// Kernel 1b: one utterance per launch for WaveNets whose residual chain
// fits one multiprocessor (bfloat16 weights; (20, 32, 128) of Table 2).
// Kernel 1 (wavenet_single.cu) pays one cluster barrier per layer because
// it splits every layer's units over C blocks; here block 0 runs the whole
// chain alone, with block barriers only, and H helper blocks of the same
// cluster take the skip, relu and output layers:
//
//   block 0: embedding; per layer: gate (W_cur · x + precomputed
//            W_prev · x(t - d) + biases + L), residual, h pushed into every
//            helper's shared memory; then, while the helpers finish the
//            sample, the next sample's W_prev rows (they do not depend on
//            the sample being drawn); then softmax and sampling.
//   helpers: skip rows S/H (over all layers' h), relu rows A/H, output rows
//            A/H, each result pushed to the blocks that need it.
//
// Four cluster barriers per sample instead of ℓ + 2.
//
// Extra defines: H (helpers), NT (threads; NT = 8R), TPG = NT / 2R threads
// per gate row, TPO = NT / R per residual row, TPP = 4 per W_prev row,
// TPS = NT / (S / H) per skip row, TPZ = NT / (A / H) per output-layer row.

#define C (H + 1)
#define SH (S / H)
#define AH (A / H)

__device__ __forceinline__ u32 cluster_rank() {
    u32 r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
__device__ __forceinline__ u32 smem_u32(const void* p) {
    u32 a;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
    return a;
}
__device__ __forceinline__ u32 map_rank(u32 local, u32 rank) {
    u32 r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(local), "r"(rank));
    return r;
}
__device__ __forceinline__ void st_cluster(u32 addr, float v) {
    asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(addr), "f"(v) : "memory");
}
// `release` threads publish their shared-memory writes (local and remote);
// the others arrive relaxed so that their pending global stores are not
// waited for (they are read back only inside their own block).
__device__ __forceinline__ void cluster_sync(bool release) {
    if (release) {
        asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
    } else {
        asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
    }
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
template <int W>
__device__ __forceinline__ float group_sum(float v) {
#pragma unroll
    for (int o = W / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
// Element j of a row rotated by `rot` (rows of shared-memory matrices are
// rotated so that the lanes reading one column of several rows use
// different banks); K is a compile-time constant.
#define ROT(j, rot, K) (((j) + (rot)) % (K))

extern "C" __global__ void __cluster_dims__(C, 1, 1) __launch_bounds__(NT, 1)
wavenet_small(const wt* __restrict__ g_wc,   // [NL][2R][R], rows interleaved: 2j = tanh unit j, 2j + 1 its sigmoid
              const wt* __restrict__ g_wp,   // [NL][2R][R], rows as g_wc
              const wt* __restrict__ g_wr,   // [NL-1][R][R]
              const wt* __restrict__ g_wsk,  // [S][NL*R]
              const wt* __restrict__ g_wz,   // [A][S]
              const wt* __restrict__ g_wo,   // [A][A]
              const float* __restrict__ gate_b,  // [NL][2R] (FORMAT.md order: tanh half, then sigmoid half)
              const float* __restrict__ res_b,   // [NL-1][R]
              const float* __restrict__ skip_b, const float* __restrict__ relu_b, const float* __restrict__ out_b,
              const float* __restrict__ emb_c, const float* __restrict__ emb_p, const float* __restrict__ emb_b,
              const float* __restrict__ cond,    // [frames][NL*2R]
              int n_samples,
              float* __restrict__ hist,          // [HIST_ROWS][R], zero at launch
              int mode, float inv_tau, u64* __restrict__ rng_state,
              int* __restrict__ out, const unsigned char* __restrict__ forced, float* __restrict__ probs_out,
              long long* __restrict__ prof)      // [8] cycles per phase (block 0, thread 0) or null
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    const int tid = threadIdx.x, lane = tid & 31;
    const u32 rank = cluster_rank();
    const bool profiling = prof != nullptr && rank == 0 && tid == 0;
    long long pacc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    long long plast = clock64();
#define MARK(k) \
    if (profiling) { const long long now = clock64(); pacc[k] += now - plast; plast = now; }
    // Block 0 carve-up.
    wt* wc = (wt*)smem_raw;
    wt* wp = wc + NL * 2 * R * R;
    wt* wr = wp + NL * 2 * R * R;
    float* f0 = (float*)(((size_t)(wr + (NL - 1) * R * R) + 15) & ~(size_t)15);
    float* pre = f0;               // [NL][2R], interleaved rows
    float* olds = pre + NL * 2 * R;  // [NL][R]
    float* xs = olds + NL * R;     // [R]
    float* hsm = xs + R;           // [R]
    float* logits = hsm + R;       // [A] (pushed by the helpers)
    float* probs = logits + A;     // [A]
    int* ybuf = (int*)(probs + A); // [2]
    // Helper carve-up (the same window, another role).
    const int hi = (int)rank - 1;
    wt* wsk = (wt*)smem_raw;       // [SH][NL*R]
    wt* wz = wsk + SH * NL * R;    // [AH][S]
    wt* wo = wz + AH * S;          // [AH][A]
    float* f1 = (float*)(((size_t)(wo + AH * A) + 15) & ~(size_t)15);
    float* hbuf = f1;              // [NL][R] (pushed by block 0)
    float* zfull = hbuf + NL * R;  // [S] relu(skip) (pushed by every helper)
    float* zafull = zfull + S;     // [A] relu layer output (pushed by every helper)

    // Weights into shared memory, rows rotated.
    if (rank == 0) {
        for (int k = tid; k < NL * 2 * R * R; k += NT) {
            const int row = k / R, j = k % R;
            wc[row * R + ROT(j, (row % (2 * R)) * TPG, R)] = g_wc[k];
            wp[row * R + ROT(j, row * TPP, R)] = g_wp[k];
        }
        for (int k = tid; k < (NL - 1) * R * R; k += NT) {
            const int row = k / R, j = k % R;
            wr[row * R + ROT(j, (row % R) * TPO, R)] = g_wr[k];
        }
    } else {
        for (int k = tid; k < SH * NL * R; k += NT) {
            const int row = k / (NL * R), j = k % (NL * R);
            wsk[row * NL * R + ROT(j, row * TPS, NL * R)] = g_wsk[(size_t)(hi * SH + row) * NL * R + j];
        }
        for (int k = tid; k < AH * S; k += NT) {
            const int row = k / S, j = k % S;
            wz[row * S + ROT(j, row * TPZ, S)] = g_wz[(size_t)(hi * AH + row) * S + j];
        }
        for (int k = tid; k < AH * A; k += NT) {
            const int row = k / A, j = k % A;
            wo[row * A + ROT(j, row * TPZ, A)] = g_wo[(size_t)(hi * AH + row) * A + j];
        }
    }
    // Remote addresses: block 0 pushes h to every helper; helpers push z and
    // za to every helper and logits to block 0.
    u32 helper_base[H];
#pragma unroll
    for (int h = 0; h < H; h++) helper_base[h] = map_rank(smem_u32(smem_raw), h + 1);
    const u32 block0_logits = map_rank(smem_u32(logits), 0);
    const u32 hbuf_off = smem_u32(hbuf) - smem_u32(smem_raw);
    const u32 zfull_off = smem_u32(zfull) - smem_u32(smem_raw);
    const u32 zafull_off = smem_u32(zafull) - smem_u32(smem_raw);

    u64 rs[4];
#pragma unroll
    for (int k = 0; k < 4; k++) rs[k] = rng_state[k];
    int y1 = 128, y2 = 128;
    // Block 0's ring writers and sample writer (its last warp) arrive relaxed.
    const bool release = !(rank == 0 && tid >= NT - 32);
    __syncthreads();
    cluster_sync(true);

    // W_prev rows of every layer for sample t (block 0): stage the history
    // rows x_i(t - d_i), then dot products, plus biases and conditioning.
    auto prev_rows = [&](int t) {
        constexpr int K = (NL * R + NT - 1) / NT;
        float v[K];
#pragma unroll
        for (int k = 0; k < K; k++) {
            const int e = tid + k * NT, i = e / R;
            v[k] = e < NL * R ? hist[(size_t)(c_hoff[i] + (t & (c_dil[i] - 1))) * R + e % R] : 0.0f;
        }
#pragma unroll
        for (int k = 0; k < K; k++)
            if (tid + k * NT < NL * R) olds[tid + k * NT] = v[k];
        __syncthreads();
        const float* crow = cond + (size_t)(t / HOP) * NL * 2 * R;
        for (int g = tid; g < NL * 2 * R * TPP; g += NT) {
            const int row = g / TPP, k = g % TPP;  // row = i * 2R + q
            const int i = row / (2 * R), q = row % (2 * R);
            const int o = (q & 1) ? R + (q >> 1) : (q >> 1);  // FORMAT.md row
            const wt* w = wp + (size_t)row * R;
            const float* old = olds + i * R;
            float acc = 0.0f;
#pragma unroll
            for (int j = k; j < R; j += TPP) acc += wf(w[ROT(j, row * TPP, R)]) * old[j];
            acc = group_sum<TPP>(acc);
            if (k == 0) pre[row] = acc + gate_b[i * 2 * R + o] + crow[i * 2 * R + o];
        }
    };
    if (rank == 0) prev_rows(0);

    for (int t = 0; t < n_samples; t++) {
        if (rank == 0) {
            for (int j = tid; j < R; j += NT) xs[j] = emb_c[y1 * R + j] + emb_p[y2 * R + j] + emb_b[j];
            __syncthreads();
            MARK(0);
            for (int i = 0; i < NL; i++) {
                if (tid >= NT - 32) {
                    for (int j = tid - (NT - 32); j < R; j += 32)
                        hist[(size_t)(c_hoff[i] + (t & (c_dil[i] - 1))) * R + j] = xs[j];
                }
                // Gate: TPG threads per row, row pairs (tanh, sigmoid) adjacent.
                {
                    const int q = tid / TPG, k = tid % TPG;
                    const wt* w = wc + (size_t)(i * 2 * R + q) * R;
                    float a0 = 0.0f, a1 = 0.0f;
#pragma unroll
                    for (int j = k; j < R; j += 2 * TPG) {
                        a0 += wf(w[ROT(j, q * TPG, R)]) * xs[j];
                        a1 += wf(w[ROT(j + TPG, q * TPG, R)]) * xs[j + TPG];
                    }
                    const float v = group_sum<TPG>(a0 + a1) + pre[i * 2 * R + q];
                    const float other = __shfl_xor_sync(0xffffffffu, v, TPG);
                    if ((q & 1) == 0 && k == 0) {
#ifdef FAST_GATE
                        const float e2 = __expf(2.0f * v);
                        const float h = (1.0f - __fdividef(2.0f, e2 + 1.0f)) * __fdividef(1.0f, 1.0f + __expf(-other));
#else
                        const float h = tanhf(v) * sigmoidf_exact(other);
#endif
                        hsm[q >> 1] = h;
                    }
                }
                MARK(1);
                __syncthreads();
                MARK(2);
                // h to every helper (warp 0), residual (TPO threads per output).
                if (tid < R) {
#pragma unroll
                    for (int h = 0; h < H; h++) st_cluster(helper_base[h] + hbuf_off + 4 * (i * R + tid), hsm[tid]);
                }
                if (i + 1 < NL) {
                    const int o = tid / TPO, k = tid % TPO;
                    const wt* w = wr + (size_t)(i * R + o) * R;
                    float acc = 0.0f;
#pragma unroll
                    for (int j = k; j < R; j += TPO) acc += wf(w[ROT(j, o * TPO, R)]) * hsm[j];
                    acc = group_sum<TPO>(acc);
                    if (k == 0) xs[o] += acc + res_b[i * R + o];
                }
                MARK(3);
                __syncthreads();
                MARK(4);
            }
        }
        cluster_sync(release);  // B1: every h has reached the helpers
        MARK(5);
        if (rank == 0) {
            if (t + 1 < n_samples) prev_rows(t + 1);
            MARK(6);
        } else {
            // Skip rows of this helper over all layers' h, relu, pushed to every helper.
            const int row = tid / TPS, k = tid % TPS;
            const wt* w = wsk + (size_t)row * NL * R;
            float acc = 0.0f;
#pragma unroll 8
            for (int j = k; j < NL * R; j += TPS) acc += wf(w[ROT(j, row * TPS, NL * R)]) * hbuf[j];
            acc = group_sum<TPS>(acc);
            if (k == 0) {
                const float z = fmaxf(acc + skip_b[hi * SH + row], 0.0f);
#pragma unroll
                for (int h = 0; h < H; h++) st_cluster(helper_base[h] + zfull_off + 4 * (hi * SH + row), z);
            }
        }
        cluster_sync(release);  // B2
        if (rank != 0) {
            const int row = tid / TPZ, k = tid % TPZ;
            const wt* w = wz + (size_t)row * S;
            float acc = 0.0f;
#pragma unroll 8
            for (int j = k; j < S; j += TPZ) acc += wf(w[ROT(j, row * TPZ, S)]) * zfull[j];
            acc = group_sum<TPZ>(acc);
            if (k == 0) {
                const float za = fmaxf(acc + relu_b[hi * AH + row], 0.0f);
#pragma unroll
                for (int h = 0; h < H; h++) st_cluster(helper_base[h] + zafull_off + 4 * (hi * AH + row), za);
            }
        }
        cluster_sync(release);  // B3
        if (rank != 0) {
            const int row = tid / TPZ, k = tid % TPZ;
            const wt* w = wo + (size_t)row * A;
            float acc = 0.0f;
#pragma unroll 8
            for (int j = k; j < A; j += TPZ) acc += wf(w[ROT(j, row * TPZ, A)]) * zafull[j];
            acc = group_sum<TPZ>(acc);
            if (k == 0) st_cluster(block0_logits + 4 * (hi * AH + row), acc + out_b[hi * AH + row]);
        }
        cluster_sync(release);  // B4: block 0 holds every logit
        if (rank == 0) {
            if (tid < 32) {
                float u = 0.0f;
                if (mode != SAMPLE_MODE) u = rng_uniform(rs);
                const int y = warp_sample(logits, probs, mode, inv_tau, u);
                if (lane == 0) {
                    ybuf[0] = forced ? (int)forced[t] : y;
                    ybuf[1] = y;
                }
                if (probs_out) {
                    for (int k = lane; k < A; k += 32) probs_out[(size_t)t * A + k] = probs[k];
                }
            }
            __syncthreads();
            if (tid == NT - 1) out[t] = ybuf[1];
            MARK(7);
        }
        y2 = y1;
        y1 = rank == 0 ? ybuf[0] : 0;
    }
    if (rank == 0 && tid == 0) {
        for (int k = 0; k < 4; k++) rng_state[k] = rs[k];
    }
    if (profiling) {
        for (int k = 0; k < 8; k++) prof[k] = pacc[k];
    }
    cluster_sync(true);
}
