// CuPy/CUDA one-pass decode over a dense cache [B, S, Hkv, D] or a page pool [P, page_size,
// Hkv, D] through the block table (IS_PAGED; a token's row is found per token, so any page size
// works). Grid (Hkv * num_head_blocks, B), or (B, ...) with ITEMS_FIRST: one CTA per (KV head,
// block of its query heads, sequence) streams the whole sequence once (attend(): tensor_cores.cuh
// or cuda_cores.cuh) and writes the final out and lse. An fp8 cache (KV_DTYPE_ID) comes with
// k_scale_ptr / v_scale_ptr, a float32 scale per KV head (scale_stride 1) or one (0). A window
// attends each sequence's last ``window`` tokens (int32's largest: all); scores are soft-capped
// at ``softcap`` (log2 units) in SOFTCAP builds.
#include "decode_common.cuh"
#if TENSOR_CORES
#include "tensor_cores.cuh"
#else
#include "cuda_cores.cuh"
#endif

extern "C" __global__ void __launch_bounds__(NUM_THREADS) decode_kernel(
    const scalar_t* __restrict__ q_ptr, const kv_t* __restrict__ k_ptr,
    const kv_t* __restrict__ v_ptr, const int* __restrict__ seq_lens_ptr,
    const int* __restrict__ block_table_ptr, scalar_t* __restrict__ out_ptr,
    float* __restrict__ lse_ptr, long long stride_qb, long long stride_qh, long long stride_kp,
    long long stride_kt, long long stride_kh, long long stride_btb, long long stride_ob,
    long long stride_oh, long long stride_lb, int page_size, int group_size, int num_head_blocks,
    float qk_scale, const float* __restrict__ k_scale_ptr, const float* __restrict__ v_scale_ptr,
    int scale_stride, int window, float softcap) {
    const int pid_kvh = HEADS_AXIS / num_head_blocks;
    const int pid_hb = HEADS_AXIS % num_head_blocks;
    const int pid_b = ITEMS_AXIS;
    const int head0 = pid_kvh * group_size + pid_hb * BLOCK_H;
    const int n_heads = min(BLOCK_H, group_size - pid_hb * BLOCK_H);
    const int seq_len = seq_lens_ptr[pid_b];
    attend(q_ptr, k_ptr, v_ptr, block_table_ptr, pid_b, pid_kvh, head0, n_heads, 0, seq_len,
           stride_qb, stride_qh, stride_kp, stride_kt, stride_kh, stride_btb, page_size, qk_scale,
           k_scale_ptr, v_scale_ptr, scale_stride, max(0, seq_len - window), softcap);
    store_result(Dest{out_ptr + pid_b * stride_ob + head0 * stride_oh, nullptr, stride_oh,
                      lse_ptr + pid_b * stride_lb + head0}, n_heads);
}
