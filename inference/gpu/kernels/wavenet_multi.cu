// Kernel 2: many independent utterances ("streams"), highest throughput
// (issue 9; the batched single-launch design of the LPCNet talk). Each
// block owns BS stream slots and advances them one sample per step for
// `steps` steps; blocks never wait for one another. Within a block every
// per-step product is a [BS, K] x [K, N] matrix product over the block's
// streams, so a weight read from L2 serves BS streams.
//
// Weights stream through shared memory in panels (PANEL_BYTES each, NSTAGE
// buffers): cp.async keeps NSTAGE - 1 panels in flight while one is
// multiplied, so the weight traffic is bandwidth-bound, not latency-bound.
// The per-stream inputs of the next layer (its history row x_i(t - d_i) and
// conditioning L_i) are loaded into registers one layer ahead for the same
// reason.
//
// MMA = 1: tensor cores (mma.sync m16n8k16, bfloat16 weights). Activations
// are split into two bfloat16 terms (hi + lo) and multiplied twice, so they
// keep ~16 bits of mantissa; accumulation is float32. MMA = 0: float32 FMAs.
//
// A slot's state lives in global memory between launches (its layer
// histories, last two samples, position, length, random state and where its
// conditioning starts), so the host may fill, empty and refill slots
// between launches: a stream joins by having its slot written and leaves
// when its position reaches its length (it is then computed but neither
// advanced nor written).
//
// Extra defines: BS (slots per block, a multiple of 16), NT (threads, with
// BS * R a multiple of NT), MMA, PANEL_BYTES, NSTAGE.

#define NW (NT / 32)
#define APAD 8                     // activation row pad (floats)
#define AST(width) ((width) + APAD)  // activation row stride
#if MMA
#define WPAD 8                     // weight panel row pad (elements): conflict-free B fragments
#else
#define WPAD 4                     // float4 rows, conflict-free per quarter warp
#endif
#define MAXW2 ((2 * R > A) ? 2 * R : A)
#define MAXW ((MAXW2 > S) ? MAXW2 : S)
#define EK (BS * R / NT)           // [BS, R] elements per thread


struct Wts {
    const wt* dil;   // per layer [2R][2R]: rows [W_prev | W_cur]
    const wt* res;   // per layer [R][R], NL - 1 layers
    const wt* skip;  // per layer [S][R]
    const wt* relu;  // [A][S]
    const wt* out;   // [A][A]
};
struct Mat {
    const wt* w;
    int n, k;
};
// The matrices of one step in order: per layer dil, res (not the last), skip; then relu, out.
__device__ __forceinline__ Mat mat(const Wts& W, int id) {
    if (id < 3 * NL) {
        const int i = id / 3, kind = id % 3;
        if (kind == 0) return Mat{W.dil + (size_t)i * 4 * R * R, 2 * R, 2 * R};
        if (kind == 1) return Mat{W.res + (size_t)i * R * R, R, R};
        return Mat{W.skip + (size_t)i * S * R, S, R};
    }
    if (id == 3 * NL) return Mat{W.relu, A, S};
    return Mat{W.out, A, A};
}
__device__ __forceinline__ int next_mat(int id) {
    id += 1;
    if (id == 3 * (NL - 1) + 1) id += 1;  // the last layer has no residual matrix
    return id > 3 * NL + 1 ? 0 : id;
}
// Rows per panel: as many (a multiple of 8) as fit PANEL_BYTES, at most n;
// the last panel of a matrix may be shorter.
__device__ __forceinline__ int panel_rows(int n, int k) {
    const int fit = PANEL_BYTES / ((k + WPAD) * (int)sizeof(wt)) / 8 * 8;
    return fit < n ? fit : n;
}

// The panel cursor: panels are consumed in a fixed order (every matrix of a
// step, then the next step's), and issued NSTAGE - 1 panels ahead.
struct Pipe {
    int id, n0;  // the next panel to issue
    int issued;  // panels issued so far (the buffer of panel p is p % NSTAGE)
    int used;    // panels consumed so far
};

__device__ __forceinline__ void stage(const Mat m, int n0, unsigned char* dst) {
    const int pr = panel_rows(m.n, m.k);
    const int rows = m.n - n0 < pr ? m.n - n0 : pr;
    const int cpr = m.k * (int)sizeof(wt) / 16;  // 16-byte chunks per row
    const int rowb = (m.k + WPAD) * (int)sizeof(wt);
    for (int c = threadIdx.x; c < rows * cpr; c += NT) {
        const int r = c / cpr, q = c % cpr;
        const unsigned char* src = (const unsigned char*)(m.w + (size_t)(n0 + r) * m.k) + q * 16;
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_u32(dst + r * rowb + q * 16)), "l"(src));
    }
}

// Issues the cursor's panel into its buffer and advances the cursor.
__device__ __forceinline__ void issue(const Wts& W, Pipe& p, unsigned char* panels) {
    const Mat m = mat(W, p.id);
    stage(m, p.n0, panels + (p.issued % NSTAGE) * PANEL_BYTES);
    asm volatile("cp.async.commit_group;" ::: "memory");
    p.issued += 1;
    p.n0 += panel_rows(m.n, m.k);
    if (p.n0 >= m.n) {
        p.n0 = 0;
        p.id = next_mat(p.id);
    }
}

#if MMA
__device__ __forceinline__ void mma16816(float* c, u32 a0, u32 a1, u32 a2, u32 a3, u32 b0, u32 b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
#define MT (BS / 16)   // row tiles of 16 streams
#define NG (NW / MT)   // warps sharing one row tile, each a strided set of 8-column tiles
#define AKS (MAXW + 8) // row stride (bf16 elements) of the split activations

// The matrix input as two bfloat16 terms, x ≈ hi + lo (hi = bf16(x),
// lo = bf16(x - hi)), so that it keeps ~16 bits of mantissa through the
// tensor cores; in(b, k) is inA[b][k] for k < split, else inB[b][k - split].
__device__ __forceinline__ void split_input(const float* inA, int sa, const float* inB, int sb, int split, int K,
                                            u16* AH, u16* AL) {
    for (int e = threadIdx.x; e < BS * K / 2; e += NT) {
        const int b = e / (K / 2), k = 2 * (e % (K / 2));
        const float2 x = k < split ? *(const float2*)(inA + b * sa + k) : *(const float2*)(inB + b * sb + k - split);
        u32 hi, lo;
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(hi) : "f"(x.y), "f"(x.x));
        const float rx = x.x - __uint_as_float(hi << 16), ry = x.y - __uint_as_float(hi & 0xffff0000u);
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(lo) : "f"(ry), "f"(rx));
        *(u32*)(AH + b * AKS + k) = hi;
        *(u32*)(AL + b * AKS + k) = lo;
    }
}

// out[b][n0 + n] (+)= sum_k P[n][k] (AH + AL)[b][k] for the panel's rows.
// Warp w takes row tile w % MT and every NG-th 8-column tile from w / MT,
// four at a time, so each A fragment serves up to four weight tiles.
__device__ __forceinline__ void panel_mm_tc(const unsigned char* P, int rows, int K, const u16* AH, const u16* AL,
                                            float* out, int so, int n0, bool accumulate) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int g = lane >> 2, tq = lane & 3;
    const int mt = warp % MT, ng = warp / MT;
    const int rowb = (K + WPAD) * 2;
    const int ntiles = rows / 8;
    const u16* ah = AH + (mt * 16 + g) * AKS + 2 * tq;
    const u16* al = AL + (mt * 16 + g) * AKS + 2 * tq;
    for (int base = ng; base < ntiles; base += 4 * NG) {
        // hi and lo products accumulate apart: two independent MMA chains per tile.
        float acc[4][4], acl[4][4];
#pragma unroll
        for (int u = 0; u < 4; u++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[u][e] = acl[u][e] = 0.0f;
        for (int k0 = 0; k0 < K; k0 += 16) {
            const u32 h0 = *(const u32*)(ah + k0), h1 = *(const u32*)(ah + 8 * AKS + k0);
            const u32 h2 = *(const u32*)(ah + k0 + 8), h3 = *(const u32*)(ah + 8 * AKS + k0 + 8);
            const u32 l0 = *(const u32*)(al + k0), l1 = *(const u32*)(al + 8 * AKS + k0);
            const u32 l2 = *(const u32*)(al + k0 + 8), l3 = *(const u32*)(al + 8 * AKS + k0 + 8);
#pragma unroll
            for (int u = 0; u < 4; u++) {
                const int nt = base + u * NG;
                if (nt < ntiles) {
                    const unsigned char* prow = P + (nt * 8 + g) * rowb;
                    const u32 b0 = *(const u32*)(prow + (k0 + 2 * tq) * 2);
                    const u32 b1 = *(const u32*)(prow + (k0 + 8 + 2 * tq) * 2);
                    mma16816(acc[u], h0, h1, h2, h3, b0, b1);
                    mma16816(acl[u], l0, l1, l2, l3, b0, b1);
                }
            }
        }
#pragma unroll
        for (int u = 0; u < 4; u++) {
            const int nt = base + u * NG;
            if (nt < ntiles) {
                float* o0 = out + (mt * 16 + g) * so + n0 + nt * 8 + 2 * tq;
                float* o1 = o0 + 8 * so;
                const float v0 = acc[u][0] + acl[u][0], v1 = acc[u][1] + acl[u][1];
                const float v2 = acc[u][2] + acl[u][2], v3 = acc[u][3] + acl[u][3];
                if (accumulate) {
                    o0[0] += v0; o0[1] += v1; o1[0] += v2; o1[1] += v3;
                } else {
                    o0[0] = v0; o0[1] = v1; o1[0] = v2; o1[1] = v3;
                }
            }
        }
    }
}
#else
// out[b][n0 + n] (+)= sum_k P[n][k] in(b, k) for the panel's rows with
// float32 FMAs; in(b, k) is inA[b][k] for k < split, else inB[b][k - split].
__device__ __forceinline__ void panel_mm_fma(const unsigned char* P, int rows, int K, const float* inA, int sa,
                                             const float* inB, int sb, int split, float* out, int so, int n0,
                                             bool accumulate) {
    const int rowf = K + WPAD;
    const float* Pf = (const float*)P;
    // G row groups of BS / G streams each (G a power of two dividing BS, at most 16).
    int G = NT / rows;
    G = G < 1 ? 1 : (G > 16 ? 16 : G);
    while (BS % G) G >>= 1;
    const int RB = BS / G;
    for (int item = threadIdx.x; item < rows * G; item += NT) {
        const int o = item % rows, grp = item / rows;
        float acc[BS];
#pragma unroll
        for (int r = 0; r < BS; r++) acc[r] = 0.0f;
        for (int k = 0; k < K; k += 4) {
            const float4 w = *(const float4*)(Pf + o * rowf + k);
            const float* in = k < split ? inA + k : inB + (k - split);
            const int st = k < split ? sa : sb;
#pragma unroll
            for (int r = 0; r < BS; r++) {
                if (r < RB) {
                    const float* x = in + (grp * RB + r) * st;
                    acc[r] += w.x * x[0] + w.y * x[1] + w.z * x[2] + w.w * x[3];
                }
            }
        }
#pragma unroll
        for (int r = 0; r < BS; r++) {
            if (r < RB) {
                float* dst = out + (grp * RB + r) * so + n0 + o;
                *dst = accumulate ? *dst + acc[r] : acc[r];
            }
        }
    }
}
#endif

// Multiplies matrix `id` (all its panels, which are the next ones in the
// cursor's order), keeping NSTAGE - 1 panels in flight.
// Cycles thread 0 of block 0 spends per panel waiting for its data (and
// the barrier after), and multiplying (and the barrier after): shared
// memory `ptimer[2]`, when profiling.
__device__ void run_matrix(const Wts& W, Pipe& p, unsigned char* panels, u16* AH, u16* AL, int id, const float* inA,
                           int sa, const float* inB, int sb, int split, float* out, int so, bool accumulate,
                           long long* ptimer) {
    const Mat m = mat(W, id);
    const int pr = panel_rows(m.n, m.k);
#if MMA
    split_input(inA, sa, inB, sb, split, m.k, AH, AL);  // read after the first barrier below
#endif
    for (int n0 = 0; n0 < m.n; n0 += pr) {
        // The buffer refilled here was consumed by the previous panel, whose
        // trailing barrier every warp has passed.
        issue(W, p, panels);
        const long long t0 = ptimer ? clock64() : 0;
        asm volatile("cp.async.wait_group %0;" ::"n"(NSTAGE - 1) : "memory");
        __syncthreads();
        const long long t1 = ptimer ? clock64() : 0;
        const int rows = m.n - n0 < pr ? m.n - n0 : pr;
#if MMA
        panel_mm_tc(panels + (p.used % NSTAGE) * PANEL_BYTES, rows, m.k, AH, AL, out, so, n0, accumulate);
#else
        panel_mm_fma(panels + (p.used % NSTAGE) * PANEL_BYTES, rows, m.k, inA, sa, inB, sb, split, out, so, n0, accumulate);
#endif
        __syncthreads();
        if (ptimer) {
            ptimer[0] += t1 - t0;
            ptimer[1] += clock64() - t1;
        }
        p.used += 1;
    }
}

extern "C" __global__ void __launch_bounds__(NT, 1)
wavenet_multi(MULTI_KERNEL_PARAMS(w_res, w_skip))
{
    extern __shared__ __align__(16) unsigned char smem[];
    unsigned char* panels = smem;  // NSTAGE x PANEL_BYTES
    float* X = (float*)(smem + NSTAGE * PANEL_BYTES);  // [BS][R] residual stream
    float* OLD = X + BS * AST(R);                 // [BS][R] x_i(t - d_i)
    float* H = OLD + BS * AST(R);                 // [BS][R] gate output
    float* HP = H + BS * AST(R);                  // [BS][MAXW]
    float* ACT = HP + BS * AST(MAXW);             // [BS][MAXW]
    float* SK = ACT + BS * AST(MAXW);             // [BS][S]
    float* PW = SK + BS * AST(S);                 // [NW][A]
#if MMA
    u16* AH = (u16*)(PW + NW * A);                // [BS][MAXW + 8] split activations
    u16* AL = AH + BS * AKS;
    int* pos = (int*)(AL + BS * AKS);             // [BS]
#else
    u16* AH = nullptr;
    u16* AL = nullptr;
    int* pos = (int*)(PW + NW * A);               // [BS]
#endif
    int* live = pos + BS;
    int* y1 = live + BS;
    int* y2 = y1 + BS;
    long long* cbase = (long long*)(y2 + BS);  // [BS] this step's conditioning row (float offset)
    long long* ptimer_s = cbase + BS;           // [2] panel wait / multiply cycles (profiling)

    const Wts W{w_dil, w_res, w_skip, w_relu, w_out};
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int slot0 = blockIdx.x * BS;
    const bool profiling = prof != nullptr && blockIdx.x == 0 && tid == 0;
    long long pacc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    long long plast = clock64();
#define MARK(k) \
    if (profiling) { const long long now = clock64(); pacc[k] += now - plast; plast = now; }
    long long* ptimer = profiling ? ptimer_s : nullptr;
    if (tid == 0) ptimer_s[0] = ptimer_s[1] = 0;
    if (tid < BS) {
        const int s = slot0 + tid;
        pos[tid] = st_pos[s];
        live[tid] = st_pos[s] < st_len[s];
        y1[tid] = st_y[2 * s];
        y2[tid] = st_y[2 * s + 1];
    }
    Pipe pipe{0, 0, 0, 0};
    for (int k = 0; k < NSTAGE - 1; k++) issue(W, pipe, panels);
    __syncthreads();

    for (int step = 0; step < steps; step++) {
        for (int e = tid; e < BS * R; e += NT) {
            const int b = e / R, j = e % R;
            X[b * AST(R) + j] = emb_c[y1[b] * R + j] + emb_p[y2[b] * R + j] + emb_b[j];
        }
        for (int e = tid; e < BS * S; e += NT) SK[(e / S) * AST(S) + e % S] = 0.0f;
        if (tid < BS) cbase[tid] = st_cond[slot0 + tid] + (long long)(pos[tid] / HOP) * NL * 2 * R;
        __syncthreads();
        // Layer 0's history rows and conditioning, then each layer's next ahead.
        float old_n[EK], lh_n[EK], lg_n[EK];
#pragma unroll
        for (int k = 0; k < EK; k++) {
            const int e = tid + k * NT, b = e / R, j = e % R;
            old_n[k] = hist[((size_t)(slot0 + b) * HIST_ROWS + c_hoff[0] + (pos[b] & (c_dil[0] - 1))) * R + j];
            const float* crow = cond_pool + cbase[b];
            lh_n[k] = live[b] ? crow[j] : 0.0f;
            lg_n[k] = live[b] ? crow[R + j] : 0.0f;
        }
        __syncthreads();
        MARK(0);
        for (int i = 0; i < NL; i++) {
            float lh[EK], lg[EK];
#pragma unroll
            for (int k = 0; k < EK; k++) {
                const int e = tid + k * NT, b = e / R, j = e % R;
                OLD[b * AST(R) + j] = old_n[k];
                lh[k] = lh_n[k];
                lg[k] = lg_n[k];
                const float xv = X[b * AST(R) + j];
                if (live[b]) hist[((size_t)(slot0 + b) * HIST_ROWS + c_hoff[i] + (pos[b] & (c_dil[i] - 1))) * R + j] = xv;
                if (i + 1 < NL) {
                    old_n[k] = hist[((size_t)(slot0 + b) * HIST_ROWS + c_hoff[i + 1] + (pos[b] & (c_dil[i + 1] - 1))) * R + j];
                    const float* crow = cond_pool + cbase[b] + (i + 1) * 2 * R;
                    lh_n[k] = live[b] ? crow[j] : 0.0f;
                    lg_n[k] = live[b] ? crow[R + j] : 0.0f;
                }
            }
            MARK(1);
            // HP = [W_prev | W_cur] [x_i(t - d); x_i(t)]
            run_matrix(W, pipe, panels, AH, AL, 3 * i, OLD, AST(R), X, AST(R), R, HP, AST(2 * R), false, ptimer);
            MARK(2);
#pragma unroll
            for (int k = 0; k < EK; k++) {
                const int e = tid + k * NT, b = e / R, j = e % R;
                const float vh = HP[b * AST(2 * R) + j] + gate_b[i * 2 * R + j] + lh[k];
                const float vg = HP[b * AST(2 * R) + R + j] + gate_b[i * 2 * R + R + j] + lg[k];
                H[b * AST(R) + j] = tanhf(vh) * sigmoidf_exact(vg);
            }
            MARK(3);
            if (i + 1 < NL) {
                run_matrix(W, pipe, panels, AH, AL, 3 * i + 1, H, AST(R), H, AST(R), R, HP, AST(R), false, ptimer);
#pragma unroll
                for (int k = 0; k < EK; k++) {
                    const int e = tid + k * NT, b = e / R, j = e % R;
                    X[b * AST(R) + j] += HP[b * AST(R) + j] + res_b[i * R + j];
                }
            }
            MARK(4);
            run_matrix(W, pipe, panels, AH, AL, 3 * i + 2, H, AST(R), H, AST(R), R, SK, AST(S), true, ptimer);
            MARK(5);
        }
        for (int e = tid; e < BS * S; e += NT) {
            const int b = e / S, j = e % S;
            ACT[b * AST(S) + j] = fmaxf(SK[b * AST(S) + j] + skip_b[j], 0.0f);
        }
        run_matrix(W, pipe, panels, AH, AL, 3 * NL, ACT, AST(S), ACT, AST(S), S, HP, AST(A), false, ptimer);
        for (int e = tid; e < BS * A; e += NT) {
            const int b = e / A, j = e % A;
            HP[b * AST(A) + j] = fmaxf(HP[b * AST(A) + j] + relu_b[j], 0.0f);
        }
        run_matrix(W, pipe, panels, AH, AL, 3 * NL + 1, HP, AST(A), HP, AST(A), A, ACT, AST(A), false, ptimer);
        for (int e = tid; e < BS * A; e += NT) ACT[(e / A) * AST(A) + e % A] += out_b[e % A];
        __syncthreads();
        MARK(6);
        // One warp per stream: softmax, sample, advance.
        for (int b = warp; b < BS; b += NW) {
            const int s = slot0 + b;
            u64 rs[4];
#pragma unroll
            for (int k = 0; k < 4; k++) rs[k] = st_rng[4 * s + k];
            // The step's conditioning row is cbase[b] / (ℓ·2r); an idle stream's draw is discarded.
            const int md = live[b] ? step_mode(mode, voiced, cbase[b] / (NL * 2 * R))
                                   : (mode == SAMPLE_VOICED_TEMPERATURE ? SAMPLE_DIRECT : mode);
            float u = 0.0f;
            if (md != SAMPLE_MODE) u = rng_uniform(rs);
            const int y = warp_sample(ACT + b * AST(A), PW + warp * A, md, inv_tau, u);
            __syncwarp();  // the lanes' probabilities in PW, visible to every lane
            if (live[b]) {
                if (probs_out) {
                    for (int k = lane; k < A; k += 32) probs_out[((size_t)s * steps + step) * A + k] = PW[warp * A + k];
                }
                __syncwarp();
                if (lane == 0) {
#pragma unroll
                    for (int k = 0; k < 4; k++) st_rng[4 * s + k] = rs[k];
                    const bool lead = pos[b] < st_lead[s];  // the lead: silence written and fed
                    out[(size_t)s * steps + step] = lead ? 128 : y;
                    y2[b] = y1[b];
                    y1[b] = lead ? 128 : (forced ? (int)forced[(size_t)s * steps + step] : y);
                    pos[b] += 1;
                    live[b] = pos[b] < st_len[s];
                }
            }
            __syncwarp();
        }
        __syncthreads();
        MARK(7);
    }
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    if (profiling) {
        for (int k = 0; k < 8; k++) prof[k] = pacc[k];
        prof[8] = ptimer_s[0];
        prof[9] = ptimer_s[1];
    }
    if (tid < BS) {
        const int s = slot0 + tid;
        st_pos[s] = pos[tid];
        st_y[2 * s] = y1[tid];
        st_y[2 * s + 1] = y2[tid];
    }
}
