// Read-only kernels for the harness's bandwidth probes (read_probe.py): 16-byte loads, UNROLL of
// each thread's in flight before any is used (a thread's loads overlap in DRAM instead of one
// waiting for the last), each word folded into a wrapping sum so no load is dead code.
// Compile-time: THREADS (a CTA's), UNROLL; layout_read_kernel: IS_PAGED.

__device__ __forceinline__ unsigned fold(uint4 a) { return a.x + a.y + a.z + a.w; }

// A CTA's sum, a warp's at a time into its slot: partial[blockIdx.x * (THREADS / 32) + warp]
__device__ __forceinline__ void store_sum(unsigned acc, unsigned* __restrict__ partial) {
    acc = __reduce_add_sync(0xffffffffu, acc);
    if ((threadIdx.x & 31) == 0) partial[blockIdx.x * (THREADS / 32) + threadIdx.x / 32] = acc;
}

// x's vectors [blockIdx.x * block, + block) of n: thread t reads t, t + THREADS, ...
extern "C" __global__ void __launch_bounds__(THREADS) read_kernel(
    const uint4* __restrict__ x, unsigned* __restrict__ partial, long long n, int block) {
    const long long first = (long long)blockIdx.x * block;
    const int count = (int)min((long long)block, n - first);
    unsigned acc = 0;
    for (int base = threadIdx.x; base < count; base += THREADS * UNROLL) {
        uint4 r[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const int i = base + u * THREADS;
            r[u] = i < count ? __ldcs(x + first + i) : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) acc += fold(r[u]);
    }
    store_sum(acc, partial);
}

// Work item blockIdx.x (sequence, start, end, slot) of a plan over whole token rows: every K and
// V row of its tokens from the sequence's first attended one (firsts: a window's start), a row
// being one token's KV heads side by side (row_vecs 16-byte vectors, contiguous in both
// layouts), read where the layout keeps it: dense at b * stride_kp + t * stride_kt, paged
// through the block table (strides in vectors). Vector i of the item is column i % row_vecs of
// its token i / row_vecs: a warp's loads cover whole rows.
extern "C" __global__ void __launch_bounds__(THREADS) layout_read_kernel(
    const uint4* __restrict__ k, const uint4* __restrict__ v, const int* __restrict__ items,
    const int* __restrict__ block_table, const int* __restrict__ firsts,
    unsigned* __restrict__ partial, long long stride_kp, long long stride_kt,
    long long stride_btb, int page_size, int row_vecs) {
    const int b = items[4 * blockIdx.x], end = items[4 * blockIdx.x + 2];
    const int first = max(items[4 * blockIdx.x + 1], firsts[b]);
    const int count = max(end - first, 0) * row_vecs;
    // a thread's (token, column), advanced by THREADS vectors a load without a division
    const int step_t = THREADS / row_vecs, step_c = THREADS % row_vecs;
    int t = first + threadIdx.x / row_vecs, c = threadIdx.x % row_vecs;
    unsigned acc = 0;
    for (int base = threadIdx.x; base < count; base += THREADS * UNROLL) {
        uint4 kr[UNROLL], vr[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            kr[u] = vr[u] = make_uint4(0, 0, 0, 0);
            if (base + u * THREADS < count) {
#if IS_PAGED
                const long long page = block_table[b * stride_btb + t / page_size];
                const long long off = page * stride_kp + (long long)(t % page_size) * stride_kt + c;
#else
                const long long off = (long long)b * stride_kp + (long long)t * stride_kt + c;
#endif
                kr[u] = __ldcs(k + off);
                vr[u] = __ldcs(v + off);
            }
            t += step_t;
            c += step_c;
            if (c >= row_vecs) {
                c -= row_vecs;
                ++t;
            }
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) acc += fold(kr[u]) + fold(vr[u]);
    }
    store_sum(acc, partial);
}
