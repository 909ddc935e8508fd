// The conditioning network on the GPU (Deep Voice App. A.2; FORMAT.md; the
// CPU's dv_synth::ConditioningNetwork): QRNN layers as all-frames products
// plus a sequential fo-pooling per (sentence, direction, unit), and the
// projection to every WaveNet layer's L as a product over the rows a launch
// reads. Float32 products (float32 sums in k order), float32 gates, the
// cell state in float64: the CPU's arithmetic, in another summation order.
//
// No defines: every size is an argument (one compile per process).

typedef long long i64;

// C[m, n] = bias[n] + sum_k A(m)[k] * W[n * K + k] over a 128 x 128 tile of
// (m, n) per block of 256 threads. `Rows` maps an output row to its input
// row (`a`, nullptr: zeros) and stores outputs (`store`). Two versions:
// float32 FMAs, each thread 8 x 8 outputs strided by 16 (broadcast
// shared-memory reads), the sums in k order (the default; `CondLayout`'s CPU
// reference follows it); or, with COND_TF32 defined (`DV_GPU_DEFINES`, an
// experiment), tensor-core MMAs in three TF32 passes (each operand split as
// hi + lo, lo x hi + hi x lo + hi x hi: float32's accuracy in another
// summation order), each warp 32 x 64 outputs.
#define GBM 128
#define GBN 128
#define GBK 8

// A block's share of a tile's loads: thread tid copies row lr of the tile's
// A rows and of its W rows, k = lk .. lk + 3 of each GBK step, zeros past the
// ends, into k-major shared memory.
struct TileLoads {
    const float* arow;
    const float* wrow;
    int lr, lk;
    template <class Rows>
    __device__ TileLoads(const Rows& rows, int M, int N, int K, const float* __restrict__ W)
    {
        const int m0 = blockIdx.x * GBM, n0 = blockIdx.y * GBN;
        lr = threadIdx.x >> 1;
        lk = (threadIdx.x & 1) * 4;
        arow = (m0 + lr < M) ? rows.a(m0 + lr) : nullptr;
        wrow = (n0 + lr < N) ? W + (i64)(n0 + lr) * K : nullptr;
    }
    template <int LD>
    __device__ __forceinline__ void stage(float (&As)[GBK][LD], float (&Ws)[GBK][LD], int k0, int K) const
    {
#pragma unroll
        for (int q = 0; q < 4; q++) {
            const int k = k0 + lk + q;
            As[lk + q][lr] = (arow && k < K) ? arow[k] : 0.f;
            Ws[lk + q][lr] = (wrow && k < K) ? wrow[k] : 0.f;
        }
    }
};

#ifdef COND_TF32
__device__ __forceinline__ unsigned tf32_of(float x)
{
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return r;
}

__device__ __forceinline__ void split_tf32(float x, unsigned& hi, unsigned& lo)
{
    hi = tf32_of(x);
    lo = tf32_of(x - __uint_as_float(hi));
}

// c += a b over one m16 n8 k8 tile (PTX ISA: mma.m16n8k8, .tf32 fragments).
__device__ __forceinline__ void mma_tf32(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2])
{
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

template <class Rows>
__device__ __forceinline__ void gemm_tile(const Rows& rows, int M, int N, int K, const float* __restrict__ W,
                                          const float* __restrict__ bias)
{
    // Rows padded by 8 floats: a fragment's 32 reads (t * 136 + g) fall in 32 banks.
    __shared__ float As[GBK][GBM + 8];
    __shared__ float Ws[GBK][GBN + 8];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t = lane & 3;
    const int wm = 32 * (warp >> 1), wn = 64 * (warp & 1);  // this warp's rows and columns in the tile
    const int m0 = blockIdx.x * GBM, n0 = blockIdx.y * GBN;
    const TileLoads loads(rows, M, N, K, W);
    float acc[2][8][4];
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 8; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[i][j][e] = 0.f;
    for (int k0 = 0; k0 < K; k0 += GBK) {
        loads.stage(As, Ws, k0, K);
        __syncthreads();
        // A fragments (rows g and g + 8, k = t and t + 4) of the warp's two m16 tiles.
        unsigned ah[2][4], al[2][4];
#pragma unroll
        for (int i = 0; i < 2; i++) {
            const int r = wm + 16 * i + g;
            split_tf32(As[t][r], ah[i][0], al[i][0]);
            split_tf32(As[t][r + 8], ah[i][1], al[i][1]);
            split_tf32(As[t + 4][r], ah[i][2], al[i][2]);
            split_tf32(As[t + 4][r + 8], ah[i][3], al[i][3]);
        }
#pragma unroll
        for (int j = 0; j < 8; j++) {
            // B fragment (k = t and t + 4, column g) of n8 tile j.
            const int c = wn + 8 * j + g;
            unsigned bh[2], bl[2];
            split_tf32(Ws[t][c], bh[0], bl[0]);
            split_tf32(Ws[t + 4][c], bh[1], bl[1]);
#pragma unroll
            for (int i = 0; i < 2; i++) {
                mma_tf32(acc[i][j], al[i], bh);
                mma_tf32(acc[i][j], ah[i], bl);
                mma_tf32(acc[i][j], ah[i], bh);
            }
        }
        __syncthreads();
    }
    // acc[i][j]: rows g and g + 8 of m16 tile i, columns 2t and 2t + 1 of n8 tile j.
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int m = m0 + wm + 16 * i + g + 8 * h;
            if (m >= M) continue;
#pragma unroll
            for (int j = 0; j < 8; j++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const int n = n0 + wn + 8 * j + 2 * t + e;
                    if (n < N) rows.store(m, n, (bias ? bias[n] : 0.f) + acc[i][j][2 * h + e]);
                }
        }
}
#else
template <class Rows>
__device__ __forceinline__ void gemm_tile(const Rows& rows, int M, int N, int K, const float* __restrict__ W,
                                          const float* __restrict__ bias)
{
    __shared__ float As[GBK][GBM];
    __shared__ float Ws[GBK][GBN];
    const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
    const int m0 = blockIdx.x * GBM, n0 = blockIdx.y * GBN;
    const TileLoads loads(rows, M, N, K, W);
    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 8; j++) acc[i][j] = 0.f;
    for (int k0 = 0; k0 < K; k0 += GBK) {
        loads.stage(As, Ws, k0, K);
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < GBK; kk++) {
            float a[8], w[8];
#pragma unroll
            for (int i = 0; i < 8; i++) a[i] = As[kk][ty + 16 * i];
#pragma unroll
            for (int j = 0; j < 8; j++) w[j] = Ws[kk][tx + 16 * j];
#pragma unroll
            for (int i = 0; i < 8; i++)
#pragma unroll
                for (int j = 0; j < 8; j++) acc[i][j] = fmaf(a[i], w[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const int m = m0 + ty + 16 * i;
        if (m >= M) continue;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const int n = n0 + tx + 16 * j;
            if (n < N) rows.store(m, n, (bias ? bias[n] : 0.f) + acc[i][j]);
        }
    }
}
#endif

struct Dense {
    const float* A;
    float* C;
    i64 lda, ldc;
    __device__ const float* a(int m) const { return A + (i64)m * lda; }
    __device__ void store(int m, int n, float v) const { C[(i64)m * ldc + n] = v; }
};

// A QRNN layer's gate products for every frame of a batch: C [M, N] =
// A [M, K] W^T (the stacked [fwd.w_cur; fwd.w_prev; bwd.w_cur; bwd.w_prev],
// N = 12H). Grid (ceil(M / 128), ceil(N / 128)), 256 threads.
extern "C" __global__ void __launch_bounds__(256) cond_gemm(const float* __restrict__ A, float* __restrict__ C,
                                                            int M, int N, int K, const float* __restrict__ W)
{
    const Dense d{A, C, K, N};
    gemm_tile(d, M, N, K, W, nullptr);
}

__device__ __forceinline__ float sigmoidf_(float x) { return 1.f / (1.f + expf(-x)); }

// Fo-pooling of one layer: block (b, dir) runs sentence b's direction dir,
// one thread per hidden unit j (blockDim.x = H). seq[b] = (first row in g,
// frames, first output row). g: [rows, 12H], per direction [w_cur x(t);
// w_prev x(t)] at 6H * dir. bias: [2][3H]. Writes z into column dir * H + j
// of out's rows (row stride ldo floats).
extern "C" __global__ void cond_fo_pool(const float* __restrict__ g, const float* __restrict__ bias,
                                        const i64* __restrict__ seq, float* __restrict__ out, i64 ldo, int H)
{
    const int b = blockIdx.x, dir = blockIdx.y, j = threadIdx.x;
    if (j >= H) return;
    const i64 g0 = seq[3 * b], frames = seq[3 * b + 1], o0 = seq[3 * b + 2];
    const i64 ld = 12 * (i64)H;
    const int at = 6 * H * dir;
    const float bz = bias[3 * H * dir + j], bo = bias[3 * H * dir + H + j], bf = bias[3 * H * dir + 2 * H + j];
    double c = 0.0;
    for (i64 step = 0; step < frames; step++) {
        const i64 t = dir ? frames - 1 - step : step;
        const float* cur = g + (g0 + t) * ld + at;
        float az = bz + cur[j], ao = bo + cur[H + j], af = bf + cur[2 * H + j];
        if (step > 0) {
            const float* prev = g + (g0 + (dir ? t + 1 : t - 1)) * ld + at + 3 * H;
            az += prev[j];
            ao += prev[H + j];
            af += prev[2 * H + j];
        }
        const double cand = tanhf(az), o = sigmoidf_(ao), f = sigmoidf_(af);
        c = f * c + (1.0 - f) * cand;
        out[(o0 + t) * ldo + dir * H + j] = (float)(o * c);
    }
}

struct Windows {
    const float* arena;
    float* pool;
    const i64* meta;  // per slot: (u offset in floats or -1, frames, first frame)
    i64 base;         // the pool's first window row
    int wf, K, N;
    __device__ const float* a(int r) const {
        const int s = r / wf, k = r - s * wf;
        const i64 off = meta[3 * s], frames = meta[3 * s + 1], f = meta[3 * s + 2] + k;
        return (off >= 0 && f < frames) ? arena + off + f * K : nullptr;
    }
    __device__ void store(int r, int n, float v) const {
        const int s = r / wf, k = r - s * wf;
        pool[(base + (i64)s * wf + k) * N + n] = v;
    }
};

// The projection into a launch's windows: row k of slot s's window (pool row
// base + s * wf + k) = W u(first_s + k) + bias, the slot's u rows at arena +
// off_s (K floats each); a row past the stream's end, or of an idle slot
// (off -1), is the bias. W: [N, K] in the kernel's pool order, bias with the
// gate biases added. Grid (ceil(slots * wf / 128), ceil(N / 128)), 256 threads.
extern "C" __global__ void __launch_bounds__(256) cond_project(unsigned long long arena, float* __restrict__ pool,
                                                               const i64* __restrict__ meta, i64 base, int slots,
                                                               int wf, int K, int N, const float* __restrict__ W,
                                                               const float* __restrict__ bias)
{
    const Windows w{(const float*)arena, pool, meta, base, wf, K, N};
    gemm_tile(w, slots * wf, N, K, W, bias);
}
