// Monotonic alignment search (Glow-TTS `maximum_path`), Super-MAS style:
// one thread block per batch item, threads along the text axis, a loop over
// speech frames with a barrier between frames, the DP computed in place on the
// log-likelihood buffer and the backtrack done on the device by one thread.
//
// Arithmetic contract (the CPU oracle in src/mas.rs does the same operations):
//   band(x, y)  = x <= y && t - 1 - x <= s - 1 - y
//   stay        = Q[x][y-1]           (-inf at y == 0)
//   diag        = Q[x-1][y-1]         (0 at (0, 0), -inf at x == 0 or y == 0)
//   Q[x][y]     = band ? L[x][y] + (diag > stay ? diag : stay) : -inf
// one correctly rounded f32 add per cell (compiled with --fmad=false; there is
// nothing to contract anyway), true -inf outside the band.
//
// Memory: the item's rows are contiguous in speech, so reading one column per
// frame would touch one cache line per text position. Frames are therefore
// staged through shared memory MAS_TILE at a time: a tile [t][MAS_TILE + 1] is
// filled with coalesced reads (MAS_TILE neighbouring threads per row segment)
// that were issued while the previous tile was computed, the DP runs on it
// frame by frame (column 0 holds the previous tile's last frame; each thread
// keeps its own rows' previous frame in registers), and the finished Q tile is
// written back over L with coalesced stores. The global buffer ends up
// holding Q in the band, -inf outside it, padding untouched. The backtrack reads it back in windows of MAS_BT frames
// staged through shared memory by the block and walked by one thread (a
// single thread chasing global loads would pay the L2 latency every frame).
//
// Launch (one of the entry points mas_p1 .. mas_p16 at the end): grid = batch,
// block = a multiple of 32 with 64 <= blockDim <= 1024, t <= K * blockDim and
// t <= PRE * blockDim / MAS_TILE for the entry's K and PRE,
// dynamic shared memory =
// max(t_cap * (MAS_TILE + 1), (MAS_BT + 1) * MAS_BT) * 4 bytes with t_cap >=
// every item's t.
// Host guarantees: 1 <= t <= s, t <= t_max, s <= s_max, t_cap * s_max < 2^31.
#define MAS_TILE 8                      // frames per shared-memory tile
#define MAS_W (MAS_TILE + 1)             // tile row: the previous frame, then MAS_TILE frames
#define MAS_BT 64                        // frames per backtrack window
#define MAS_BT_BATCH 8                   // window loads each thread keeps in flight
#define MAS_NONE 0x7fffffff

// PRE: tile values each thread stages (rows row0 + j * rstep, j < PRE; PRE *
// blockDim / MAS_TILE >= t); K: text positions each thread computes (x = tid +
// k * blockDim, k < K; K * blockDim >= t). Both are compile-time so that the
// staging registers stay registers; the host picks the smallest instance.
//
// No __restrict__ on the buffers other threads write (the matrix, the tile,
// the shared words): a restrict pointer lets the compiler assume nothing
// else changes them, and move loads across the barriers.
template <int PRE, int K>
__device__ __forceinline__ void mas_impl(float* value, const int* __restrict__ lens, int* __restrict__ path,
                                         int* __restrict__ status, const int t_max, const int s_max, float* tile,
                                         volatile int* sh) {
    volatile int& first_bad = sh[0];
    volatile int& bt_x = sh[1];  // backtrack position, handed from thread 0 to the block
    volatile int& bt_y = sh[2];
    const float NEG = __int_as_float(0xff800000);  // -inf
    const float POS = __int_as_float(0x7f800000);  // +inf
    const int b = blockIdx.x;
    const int t = lens[2 * b];
    const int s = lens[2 * b + 1];
    float* v = value + (long long)b * t_max * s_max;
    int* p = path + (long long)b * s_max;
    const int tid = threadIdx.x;
    const int nt = blockDim.x;
    // Staging: thread -> rows row0 + j * rstep (j < PRE) of tile column
    // `col`, MAS_TILE neighbouring threads per row segment (coalesced).
    const int col = tid % MAS_TILE;
    const int row0 = tid / MAS_TILE;
    const int rstep = nt / MAS_TILE;
    int bad = MAS_NONE;

    if (tid == 0) first_bad = MAS_NONE;
    for (int y = s + tid; y < s_max; y += nt) p[y] = -1;
    for (int x = tid; x < t; x += nt) tile[x * MAS_W] = NEG;  // frame -1

    // The next tile's L values, loaded while the current tile is computed so
    // that global latency hides behind MAS_TILE frames of work.
    float pre[PRE];
    {
        const int w0 = (s < MAS_TILE) ? s : MAS_TILE;
#pragma unroll
        for (int j = 0; j < PRE; ++j) {
            const int x = row0 + j * rstep;
            if (col < w0 && x < t) pre[j] = v[x * s_max + col];
        }
    }
    // Q[x][y - 1] of this thread's own rows (x = tid + k * nt).
    float last[K];
#pragma unroll
    for (int k = 0; k < K; ++k) last[k] = NEG;

    for (int y0 = 0; y0 < s; y0 += MAS_TILE) {
        const int w = (s - y0 < MAS_TILE) ? (s - y0) : MAS_TILE;
#pragma unroll
        for (int j = 0; j < PRE; ++j) {
            const int x = row0 + j * rstep;
            if (col < w && x < t) {
                const float l = pre[j];
                const int k = x * s_max + y0 + col;
                if (!(l < POS) && k < bad) bad = k;  // NaN or +inf
                tile[x * MAS_W + 1 + col] = l;
            }
        }
        __syncthreads();
        const int y1 = y0 + MAS_TILE;
        if (y1 < s) {
            const int w1 = (s - y1 < MAS_TILE) ? (s - y1) : MAS_TILE;
#pragma unroll
            for (int j = 0; j < PRE; ++j) {
                const int x = row0 + j * rstep;
                if (col < w1 && x < t) pre[j] = v[x * s_max + y1 + col];
            }
        }
        for (int c = 0; c < w; ++c) {
            const int y = y0 + c;
#pragma unroll
            for (int k = 0; k < K; ++k) {
                const int x = tid + k * nt;
                if (x < t) {
                    float q = NEG;
                    if (x <= y && t - 1 - x <= s - 1 - y) {
                        const float stay = last[k];
                        const float diag = (x == 0) ? (y == 0 ? 0.0f : NEG) : tile[(x - 1) * MAS_W + c];
                        const float m = (diag > stay) ? diag : stay;
                        q = __fadd_rn(tile[x * MAS_W + c + 1], m);
                    }
                    tile[x * MAS_W + c + 1] = q;
                    last[k] = q;
                }
            }
            __syncthreads();
        }
#pragma unroll
        for (int j = 0; j < PRE; ++j) {
            const int x = row0 + j * rstep;
            if (col < w && x < t) v[x * s_max + y0 + col] = tile[x * MAS_W + 1 + col];
        }
        // Carry the tile's last frame to column 0 for the next tile's diagonal
        // (column w is only read before the barrier below).
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const int x = tid + k * nt;
            if (x < t) tile[x * MAS_W] = tile[x * MAS_W + w];
        }
        __syncthreads();
    }

    if (bad != MAS_NONE) atomicMin((int*)&first_bad, bad);
    if (tid == 0) {
        bt_x = t - 1;
        bt_y = s - 1;
    }
    __syncthreads();
    if (tid == 0) status[b] = first_bad;

    // Backtrack from (t - 1, s - 1), MAS_BT frames at a time. The walk reads
    // Q[x'][y'-1] and Q[x'-1][y'-1] and moves down at most one row per frame,
    // so from (x, y) the next f = min(MAS_BT, y + 1) frames read only rows
    // x - f .. x of columns y - f .. y - 1: the block stages that window in
    // shared memory (threads along frames, coalesced; MAS_BT_BATCH loads in
    // flight per thread), then one thread walks it. The forced step at
    // x == y keeps x <= y, so x == 0 at y == 0 and column -1 is never read.
    float* win = tile;  // [MAS_BT + 1][MAS_BT]: win[i * MAS_BT + k] = Q[x - i][y - 1 - k]
    const int wk = tid % MAS_BT;
    const int wi0 = tid / MAS_BT;
    const int wstep = (nt >= MAS_BT) ? nt / MAS_BT : 1;  // blockDim >= MAS_BT (host guarantees)
    for (;;) {
        const int x = bt_x;
        const int y = bt_y;
        if (y < 0) break;  // uniform: every thread read the same bt_y after the barrier
        const int f = (y + 1 < MAS_BT) ? (y + 1) : MAS_BT;
        const int yy = y - 1 - wk;
        for (int i0 = wi0; i0 <= f; i0 += MAS_BT_BATCH * wstep) {
            float q[MAS_BT_BATCH];
#pragma unroll
            for (int u = 0; u < MAS_BT_BATCH; ++u) {
                const int i = i0 + u * wstep;
                if (i <= f && wk < f && x - i >= 0 && yy >= 0) q[u] = v[(x - i) * s_max + yy];
            }
#pragma unroll
            for (int u = 0; u < MAS_BT_BATCH; ++u) {
                const int i = i0 + u * wstep;
                if (i <= f && wk < f && x - i >= 0 && yy >= 0) win[i * MAS_BT + wk] = q[u];
            }
        }
        __syncthreads();
        if (tid == 0) {
            int xc = x;
            for (int yc = y; yc > y - f; --yc) {
                p[yc] = xc;
                // x - xc <= y - yc < f, so both rows are in the window.
                if (xc != 0 && (xc == yc || win[(x - xc) * MAS_BT + (y - yc)] < win[(x - xc + 1) * MAS_BT + (y - yc)])) {
                    --xc;
                }
            }
            bt_x = xc;
            bt_y = y - f;
        }
        __syncthreads();
    }
}

#define MAS_ENTRY(NAME, PRE, K)                                                                          \
    extern "C" __global__ void __launch_bounds__(1024)                                                   \
        NAME(float* value,                 /* [b, t_max, s_max]: L in, Q out */                          \
             const int* __restrict__ lens, /* [b, 2]: (t, s) */                                          \
             int* __restrict__ path,       /* [b, s_max]: text index per frame, -1 in padding */         \
             int* __restrict__ status,     /* [b]: first NaN/+inf as x * s_max + y, or MAS_NONE */       \
             const int t_max, const int s_max) {                                                         \
        extern __shared__ float tile[]; /* [t_cap][MAS_W], later the backtrack window */                \
        __shared__ int sh[3];                                                                            \
        mas_impl<PRE, K>(value, lens, path, status, t_max, s_max, tile, sh);                             \
    }

// mas_pN: PRE = N. One text position per thread up to PRE = 8 (t <= blockDim),
// two at PRE = 16 (t <= 2 * blockDim).
MAS_ENTRY(mas_p1, 1, 1)
MAS_ENTRY(mas_p2, 2, 1)
MAS_ENTRY(mas_p4, 4, 1)
MAS_ENTRY(mas_p8, 8, 1)
MAS_ENTRY(mas_p16, 16, 2)
