// Kernel 1b: one utterance per launch for WaveNets whose residual chain
// fits one multiprocessor (r = 32, bfloat16 weights; (20, 32, 128) of
// Table 2).
// Kernel 1 (wavenet_single.cu) pays one cluster barrier per layer because
// it splits every layer's units over C blocks; here block 0 runs the whole
// chain alone, with block barriers only, and H helper blocks of the same
// cluster take the skip, relu and output layers:
//
//   block 0: CW warps run the chain, lane j owning unit j: per layer,
//            both gate rows of unit j (W_cur · x plus the precomputed
//            W_prev · x(t - d) + biases + L), h_j, then residual output j,
//            each product split over the CW warps by input (two named
//            barriers per layer). The other warps
//            meanwhile compute the next sample's W_prev rows of every
//            layer with d >= 2 (they do not depend on the sample being
//            drawn); the two d = 1 layers, whose input is this sample's,
//            follow the chain. Then softmax and sampling.
//   helpers: skip rows S/H (over all layers' h), relu rows A/H, output rows
//            A/H, each result pushed to the blocks that need it.
//
// Four cluster barriers per sample instead of ℓ + 2. Block 0 keeps every
// layer's h; the helpers read them through distributed shared memory after
// the first barrier.
//
// Extra defines: H (helpers), NT (threads, 8R = 256), CW (chain warps, 1, 2
// or 4), TPP = 4 threads per
// W_prev row, TPS = NT / (S / H) per skip row, TPZ = NT / (A / H) per
// output-layer row.
#if !WBF16 || R != 32
#error "wavenet_small takes r = 32 and bfloat16 weights"
#endif

#define C (H + 1)
#define GP ((CW * 2 * R > A) ? CW * 2 * R : A)  // floats of the gate partials (also the probabilities)
#define SH (S / H)
#define AH (A / H)

__device__ __forceinline__ void st_cluster(u32 addr, float v) {
    asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(addr), "f"(v) : "memory");
}
// Element j of a row rotated by `rot` (rows of shared-memory matrices are
// rotated so that the lanes reading one column of several rows use
// different banks); K is a compile-time constant.
#define ROT(j, rot, K) (((j) + (rot)) % (K))

// Weights (SINGLE_KERNEL_PARAMS): g_wc [NL][R k][R j][2] as (W_cur[j][k],
// W_cur[R + j][k]) pairs; g_wp [NL][2R][R] (FORMAT.md rows); g_wr [NL-1][R k]
// [R o] (W_res transposed); g_wsk [S][NL*R]; g_wz [A][S]; g_wo [A][A].
// hist [HIST_ROWS][R]; prof [8] cycles per phase (block 0, thread 0).
extern "C" __global__ void __cluster_dims__(C, 1, 1) __launch_bounds__(NT, 1)
wavenet_small(SINGLE_KERNEL_PARAMS)
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const u32 rank = cluster_rank();
    const bool profiling = prof != nullptr && rank == 0 && tid == 0;
    long long pacc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    long long plast = clock64();
#define MARK(k) \
    if (profiling) { const long long now = clock64(); pacc[k] += now - plast; plast = now; }
    // Block 0 carve-up.
    u32* wc = (u32*)smem_raw;                  // [NL][R][R] bf16 pairs
    wt* wp = (wt*)(wc + NL * R * R);           // [NL][2R][R], rows rotated
    wt* wr = wp + NL * 2 * R * R;              // [NL-1][R][R] transposed
    float* f0 = (float*)(((size_t)(wr + (NL - 1) * R * R) + 15) & ~(size_t)15);
    float* pre = f0;                 // [2][NL][2R] W_prev rows + biases + L, by sample parity
    float* olds = pre + 2 * NL * 2 * R;  // [NL][R] x_i(t + 1 - d_i)
    float* xall = olds + NL * R;     // [NL][R] x_i(t) (the chain's layer inputs)
    float* hsm = xall + NL * R;      // [NL][R] every layer's h (pulled by the helpers)
    float* rbs = hsm + NL * R;       // [NL-1][R] residual biases
    float* bc = rbs + (NL - 1) * R;  // [NL][2R] gate bias + conditioning of the next sample's frame
    float* gpart = bc + NL * 2 * R;  // [CW][2][R] gate partial sums of the chain warps (GP floats)
    float* rpart = gpart + GP;       // [CW][R] residual partial sums
    float* xsw = rpart + CW * R;     // [CW][R] each chain warp's x
    float* hsw = xsw + CW * R;       // [CW][R] each chain warp's h
    float* logits = hsw + CW * R;    // [A] (pushed by the helpers)
    float* probs = gpart;            // [A] (sampling only: the partial sums are idle then)
    int* ybuf = (int*)(logits + A);  // [2]
    // Helper carve-up (the same window, another role).
    const int hi = (int)rank - 1;
    wt* wsk = (wt*)smem_raw;       // [SH][NL*R]
    wt* wz = wsk + SH * NL * R;    // [AH][S]
    wt* wo = wz + AH * S;          // [AH][A]
    float* f1 = (float*)(((size_t)(wo + AH * A) + 15) & ~(size_t)15);
    float* hbuf = f1;              // [NL][R] (pulled from block 0)
    float* zfull = hbuf + NL * R;  // [S] relu(skip) (pushed by every helper)
    float* zafull = zfull + S;     // [A] relu layer output (pushed by every helper)

    if (rank == 0) {
        const u32* src = (const u32*)g_wc;
        for (int k = tid; k < NL * R * R; k += NT) wc[k] = src[k];
        for (int k = tid; k < NL * 2 * R * R; k += NT) {
            const int row = k / R, j = k % R;
            wp[row * R + ROT(j, row * TPP, R)] = g_wp[k];
        }
        for (int k = tid; k < (NL - 1) * R * R; k += NT) wr[k] = g_wr[k];
        for (int k = tid; k < (NL - 1) * R; k += NT) rbs[k] = res_b[k];
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
    u32 helper_base[H];
#pragma unroll
    for (int h = 0; h < H; h++) helper_base[h] = map_rank(smem_u32(smem_raw), h + 1);
    const u32 block0_logits = map_rank(smem_u32(logits), 0);
    const u32 block0_h = map_rank(smem_u32(hsm), 0);
    const u32 zfull_off = smem_u32(zfull) - smem_u32(smem_raw);
    const u32 zafull_off = smem_u32(zafull) - smem_u32(smem_raw);

    u64 rs[4];
#pragma unroll
    for (int k = 0; k < 4; k++) rs[k] = rng_state[k];
    int y1 = 128, y2 = 128;
    __syncthreads();
    cluster_sync(true);

    // Gate bias + conditioning of sample t's frame into bc (threads [first, NT)).
    auto load_bc = [&](int t, int first) {
        const float* crow = cond + (size_t)(t / HOP) * NL * 2 * R;
        constexpr int MINSTRIDE = NT - 4 * 32;  // the fewest threads that call it (CW = 4)
        constexpr int KB = (NL * 2 * R + MINSTRIDE - 1) / MINSTRIDE;
        float b[KB];
#pragma unroll
        for (int k = 0; k < KB; k++) {
            const int e = tid - first + k * (NT - first);
            b[k] = (tid >= first && e < NL * 2 * R) ? gate_b[e] + crow[e] : 0.0f;
        }
#pragma unroll
        for (int k = 0; k < KB; k++) {
            const int e = tid - first + k * (NT - first);
            if (tid >= first && e < NL * 2 * R) bc[e] = b[k];
        }
    };
    // W_prev rows of the layers in [i0, i1) with d = 1 (`unit`) or d >= 2
    // (!unit) for sample t, from olds, into pre[t & 1]; threads [first, NT).
    auto prev_rows = [&](int t, bool unit, int first) {
        float* p = pre + (t & 1) * NL * 2 * R;
        for (int g = tid - first; g < NL * 2 * R * TPP; g += NT - first) {
            const int row = g / TPP, k = g % TPP;  // row = i * 2R + q; 2R * TPP = 256 items per layer
            const int i = row / (2 * R);
            if ((c_dil[i] == 1) != unit) continue;  // uniform over each warp
            const wt* w = wp + (size_t)row * R;
            const float* old = olds + i * R;
            float acc = 0.0f;
#pragma unroll
            for (int j = k; j < R; j += TPP) acc += wf(w[ROT(j, row * TPP, R)]) * old[j];
            acc = group_sum<TPP>(acc);
            if (k == 0) p[row] = acc + bc[row];
        }
    };
    // x_i(t + 1 - d_i) of the layers with d >= 2 into olds; threads [first, NT).
    auto stage_olds = [&](int t1, int first) {
        constexpr int MINSTRIDE = NT - 4 * 32;
        constexpr int K = (NL * R + MINSTRIDE - 1) / MINSTRIDE;
        float v[K];
#pragma unroll
        for (int k = 0; k < K; k++) {
            const int e = tid - first + k * (NT - first), i = e / R;
            v[k] = (tid >= first && e < NL * R && c_dil[i] > 1) ? hist[(size_t)(c_hoff[i] + (t1 & (c_dil[i] - 1))) * R + e % R] : 0.0f;
        }
#pragma unroll
        for (int k = 0; k < K; k++) {
            const int e = tid - first + k * (NT - first);
            if (tid >= first && e < NL * R && c_dil[e / R] > 1) olds[e] = v[k];
        }
    };
    // Sample 0's rows, all threads.
    if (rank == 0) {
        load_bc(0, 0);
        stage_olds(0, 0);
        for (int e = tid; e < NL * R; e += NT)
            if (c_dil[e / R] == 1) olds[e] = 0.0f;  // x_i(-1) = 0
        __syncthreads();
        prev_rows(0, false, 0);
        prev_rows(0, true, 0);
        __syncthreads();
    }

    for (int t = 0; t < n_samples; t++) {
        if (rank == 0) {
            if (warp < CW) {
                // The chain on CW warps: lane j owns unit j in every chain warp,
                // warp c takes inputs [c·R/CW, (c+1)·R/CW) of each product, and
                // every chain warp sums the CW partials itself (same order, so
                // they hold the same h and x), so only two named barriers of
                // the chain warps separate the steps of a layer.
                const float* p = pre + (t & 1) * NL * 2 * R;
                float xr = emb_c[y1 * R + lane] + emb_p[y2 * R + lane] + emb_b[lane];
                const int k0 = warp * (R / CW);
                float* xw = xsw + warp * R;  // this warp's copy of x and of h (no shuffles, no races)
                float* hw = hsw + warp * R;
                xw[lane] = xr;
                __syncwarp();
                MARK(0);
                for (int i = 0; i < NL; i++) {
                    if (warp == 0) xall[i * R + lane] = xr;
                    const u32* w = wc + (size_t)i * R * R + lane;
                    float tp = 0.0f, sp = 0.0f;
#pragma unroll
                    for (int m = 0; m < R / CW; m++) {
                        const int k = k0 + m;
                        const u32 w0 = w[k * R];
                        const float xk = xw[k];
                        tp += __uint_as_float(w0 << 16) * xk;
                        sp += __uint_as_float(w0 & 0xffff0000u) * xk;
                    }
                    gpart[(2 * warp) * R + lane] = tp;
                    gpart[(2 * warp + 1) * R + lane] = sp;
                    asm volatile("bar.sync 3, %0;" ::"n"(CW * 32) : "memory");
                    float vt = p[i * 2 * R + lane], vs = p[i * 2 * R + R + lane];
#pragma unroll
                    for (int c = 0; c < CW; c++) {
                        vt += gpart[(2 * c) * R + lane];
                        vs += gpart[(2 * c + 1) * R + lane];
                    }
#ifdef FAST_GATE
                    const float h = (1.0f - __fdividef(2.0f, __expf(2.0f * vt) + 1.0f)) * __fdividef(1.0f, 1.0f + __expf(-vs));
#else
                    const float h = tanhf(vt) * sigmoidf_exact(vs);
#endif
                    if (warp == 0) hsm[i * R + lane] = h;
                    hw[lane] = h;
                    __syncwarp();
                    MARK(1);
                    if (i + 1 < NL) {
                        const wt* wrr = wr + (size_t)i * R * R + lane;
                        float a = 0.0f;
#pragma unroll
                        for (int m = 0; m < R / CW; m++) {
                            const int k = k0 + m;
                            a += wf(wrr[k * R]) * hw[k];
                        }
                        rpart[warp * R + lane] = a;
                        asm volatile("bar.sync 3, %0;" ::"n"(CW * 32) : "memory");
                        float sum = rbs[i * R + lane];
#pragma unroll
                        for (int c = 0; c < CW; c++) sum += rpart[c * R + lane];
                        xr += sum;
                        xw[lane] = xr;
                        __syncwarp();
                    }
                    MARK(2);
                }
            } else {
                // The other warps: the next sample's W_prev rows of the d >= 2 layers.
                if (t + 1 < n_samples) {
                    if ((t + 1) % HOP == 0) load_bc(t + 1, CW * 32);
                    stage_olds(t + 1, CW * 32);
                    asm volatile("bar.sync 1, %0;" ::"n"(NT - CW * 32) : "memory");
                    prev_rows(t + 1, false, CW * 32);
                }
            }
            __syncthreads();
            MARK(3);
        }
        // B1: every h is in block 0's shared memory (warp 0 publishes it;
        // the rest of block 0 has nothing to publish).
        cluster_sync(rank != 0 || warp == 0);
        MARK(4);
        if (rank == 0) {
            // The d = 1 layers' rows for the next sample (their input is this
            // sample's), and this sample's layer inputs into the rings.
            for (int e = tid; e < NL * R; e += NT) {
                const int i = e / R;
                if (c_dil[i] == 1) olds[e] = xall[e];
                hist[(size_t)(c_hoff[i] + (t & (c_dil[i] - 1))) * R + e % R] = xall[e];
            }
            __syncthreads();
            if (t + 1 < n_samples) prev_rows(t + 1, true, 0);
            MARK(5);
        } else {
            // Every layer's h from block 0 (all loads in flight), then this
            // helper's skip rows, relu, pushed to every helper.
            {
                constexpr int KH = (NL * R + NT - 1) / NT;
                float v[KH];
#pragma unroll
                for (int k = 0; k < KH; k++) {
                    const int e = tid + k * NT;
                    if (e < NL * R) asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v[k]) : "r"(block0_h + 4 * e));
                }
#pragma unroll
                for (int k = 0; k < KH; k++)
                    if (tid + k * NT < NL * R) hbuf[tid + k * NT] = v[k];
                __syncthreads();
            }
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
        cluster_sync(rank != 0);  // B2
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
        cluster_sync(rank != 0);  // B3
        if (rank != 0) {
            const int row = tid / TPZ, k = tid % TPZ;
            const wt* w = wo + (size_t)row * A;
            float acc = 0.0f;
#pragma unroll 8
            for (int j = k; j < A; j += TPZ) acc += wf(w[ROT(j, row * TPZ, A)]) * zafull[j];
            acc = group_sum<TPZ>(acc);
            if (k == 0) st_cluster(block0_logits + 4 * (hi * AH + row), acc + out_b[hi * AH + row]);
        }
        cluster_sync(rank != 0);  // B4: block 0 holds every logit
        MARK(6);
        if (rank == 0) {
            if (tid < 32) {
                const int md = step_mode(mode, voiced, t / HOP);
                float u = 0.0f;
                if (md != SAMPLE_MODE) u = rng_uniform(rs);
                const int y = warp_sample(logits, probs, md, inv_tau, u);
                if (lane == 0) {
                    ybuf[0] = t < n_lead ? 128 : (forced ? (int)forced[t] : y);  // the lead: silence
                    ybuf[1] = t < n_lead ? 128 : y;
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
