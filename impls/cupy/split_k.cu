// CuPy/CUDA split-K decode (flash-decoding), dense or paged (IS_PAGED).
// Stage 1, grid (Hkv * num_head_blocks, B, num_splits): split pid_s of a sequence attends over
// tokens [pid_s * tokens_per_split, (pid_s + 1) * tokens_per_split) and writes its normalised
// partial output (float) and LSE to part_out [B, Hq, num_splits, D] / part_lse [B, Hq,
// num_splits]; an empty split writes 0 and -inf.
// Stage 2, grid (Hq, B): combine_kernel merges the splits, weights exp(lse_s - max lse).
#include "decode_common.cuh"

extern "C" __global__ void __launch_bounds__(NUM_THREADS) split_kernel(
    const scalar_t* __restrict__ q_ptr, const scalar_t* __restrict__ k_ptr,
    const scalar_t* __restrict__ v_ptr, const int* __restrict__ seq_lens_ptr,
    const int* __restrict__ block_table_ptr, float* __restrict__ part_out_ptr,
    float* __restrict__ part_lse_ptr, long long stride_qb, long long stride_qh,
    long long stride_kp, long long stride_kt, long long stride_kh, long long stride_btb,
    int page_size, int group_size, int num_head_blocks, int num_q_heads, int tokens_per_split,
    float qk_scale) {
    const int pid_kvh = blockIdx.x / num_head_blocks;
    const int pid_hb = blockIdx.x % num_head_blocks;
    const int pid_b = blockIdx.y;
    const int pid_s = blockIdx.z;
    const int num_splits = gridDim.z;
    const int head0 = pid_kvh * group_size + pid_hb * BLOCK_H;
    const int n_heads = min(BLOCK_H, group_size - pid_hb * BLOCK_H);
    const int start = pid_s * tokens_per_split;
    const int end = min(start + tokens_per_split, seq_lens_ptr[pid_b]);
    const long long row0 = ((long long)pid_b * num_q_heads + head0) * num_splits + pid_s;
    attend<float>(q_ptr, k_ptr, v_ptr, block_table_ptr, pid_b, pid_kvh, head0, n_heads, start,
                  end, stride_qb, stride_qh, stride_kp, stride_kt, stride_kh, stride_btb,
                  page_size, qk_scale, part_out_ptr + row0 * HEAD_DIM,
                  (long long)num_splits * HEAD_DIM, part_lse_ptr + row0, num_splits);
}

extern "C" __global__ void __launch_bounds__(NUM_THREADS) combine_kernel(
    const float* __restrict__ part_out_ptr, const float* __restrict__ part_lse_ptr,
    scalar_t* __restrict__ out_ptr, float* __restrict__ lse_ptr, int num_splits,
    long long stride_ob, long long stride_oh, long long stride_lb) {
    const int pid_h = blockIdx.x;
    const int pid_b = blockIdx.y;
    const long long row = (long long)pid_b * gridDim.x + pid_h;
    const float* lse_s = part_lse_ptr + row * num_splits;
    const float* part = part_out_ptr + row * num_splits * HEAD_DIM;
    float big = NEG_INF;
    for (int s = 0; s < num_splits; ++s) big = fmaxf(big, lse_s[s]);  // finite: split 0 holds token 0
    float w_sum = 0.f;
    for (int s = 0; s < num_splits; ++s) w_sum += __expf(lse_s[s] - big);  // empty split: 0
    for (int d = threadIdx.x; d < HEAD_DIM; d += NUM_THREADS) {
        float o = 0.f;
        for (int s = 0; s < num_splits; ++s) o += __expf(lse_s[s] - big) * part[s * HEAD_DIM + d];
        store_value(out_ptr + pid_b * stride_ob + pid_h * stride_oh + d, o / w_sum);
    }
    if (threadIdx.x == 0) lse_ptr[pid_b * stride_lb + pid_h] = big + __logf(w_sum);
}
