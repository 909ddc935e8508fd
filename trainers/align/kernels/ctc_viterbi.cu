// CTC Viterbi forced alignment: one thread block per batch item, threads along
// the extended states (blank, l0, blank, l1, ..., blank; n = 2L + 1), a loop
// over frames with a barrier between frames. The state scores of the previous
// and current frame live in shared memory (double buffer); one backpointer
// byte per (frame, state) goes to a device buffer, and one thread follows them
// back from the end. The log-probabilities are only read.
//
// Arithmetic contract (the CPU oracle in src/viterbi.rs does the same):
//   y == 0: best = (j <= 1) ? 0 : -inf, k = 0
//   y >  0: best = a[j], k = 0;  a[j-1] > best -> (a[j-1], 1);
//           skip(j) && a[j-2] > best -> (a[j-2], 2)
//           skip(j) = j odd && j >= 3 && ext[j] != ext[j-2]
//   alpha[y][j] = lp[y][ext[j]] + best      (one f32 add, --fmad=false)
//   end = (n > 1 && alpha[n-1] > alpha[n-2]) ? n-1 : max(n-2, 0)
//
// Launch: grid = batch, block = a multiple of 32 (<= 1024; threads stride over
// states), dynamic shared memory = n_cap * 12 bytes (two f32 score columns and
// the int32 extended labels), n_cap >= every item's n.
// Host guarantees: 1 <= frames <= f_max, labels valid and != blank, frames
// enough for the labels, n <= n_cap.
extern "C" __global__ void __launch_bounds__(1024)
    ctc_viterbi(const float* __restrict__ lp,    // [b, f_max, c]
                const int* __restrict__ labels,  // [b, l_max]
                const int* __restrict__ lens,    // [b, 2]: (frames, labels)
                unsigned char* bp,               // [b, f_max, n_cap] (no __restrict__: read back by thread 0)
                int* __restrict__ states,        // [b, f_max]: state per frame, -1 in padding
                float* __restrict__ score,       // [b]
                const int f_max, const int c, const int l_max, const int n_cap, const int blank) {
    extern __shared__ float smem[];
    float* a0 = smem;
    float* a1 = smem + n_cap;
    int* ext = (int*)(smem + 2 * n_cap);
    const float NEG = __int_as_float(0xff800000);  // -inf
    const int b = blockIdx.x;
    const int f = lens[2 * b];
    const int n = 2 * lens[2 * b + 1] + 1;
    const float* lpb = lp + (long long)b * f_max * c;
    unsigned char* bpb = bp + (long long)b * f_max * n_cap;
    int* st = states + (long long)b * f_max;
    const int tid = threadIdx.x;
    const int nt = blockDim.x;

    for (int j = tid; j < n; j += nt) ext[j] = (j & 1) ? labels[(long long)b * l_max + (j >> 1)] : blank;
    for (int y = f + tid; y < f_max; y += nt) st[y] = -1;
    __syncthreads();

    for (int y = 0; y < f; ++y) {
        const float* prev = (y & 1) ? a0 : a1;
        float* cur = (y & 1) ? a1 : a0;
        const float* row = lpb + (long long)y * c;
        for (int j = tid; j < n; j += nt) {
            const int lab = ext[j];
            float best;
            unsigned char k = 0;
            if (y == 0) {
                best = (j <= 1) ? 0.0f : NEG;
            } else {
                best = prev[j];
                if (j >= 1 && prev[j - 1] > best) {
                    best = prev[j - 1];
                    k = 1;
                }
                if ((j & 1) && j >= 3 && lab != ext[j - 2] && prev[j - 2] > best) {
                    best = prev[j - 2];
                    k = 2;
                }
            }
            cur[j] = __fadd_rn(row[lab], best);
            bpb[(long long)y * n_cap + j] = k;
        }
        __syncthreads();
    }

    if (tid == 0) {
        const float* last = ((f - 1) & 1) ? a1 : a0;
        int j = (n > 1 && last[n - 1] > last[n - 2]) ? n - 1 : (n > 1 ? n - 2 : 0);
        score[b] = last[j];
        for (int y = f - 1; y >= 0; --y) {
            st[y] = j;
            if (y > 0) j -= bpb[(long long)y * n_cap + j];
        }
    }
}
