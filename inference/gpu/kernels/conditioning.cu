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
// (m, n) per block of 256 threads, each thread 8 x 8 outputs strided by 16
// (broadcast shared-memory reads). `Rows` maps an output row to its input
// row (`a`, nullptr: zeros) and stores outputs (`store`).
#define GBM 128
#define GBN 128
#define GBK 8

template <class Rows>
__device__ __forceinline__ void gemm_tile(const Rows& rows, int M, int N, int K, const float* __restrict__ W,
                                          const float* __restrict__ bias)
{
    __shared__ float As[GBK][GBM];
    __shared__ float Ws[GBK][GBN];
    const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
    const int m0 = blockIdx.x * GBM, n0 = blockIdx.y * GBN;
    // This thread's loads: row lr of both tiles, k = lk .. lk + 3.
    const int lr = tid >> 1, lk = (tid & 1) * 4;
    const float* arow = (m0 + lr < M) ? rows.a(m0 + lr) : nullptr;
    const float* wrow = (n0 + lr < N) ? W + (i64)(n0 + lr) * K : nullptr;
    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 8; j++) acc[i][j] = 0.f;
    for (int k0 = 0; k0 < K; k0 += GBK) {
#pragma unroll
        for (int q = 0; q < 4; q++) {
            const int k = k0 + lk + q;
            As[lk + q][lr] = (arow && k < K) ? arow[k] : 0.f;
            Ws[lk + q][lr] = (wrow && k < K) ? wrow[k] : 0.f;
        }
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
