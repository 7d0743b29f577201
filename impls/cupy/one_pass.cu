// CuPy/CUDA one-pass decode over a dense cache [B, S, Hkv, D] or a page pool [P, page_size,
// Hkv, D] through the block table (IS_PAGED; a token's row is found per token, so any page size
// works). Grid (Hkv * num_head_blocks, B), or (B, ...) with ITEMS_FIRST: one CTA per (KV head,
// block of its query rows, sequence) streams the sequence once (attend(): tensor_cores.cuh or
// cuda_cores.cuh) and writes the final out and lse. A KV head's query rows are the draft's q_len
// tokens x its GQA group (Rows), q, out and lse rows b * q_len + token. An fp8 cache (KV_DTYPE_ID)
// comes with k_scale_ptr / v_scale_ptr, a float32 scale per KV head (scale_stride 1) or one (0). A
// window attends each token's last ``window`` tokens (int32's largest: all); scores are
// soft-capped at ``softcap`` (log2 units) in SOFTCAP builds.
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
    int scale_stride, int window, float softcap, int q_len) {
    const int pid_kvh = HEADS_AXIS / num_head_blocks;
    const int pid_hb = HEADS_AXIS % num_head_blocks;
    const int pid_b = ITEMS_AXIS;
    const int seq_len = seq_lens_ptr[pid_b];
    const Rows rows{pid_b, pid_hb * BLOCK_H, min(BLOCK_H, q_len * group_size - pid_hb * BLOCK_H),
                    group_size, pid_kvh * group_size, q_len, seq_len, window};
    attend(q_ptr, k_ptr, v_ptr, block_table_ptr, pid_kvh, rows, 0, seq_len, stride_qb, stride_qh,
           stride_kp, stride_kt, stride_kh, stride_btb, page_size, qk_scale, k_scale_ptr,
           v_scale_ptr, scale_stride, softcap);
    store_result(Dest{out_ptr + (long long)pid_b * q_len * stride_ob, nullptr,
                      lse_ptr + (long long)pid_b * q_len * stride_lb, stride_ob, stride_oh,
                      stride_lb, rows});
}
