// The WaveNet gate of App. A.1 with its conditioning (App. A.2) fused into one pass, and its
// backward with the conditioning gradient's sum over each frame's samples in the same pass.
//
// Layout (trainers/train/src/models/wavenet.rs, "time-major, batch inner"): row = t * batch + b for
// sample t of example b; frame row = (t / hop) * batch + b. p has 2r columns (tanh half, then
// sigmoid half); l and gl are strided views (row stride ldl / ldgl) of all layers' columns.
//
//   forward:  z[row, c] = tanh(p[row, c] + l[f, c] + bias[c]) * sigmoid(p[row, r + c] + l[f, r + c] + bias[r + c])
//   backward: gp = dz/dp · gz for both halves; gl[f, :] = Σ over the frame's hop rows of gp
//
// Arithmetic in float32; T is float or bfloat16 (stored as its upper 16 bits, rounded to
// nearest even like PyTorch).
typedef unsigned short u16;
typedef unsigned int u32;

__device__ __forceinline__ float ld(const float* p, long long i) { return p[i]; }
__device__ __forceinline__ float ld(const u16* p, long long i) { return __uint_as_float(((u32)p[i]) << 16); }
__device__ __forceinline__ void st(float* p, long long i, float v) { p[i] = v; }
__device__ __forceinline__ void st(u16* p, long long i, float v) {
    u32 u = __float_as_uint(v);
    if ((u & 0x7fffffffu) > 0x7f800000u) {  // NaN stays NaN
        p[i] = (u16)((u >> 16) | 0x40u);
        return;
    }
    u += 0x7fffu + ((u >> 16) & 1u);
    p[i] = (u16)(u >> 16);
}
__device__ __forceinline__ float sigm(float x) { return 1.0f / (1.0f + expf(-x)); }

template <typename T>
__device__ void gate_fwd(const T* p, const T* l, long long ldl, const T* bias, T* z, long long ldz, int r, int batch,
                         int hop, long long rows) {
    long long n = rows * r;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        long long row = i / r;
        int c = (int)(i - row * r);
        long long t = row / batch;
        long long lrow = (t / hop) * batch + (row - t * batch);
        float a = ld(p, row * 2 * r + c) + ld(l, lrow * ldl + c) + ld(bias, c);
        float s = ld(p, row * 2 * r + r + c) + ld(l, lrow * ldl + r + c) + ld(bias, r + c);
        st(z, row * ldz + c, tanhf(a) * sigm(s));
    }
}

// One block per frame row (frame f, example b); blockDim = r * G threads: thread (g, c) takes
// channel c of rows j = g, g + G, ... of the frame's hop rows. Dynamic shared memory: G * 2r floats.
template <typename T>
__device__ void gate_bwd(const T* p, const T* l, long long ldl, const T* bias, const T* gz, long long ldgz, T* gp,
                         float* gl, long long ldgl, int r, int batch, int hop) {
    extern __shared__ float red[];
    int c = threadIdx.x % r, g = threadIdx.x / r, G = blockDim.x / r;
    long long fb = blockIdx.x;
    long long f = fb / batch, b = fb - f * batch;
    float la = ld(l, fb * ldl + c) + ld(bias, c), lb = ld(l, fb * ldl + r + c) + ld(bias, r + c);
    float sa = 0.0f, sb = 0.0f;
    for (int j = g; j < hop; j += G) {
        long long row = (f * hop + j) * batch + b;
        float a = tanhf(ld(p, row * 2 * r + c) + la);
        float s = sigm(ld(p, row * 2 * r + r + c) + lb);
        float gzv = ld(gz, row * ldgz + c);
        float ga = gzv * s * (1.0f - a * a);
        float gb = gzv * a * s * (1.0f - s);
        st(gp, row * 2 * r + c, ga);
        st(gp, row * 2 * r + r + c, gb);
        sa += ga;
        sb += gb;
    }
    red[g * 2 * r + c] = sa;
    red[g * 2 * r + r + c] = sb;
    __syncthreads();
    if (g == 0) {
        for (int k = 1; k < G; ++k) {
            sa += red[k * 2 * r + c];
            sb += red[k * 2 * r + r + c];
        }
        gl[fb * ldgl + c] = sa;
        gl[fb * ldgl + r + c] = sb;
    }
}

#define ENTRIES(NAME, T)                                                                                          \
    extern "C" __global__ void gate_fwd_##NAME(const T* p, const T* l, long long ldl, const T* bias, T* z,       \
                                               long long ldz, int r, int batch, int hop, long long rows) {      \
        gate_fwd<T>(p, l, ldl, bias, z, ldz, r, batch, hop, rows);                                               \
    }                                                                                                             \
    extern "C" __global__ void gate_bwd_##NAME(const T* p, const T* l, long long ldl, const T* bias, const T* gz, \
                                               long long ldgz, T* gp, float* gl, long long ldgl, int r, int batch, \
                                               int hop) {                                                         \
        gate_bwd<T>(p, l, ldl, bias, gz, ldgz, gp, gl, ldgl, r, batch, hop);                                      \
    }
ENTRIES(f32, float)
ENTRIES(bf16, u16)
