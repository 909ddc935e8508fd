// Kernel 2: many independent utterances ("streams"), highest throughput
// (issue 9; the batched single-launch design of the LPCNet talk). Each
// block owns BS stream slots and advances them one sample per step for
// `steps` steps; blocks never wait for one another. Within a block every
// per-step product is a [BS, K] x [K, N] matrix product over the block's
// streams, so a weight read from L2 serves BS streams; with MMA = 1 the
// products run on the tensor cores (mma.sync m16n8k16, bfloat16 operands,
// float32 accumulation), with MMA = 0 as float32 FMAs.
//
// A slot's state lives in global memory between launches (its layer
// histories, last two samples, position, length, random state and where its
// conditioning starts), so the host may fill, empty and refill slots
// between launches: a stream joins by having its slot written and leaves
// when its position reaches its length (it is then computed but neither
// advanced nor written).
//
// Extra defines: BS (slots per block, a multiple of 16), NT (threads),
// MMA (1: tensor cores; needs WBF16 = 1).

#define NW (NT / 32)
#define PAD 8

// Row stride (floats) of a shared [BS, width] matrix.
#define STRIDE(width) ((width) + PAD)

#if MMA
__device__ __forceinline__ u32 pack_bf16(float lo, float hi) {
    u32 d;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
    return d;
}
// out[b][n] (+)= sum_k W[n][k] in[b][k] for the block's BS rows.
// W: [N][K] bfloat16 row-major. One warp per 8 output columns at a time;
// each weight fragment serves all BS/16 row tiles.
template <int N, int K>
__device__ void block_mm(const wt* __restrict__ W, const float* in, float* out, bool accumulate) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int g = lane >> 2, tq = lane & 3;
    const u32* W32 = (const u32*)W;
    for (int nt = warp; nt < N / 8; nt += NW) {
        float acc[BS / 16][4];
#pragma unroll
        for (int m = 0; m < BS / 16; m++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[m][e] = 0.0f;
        const int n = nt * 8 + g;
#pragma unroll 2
        for (int k0 = 0; k0 < K; k0 += 16) {
            const u32 b0 = __ldg(W32 + ((size_t)n * K + k0 + 2 * tq) / 2);
            const u32 b1 = __ldg(W32 + ((size_t)n * K + k0 + 8 + 2 * tq) / 2);
#pragma unroll
            for (int m = 0; m < BS / 16; m++) {
                const float* r0 = in + (m * 16 + g) * STRIDE(K) + k0 + 2 * tq;
                const float* r1 = r0 + 8 * STRIDE(K);
                const float2 x00 = *(const float2*)r0, x10 = *(const float2*)r1;
                const float2 x01 = *(const float2*)(r0 + 8), x11 = *(const float2*)(r1 + 8);
                const u32 a0 = pack_bf16(x00.x, x00.y), a1 = pack_bf16(x10.x, x10.y);
                const u32 a2 = pack_bf16(x01.x, x01.y), a3 = pack_bf16(x11.x, x11.y);
                asm volatile(
                    "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                    "{%0,%1,%2,%3};"
                    : "+f"(acc[m][0]), "+f"(acc[m][1]), "+f"(acc[m][2]), "+f"(acc[m][3])
                    : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
            }
        }
#pragma unroll
        for (int m = 0; m < BS / 16; m++) {
            float* o0 = out + (m * 16 + g) * STRIDE(N) + nt * 8 + 2 * tq;
            float* o1 = o0 + 8 * STRIDE(N);
            if (accumulate) {
                o0[0] += acc[m][0]; o0[1] += acc[m][1]; o1[0] += acc[m][2]; o1[1] += acc[m][3];
            } else {
                o0[0] = acc[m][0]; o0[1] = acc[m][1]; o1[0] = acc[m][2]; o1[1] = acc[m][3];
            }
        }
    }
}
#else
// As above with float32 FMAs. W: [K][N] (transposed, so that consecutive
// threads read consecutive columns); thread (o, group) owns column o for
// BS / G of the rows.
template <int N, int K>
__device__ void block_mm(const wt* __restrict__ W, const float* in, float* out, bool accumulate) {
    constexpr int G0 = (NT / N) > 0 ? (NT / N) : 1;
    constexpr int G = G0 < BS ? G0 : BS;  // row groups (powers of two: G divides BS)
    constexpr int RB = BS / G;            // rows per thread
    for (int item = threadIdx.x; item < N * G; item += NT) {
        const int o = item % N, grp = item / N;
        float acc[RB];
#pragma unroll
        for (int r = 0; r < RB; r++) acc[r] = 0.0f;
#pragma unroll 2
        for (int k = 0; k < K; k++) {
            const float w = wf(W[(size_t)k * N + o]);
#pragma unroll
            for (int r = 0; r < RB; r++) acc[r] += w * in[(grp * RB + r) * STRIDE(K) + k];
        }
#pragma unroll
        for (int r = 0; r < RB; r++) {
            float* dst = out + (grp * RB + r) * STRIDE(N) + o;
            *dst = accumulate ? *dst + acc[r] : acc[r];
        }
    }
}
#endif

#define MAXW2 ((2 * R > A) ? 2 * R : A)
#define MAXW ((MAXW2 > S) ? MAXW2 : S)

extern "C" __global__ void __launch_bounds__(NT, 1)
wavenet_multi(const wt* __restrict__ w_dil,   // per layer [2R][2R]: [W_prev | W_cur] (MMA) or its transpose
              const wt* __restrict__ w_res,   // per layer [R][R] (or transposed), NL-1 layers
              const wt* __restrict__ w_skip,  // per layer [S][R] (or transposed)
              const wt* __restrict__ w_relu,  // [A][S] (or transposed)
              const wt* __restrict__ w_out,   // [A][A] (or transposed)
              const float* __restrict__ gate_b, const float* __restrict__ res_b, const float* __restrict__ skip_b,
              const float* __restrict__ relu_b, const float* __restrict__ out_b,
              const float* __restrict__ emb_c, const float* __restrict__ emb_p, const float* __restrict__ emb_b,
              const float* __restrict__ cond_pool,  // conditioning rows [*, NL*2R]
              float* __restrict__ hist,             // [slots][HIST_ROWS][R]
              int* __restrict__ st_pos, const int* __restrict__ st_len, int* __restrict__ st_y,
              u64* __restrict__ st_rng, const long long* __restrict__ st_cond,
              int steps, int mode, float inv_tau,
              int* __restrict__ out,                        // [slots][steps], poisoned by the host
              const unsigned char* __restrict__ forced,     // [slots][steps] or null
              float* __restrict__ probs_out)                // [slots][steps][A] or null
{
    extern __shared__ __align__(16) float sm[];
    float* X = sm;                          // [BS][R]
    float* ACT = X + BS * STRIDE(R);        // [BS][MAXW]
    float* HP = ACT + BS * STRIDE(MAXW);    // [BS][MAXW]
    float* H = HP + BS * STRIDE(MAXW);      // [BS][R]
    float* SK = H + BS * STRIDE(R);         // [BS][S]
    float* PW = SK + BS * STRIDE(S);        // [NW][A] per-warp probabilities
    int* pos = (int*)(PW + NW * A);         // [BS]
    int* live = pos + BS;                   // [BS]
    int* y1 = live + BS;                    // [BS]
    int* y2 = y1 + BS;                      // [BS]

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int slot0 = blockIdx.x * BS;
    if (tid < BS) {
        const int s = slot0 + tid;
        pos[tid] = st_pos[s];
        live[tid] = st_pos[s] < st_len[s];
        y1[tid] = st_y[2 * s];
        y2[tid] = st_y[2 * s + 1];
    }
    __syncthreads();

    for (int step = 0; step < steps; step++) {
        for (int e = tid; e < BS * R; e += NT) {
            const int b = e / R, j = e % R;
            X[b * STRIDE(R) + j] = emb_c[y1[b] * R + j] + emb_p[y2[b] * R + j] + emb_b[j];
        }
        for (int e = tid; e < BS * S; e += NT) SK[(e / S) * STRIDE(S) + e % S] = 0.0f;
        __syncthreads();
        for (int i = 0; i < NL; i++) {
            const int d = c_dil[i];
            // ACT = [x_i(t - d) | x_i(t)]; x_i(t) replaces x_i(t - d) in the ring.
            for (int e = tid; e < BS * R; e += NT) {
                const int b = e / R, j = e % R;
                float* ring = hist + ((size_t)(slot0 + b) * HIST_ROWS + c_hoff[i] + pos[b] % d) * R + j;
                const float xv = X[b * STRIDE(R) + j];
                ACT[b * STRIDE(2 * R) + j] = *ring;
                ACT[b * STRIDE(2 * R) + R + j] = xv;
                if (live[b]) *ring = xv;
            }
            __syncthreads();
            block_mm<2 * R, 2 * R>(w_dil + (size_t)i * 4 * R * R, ACT, HP, false);
            __syncthreads();
            for (int e = tid; e < BS * R; e += NT) {
                const int b = e / R, j = e % R;
                const float* crow = cond_pool + st_cond[slot0 + b] + (size_t)(pos[b] / HOP) * NL * 2 * R + i * 2 * R;
                const float lh = live[b] ? crow[j] : 0.0f, lg = live[b] ? crow[R + j] : 0.0f;
                const float vh = HP[b * STRIDE(2 * R) + j] + gate_b[i * 2 * R + j] + lh;
                const float vg = HP[b * STRIDE(2 * R) + R + j] + gate_b[i * 2 * R + R + j] + lg;
                H[b * STRIDE(R) + j] = tanhf(vh) * sigmoidf_exact(vg);
            }
            __syncthreads();
            if (i + 1 < NL) {
                block_mm<R, R>(w_res + (size_t)i * R * R, H, HP, false);
            }
            block_mm<S, R>(w_skip + (size_t)i * S * R, H, SK, true);
            __syncthreads();
            if (i + 1 < NL) {
                for (int e = tid; e < BS * R; e += NT) {
                    const int b = e / R, j = e % R;
                    X[b * STRIDE(R) + j] += HP[b * STRIDE(R) + j] + res_b[i * R + j];
                }
                __syncthreads();
            }
        }
        for (int e = tid; e < BS * S; e += NT) {
            const int b = e / S, j = e % S;
            ACT[b * STRIDE(S) + j] = fmaxf(SK[b * STRIDE(S) + j] + skip_b[j], 0.0f);
        }
        __syncthreads();
        block_mm<A, S>(w_relu, ACT, HP, false);
        __syncthreads();
        for (int e = tid; e < BS * A; e += NT) {
            const int b = e / A, j = e % A;
            HP[b * STRIDE(A) + j] = fmaxf(HP[b * STRIDE(A) + j] + relu_b[j], 0.0f);
        }
        __syncthreads();
        block_mm<A, A>(w_out, HP, ACT, false);
        __syncthreads();
        for (int e = tid; e < BS * A; e += NT) ACT[(e / A) * STRIDE(A) + e % A] += out_b[e % A];
        __syncthreads();
        // One warp per stream: softmax, sample, advance.
        for (int b = warp; b < BS; b += NW) {
            const int s = slot0 + b;
            u64 rs[4];
#pragma unroll
            for (int k = 0; k < 4; k++) rs[k] = st_rng[4 * s + k];
            float u = 0.0f;
            if (mode != SAMPLE_MODE) u = rng_uniform(rs);
            const int y = warp_sample(ACT + b * STRIDE(A), PW + warp * A, mode, inv_tau, u);
            if (live[b]) {
                if (probs_out) {
                    for (int k = lane; k < A; k += 32) probs_out[((size_t)s * steps + step) * A + k] = PW[warp * A + k];
                }
                __syncwarp();
                if (lane == 0) {
#pragma unroll
                    for (int k = 0; k < 4; k++) st_rng[4 * s + k] = rs[k];
                    out[(size_t)s * steps + step] = y;
                    y2[b] = y1[b];
                    y1[b] = forced ? (int)forced[(size_t)s * steps + step] : y;
                    pos[b] += 1;
                    live[b] = pos[b] < st_len[s];
                }
            }
            __syncwarp();
        }
        __syncthreads();
    }
    if (tid < BS) {
        const int s = slot0 + tid;
        st_pos[s] = pos[tid];
        st_y[2 * s] = y1[tid];
        st_y[2 * s + 1] = y2[tid];
    }
}
