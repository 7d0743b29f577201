// CuPy/CUDA split-K decode (flash-decoding) over a balanced plan (impls/plan.py), dense or paged
// (IS_PAGED).
// Stage 1, grid (Hkv * num_head_blocks, num_items), swapped with ITEMS_FIRST: the CTA of work item
// pid_i = (sequence, start, end, slot) attends over [start, end); a whole sequence (slot -1)
// writes the final out and lse, a piece of a split one its normalised partial (float) and LSE to
// part_out [slots, Hq, D] / part_lse [slots, Hq].
// Stage 2, grid (Hq, num_merges): combine_kernel merges each split sequence over its own slots,
// weights exp(lse_s - max lse).
#include "decode_common.cuh"
#if TENSOR_CORES
#include "tensor_cores.cuh"
#else
#include "cuda_cores.cuh"
#endif

extern "C" __global__ void __launch_bounds__(NUM_THREADS) split_kernel(
    const scalar_t* __restrict__ q_ptr, const scalar_t* __restrict__ k_ptr,
    const scalar_t* __restrict__ v_ptr, const int* __restrict__ items_ptr,
    const int* __restrict__ block_table_ptr, scalar_t* __restrict__ out_ptr,
    float* __restrict__ lse_ptr, float* __restrict__ part_out_ptr,
    float* __restrict__ part_lse_ptr, long long stride_qb, long long stride_qh,
    long long stride_kp, long long stride_kt, long long stride_kh, long long stride_btb,
    long long stride_ob, long long stride_oh, long long stride_lb, int page_size,
    int group_size, int num_head_blocks, int num_q_heads, float qk_scale) {
    const int pid_kvh = HEADS_AXIS / num_head_blocks;
    const int pid_hb = HEADS_AXIS % num_head_blocks;
    const int* item = items_ptr + 4 * ITEMS_AXIS;  // (sequence, start, end, partial slot or -1)
    const int pid_b = item[0], start = item[1], end = item[2], slot = item[3];
    const int head0 = pid_kvh * group_size + pid_hb * BLOCK_H;
    const int n_heads = min(BLOCK_H, group_size - pid_hb * BLOCK_H);
    attend(q_ptr, k_ptr, v_ptr, block_table_ptr, pid_b, pid_kvh, head0, n_heads, start, end,
           stride_qb, stride_qh, stride_kp, stride_kt, stride_kh, stride_btb, page_size,
           qk_scale);
    const long long row = (long long)slot * num_q_heads + head0;
    store_result(slot < 0 ? Dest{out_ptr + pid_b * stride_ob + head0 * stride_oh, nullptr,
                                 stride_oh, lse_ptr + pid_b * stride_lb + head0}
                          : Dest{nullptr, part_out_ptr + row * HEAD_DIM, HEAD_DIM,
                                 part_lse_ptr + row},
                 n_heads);
}

extern "C" __global__ void __launch_bounds__(NUM_THREADS) combine_kernel(
    const float* __restrict__ part_out_ptr, const float* __restrict__ part_lse_ptr,
    const int* __restrict__ merge_seqs_ptr, const int* __restrict__ merge_indptr_ptr,
    scalar_t* __restrict__ out_ptr, float* __restrict__ lse_ptr, long long stride_ob,
    long long stride_oh, long long stride_lb) {
    const int pid_h = blockIdx.x;
    const int num_q_heads = gridDim.x;
    const int pid_b = merge_seqs_ptr[blockIdx.y];
    const int first = merge_indptr_ptr[blockIdx.y], last = merge_indptr_ptr[blockIdx.y + 1];
    const float* lse_s = part_lse_ptr + pid_h;  // slot s at lse_s[s * num_q_heads]
    const float* part = part_out_ptr + (long long)pid_h * HEAD_DIM;
    const long long slot_stride = (long long)num_q_heads * HEAD_DIM;
    float big = NEG_INF;
    for (int s = first; s < last; ++s) big = fmaxf(big, lse_s[s * num_q_heads]);  // items are not empty
    float w_sum = 0.f;
    for (int s = first; s < last; ++s) w_sum += __expf(lse_s[s * num_q_heads] - big);
    for (int d = threadIdx.x; d < HEAD_DIM; d += NUM_THREADS) {
        float o = 0.f;
        for (int s = first; s < last; ++s) o += __expf(lse_s[s * num_q_heads] - big) * part[s * slot_stride + d];
        store_value(out_ptr + pid_b * stride_ob + pid_h * stride_oh + d, o / w_sum);
    }
    if (threadIdx.x == 0) lse_ptr[pid_b * stride_lb + pid_h] = big + __logf(w_sum);
}
