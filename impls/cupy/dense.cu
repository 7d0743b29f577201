// CuPy/CUDA dense decode: one pass over a dense KV cache [B, S, Hkv, D].
// Grid (Hkv * chunks, B): one CTA per (KV head, chunk of its query heads, sequence) streams the
// whole sequence once (decode_common.cuh: attend) and writes the final out and lse.
#include "decode_common.cuh"

extern "C" __global__ void __launch_bounds__(NUM_THREADS) decode_dense_kernel(
    const scalar_t* __restrict__ q_ptr, const scalar_t* __restrict__ k_ptr,
    const scalar_t* __restrict__ v_ptr, const int* __restrict__ seq_lens_ptr,
    scalar_t* __restrict__ out_ptr, float* __restrict__ lse_ptr,
    long long stride_qb, long long stride_qh, long long stride_kb, long long stride_kt,
    long long stride_kh, long long stride_ob, long long stride_oh, long long stride_lb,
    int group_size, int num_chunks, float qk_scale) {
    const int pid_kvh = blockIdx.x / num_chunks;
    const int pid_chunk = blockIdx.x % num_chunks;
    const int pid_b = blockIdx.y;
    const int head0 = pid_kvh * group_size + pid_chunk * GROUP;
    const int n_heads = min(GROUP, group_size - pid_chunk * GROUP);
    attend<scalar_t>(q_ptr, k_ptr, v_ptr, seq_lens_ptr /* no block table */, pid_b, pid_kvh, head0,
                     n_heads, 0, seq_lens_ptr[pid_b], stride_qb, stride_qh, stride_kb, stride_kt,
                     stride_kh, 0, 1, qk_scale, out_ptr + pid_b * stride_ob + head0 * stride_oh,
                     stride_oh, lse_ptr + pid_b * stride_lb + head0, 1);
}
