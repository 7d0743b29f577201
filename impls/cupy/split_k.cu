// CuPy/CUDA split-K decode (flash-decoding) over a balanced plan (impls/plan.py), dense or paged
// (IS_PAGED), the cache in the query's dtype or fp8 (KV_DTYPE_ID; its scales as in one_pass.cu).
// Stage 1, grid (Hkv * num_head_blocks, num_items), swapped with ITEMS_FIRST: the CTA of work item
// pid_i = (sequence, start, end, slot) attends over [start, end); a whole sequence (slot -1)
// writes the final out and lse, a piece of a split one its normalised partial (float) and LSE to
// part_out [slots, q_len x Hq, D] / part_lse [slots, q_len x Hq] (a slot's rows token-major, as
// out's). A KV head's query rows are the draft's q_len tokens x its group (Rows, one_pass.cu).
// Stage 2, one of two ways (FUSED_MERGE): combine_kernel, grid (ceil(q_len x Hq x warps_per_row /
// NUM_WARPS), num_merges), merges each split sequence over its own slots, warps_per_row warps per
// query row (each a share of the slots; one where the rows fill the SMs); or, fused, the
// CTA that finishes a (sequence, row block)'s pieces last merges them itself (merge_if_last), so
// there is no second launch. Weights exp(lse_s - max lse) either way (merge_slots).
#include "decode_common.cuh"
#if TENSOR_CORES
#include "tensor_cores.cuh"
#else
#include "cuda_cores.cuh"
#endif

#define MERGE_VECS (HEAD_DIM / 4)  // float4s per row of a partial (rows are 16-byte multiples)
static_assert(HEAD_DIM % 4 == 0, "the merge reads partials' rows as float4s");
#define MERGE_VECS_PER_LANE ((MERGE_VECS + 31) / 32)
// Slots' rows a lane loads before it adds them: a merge of many pieces is a chain of L2 round trips
// (128 pieces of one row: 16 of them, not 32 as with the compiler's unroll of 4)
#define MERGE_BATCH 8

// One query row's partials over slots [first, last) merged by one warp, unnormalised: lanes over
// slots for the LSE (32 loads in flight, not a chain of them), then lanes over float4s of the head
// dim, each slot's weight broadcast by a shuffle. acc = sum_s exp(lse_s - big) out_s, w_sum =
// sum_s exp(lse_s - big), big the largest LSE (-inf and zeros for no slots, or for slots whose
// partials all saw none of the row's tokens: a share of a short sequence's). Loads are .cg (from
// L2): in the fused merge the partials are other CTAs' stores, which this SM's L1 must not answer.
__device__ __forceinline__ void merge_part(const float* __restrict__ part_out,
                                           const float* __restrict__ part_lse, int first,
                                           int last, long long slot_stride, int lse_stride,
                                           float4 (&acc)[MERGE_VECS_PER_LANE], float& big,
                                           float& w_sum) {
    const int lane = threadIdx.x & 31;
    big = NEG_INF;
    for (int s = first + lane; s < last; s += 32) big = fmaxf(big, __ldcg(part_lse + s * lse_stride));
#pragma unroll
    for (int o = 16; o; o >>= 1) big = fmaxf(big, __shfl_xor_sync(0xffffffffu, big, o));
    w_sum = 0.f;
#pragma unroll
    for (int j = 0; j < MERGE_VECS_PER_LANE; ++j) acc[j] = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int s0 = first; s0 < last; s0 += 32) {
        // lane i's weight is slot s0 + i's (0 past the last slot, and in a share of the combine's
        // whose every partial saw no token of the row: big -inf, no -inf - -inf)
        const float w = s0 + lane < last && big != NEG_INF
                            ? __expf(__ldcg(part_lse + (s0 + lane) * lse_stride) - big) : 0.f;
        w_sum += w;
        const int n = min(32, last - s0);
        for (int i0 = 0; i0 < n; i0 += MERGE_BATCH) {  // i0 + k <= 31: a lane's weight each
            float4 p[MERGE_BATCH][MERGE_VECS_PER_LANE];
#pragma unroll
            for (int k = 0; k < MERGE_BATCH; ++k) {  // past the last slot: its row again, weight 0
                const float4* row = reinterpret_cast<const float4*>(
                    part_out + (long long)(s0 + min(i0 + k, n - 1)) * slot_stride);
#pragma unroll
                for (int j = 0; j < MERGE_VECS_PER_LANE; ++j) {
                    const int c = lane + 32 * j;
                    p[k][j] = c < MERGE_VECS ? __ldcg(row + c) : make_float4(0.f, 0.f, 0.f, 0.f);
                }
            }
#pragma unroll
            for (int k = 0; k < MERGE_BATCH; ++k) {
                const float w_k = __shfl_sync(0xffffffffu, w, i0 + k);
#pragma unroll
                for (int j = 0; j < MERGE_VECS_PER_LANE; ++j) {
                    acc[j].x += w_k * p[k][j].x, acc[j].y += w_k * p[k][j].y;
                    acc[j].z += w_k * p[k][j].z, acc[j].w += w_k * p[k][j].w;
                }
            }
        }
    }
#pragma unroll
    for (int o = 16; o; o >>= 1) w_sum += __shfl_xor_sync(0xffffffffu, w_sum, o);
}

// A merged row's out (acc / w_sum) and lse (big + log w_sum), by one warp.
__device__ __forceinline__ void store_merged(const float4 (&acc)[MERGE_VECS_PER_LANE], float big,
                                             float w_sum, scalar_t* __restrict__ out,
                                             float* __restrict__ lse) {
    const int lane = threadIdx.x & 31;
    const float inv = 1.f / w_sum;
#pragma unroll
    for (int j = 0; j < MERGE_VECS_PER_LANE; ++j) {
        const int c = lane + 32 * j;
        if (c < MERGE_VECS) {
            store_value(out + 4 * c, acc[j].x * inv);
            store_value(out + 4 * c + 1, acc[j].y * inv);
            store_value(out + 4 * c + 2, acc[j].z * inv);
            store_value(out + 4 * c + 3, acc[j].w * inv);
        }
    }
    if (lane == 0) *lse = big + __logf(w_sum);
}

// One query row merged by one warp (finite in the end: every row sees a token of one of its slots).
__device__ __forceinline__ void merge_slots(const float* __restrict__ part_out,
                                            const float* __restrict__ part_lse, int first,
                                            int last, long long slot_stride, int lse_stride,
                                            scalar_t* __restrict__ out, float* __restrict__ lse) {
    float4 acc[MERGE_VECS_PER_LANE];
    float big, w_sum;
    merge_part(part_out, part_lse, first, last, slot_stride, lse_stride, acc, big, w_sum);
    store_merged(acc, big, w_sum, out, lse);
}

#if FUSED_MERGE
// The fused merge: every CTA of a split sequence's row block counts its partial done; the one that
// counts last merges the block's rows over all the sequence's slots (a warp per row) and resets
// the counter for the next launch. The fence makes each thread's partial stores visible GPU-wide
// before the count (release); the acquire-release add orders the last CTA's loads after the others'.
// part_out, part_lse: slot 0's first row; out, lse: the sequence's first query row.
__device__ __forceinline__ void merge_if_last(const float* part_out, const float* part_lse,
                                              int* counter, int first, int pieces,
                                              int num_q_heads, scalar_t* out, long long stride_ob,
                                              long long stride_oh, float* lse, long long stride_lb,
                                              const Rows& rows) {
    __shared__ int is_last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        int done;
        asm volatile("atom.acq_rel.gpu.global.add.s32 %0, [%1], 1;\n" : "=r"(done) : "l"(counter) : "memory");
        is_last = done == pieces - 1;
        if (is_last) *counter = 0;  // every other piece has counted: nothing else touches it
    }
    __syncthreads();
    if (!is_last) return;
    const int slot_rows = rows.q_len * num_q_heads;
    for (int r = threadIdx.x >> 5; r < rows.n; r += NUM_WARPS) {
        const int row = rows.token(r) * num_q_heads + rows.head(r);  // in a slot's rows
        merge_slots(part_out + (long long)row * HEAD_DIM, part_lse + row, first, first + pieces,
                    (long long)slot_rows * HEAD_DIM, slot_rows,
                    out + rows.token(r) * stride_ob + rows.head(r) * stride_oh,
                    lse + rows.token(r) * stride_lb + rows.head(r));
    }
}
#endif

extern "C" __global__ void __launch_bounds__(NUM_THREADS) split_kernel(
    const scalar_t* __restrict__ q_ptr, const kv_t* __restrict__ k_ptr,
    const kv_t* __restrict__ v_ptr, const int* __restrict__ items_ptr,
    const int* __restrict__ block_table_ptr, scalar_t* __restrict__ out_ptr,
    float* __restrict__ lse_ptr, float* __restrict__ part_out_ptr,
    float* __restrict__ part_lse_ptr, long long stride_qb, long long stride_qh,
    long long stride_kp, long long stride_kt, long long stride_kh, long long stride_btb,
    long long stride_ob, long long stride_oh, long long stride_lb, int page_size,
    int group_size, int num_head_blocks, int num_q_heads, float qk_scale,
    const int* __restrict__ seq_lens_ptr, int* __restrict__ counters_ptr, int chunk, int granule,
    const float* __restrict__ k_scale_ptr, const float* __restrict__ v_scale_ptr, int scale_stride,
    int window, float softcap, int q_len) {
    const int pid_kvh = HEADS_AXIS / num_head_blocks;
    const int pid_hb = HEADS_AXIS % num_head_blocks;
    const int* item = items_ptr + 4 * ITEMS_AXIS;  // (sequence, start, end, partial slot or -1)
    const int pid_b = item[0], start = item[1], end = item[2], slot = item[3];
    const int seq_len = seq_lens_ptr[pid_b];
    const Rows rows{pid_b, pid_hb * BLOCK_H, min(BLOCK_H, q_len * group_size - pid_hb * BLOCK_H),
                    group_size, pid_kvh * group_size, q_len, seq_len, window};
    // the plan starts a windowed sequence's pieces at the step holding the first token's window;
    // a piece past every row's span (a draft's last tokens) leaves its partial empty (lse -inf)
    attend(q_ptr, k_ptr, v_ptr, block_table_ptr, pid_kvh, rows, start, end, stride_qb, stride_qh,
           stride_kp, stride_kt, stride_kh, stride_btb, page_size, qk_scale, k_scale_ptr,
           v_scale_ptr, scale_stride, softcap);
    const long long slot_rows = (long long)q_len * num_q_heads;
    const long long seq_row = (long long)pid_b * q_len;  // the sequence's first query row
    store_result(slot < 0 ? Dest{out_ptr + seq_row * stride_ob, nullptr, lse_ptr + seq_row * stride_lb,
                                 stride_ob, stride_oh, stride_lb, rows}
                          : Dest{nullptr, part_out_ptr + slot * slot_rows * HEAD_DIM,
                                 part_lse_ptr + slot * slot_rows, (long long)num_q_heads * HEAD_DIM,
                                 HEAD_DIM, num_q_heads, rows});
#if FUSED_MERGE
    // the pieces of a split sequence are cut every chunk tokens, in slot order, from where the plan
    // starts its span (impls/plan.py: the granule holding the first token's window start; 0
    // without a window)
    const int span0 = max(0, seq_len - q_len + 1 - window) / granule * granule;
    if (slot >= 0)
        merge_if_last(part_out_ptr, part_lse_ptr,
                      counters_ptr + pid_b * (num_q_heads / group_size * num_head_blocks) + HEADS_AXIS,
                      slot - (start - span0) / chunk, (seq_len - span0 + chunk - 1) / chunk, num_q_heads,
                      out_ptr + seq_row * stride_ob, stride_ob, stride_oh,
                      lse_ptr + seq_row * stride_lb, stride_lb, rows);
#endif
}

// Grid (ceil(q_len x Hq x warps_per_row / NUM_WARPS), num_merges): warps_per_row warps of CTA
// (x, m) merge one query row (token-major, as a slot's rows) of split sequence merge_seqs[m] over
// its slots [indptr[m], indptr[m + 1]), each warp a contiguous share of the slots, then the first
// of them rescales and sums the shares (through shared memory). One warp a row is the plain merge;
// more where the rows alone leave SMs idle (one long sequence: many slots, few rows), so a row's
// slots are that many chains of loads in flight, not one.
extern "C" __global__ void __launch_bounds__(NUM_THREADS) combine_kernel(
    const float* __restrict__ part_out_ptr, const float* __restrict__ part_lse_ptr,
    const int* __restrict__ merge_seqs_ptr, const int* __restrict__ merge_indptr_ptr,
    scalar_t* __restrict__ out_ptr, float* __restrict__ lse_ptr, long long stride_ob,
    long long stride_oh, long long stride_lb, int num_q_heads, int q_len, int warps_per_row) {
    __shared__ float4 shared_acc[NUM_WARPS][MERGE_VECS_PER_LANE * 32];
    __shared__ float shared_big[NUM_WARPS], shared_sum[NUM_WARPS];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int row = (blockIdx.x * NUM_WARPS + warp) / warps_per_row;
    const int share = warp % warps_per_row;
    const int slot_rows = q_len * num_q_heads;
    const bool active = row < slot_rows;
    const int token = row / num_q_heads, head = row % num_q_heads;
    const int first = merge_indptr_ptr[blockIdx.y], last = merge_indptr_ptr[blockIdx.y + 1];
    const int per_warp = (last - first + warps_per_row - 1) / warps_per_row;
    const int lo = min(last, first + share * per_warp), hi = min(last, lo + per_warp);
    float4 acc[MERGE_VECS_PER_LANE];
#pragma unroll
    for (int j = 0; j < MERGE_VECS_PER_LANE; ++j) acc[j] = make_float4(0.f, 0.f, 0.f, 0.f);
    float big = NEG_INF, w_sum = 0.f;
    if (active)
        merge_part(part_out_ptr + (long long)row * HEAD_DIM, part_lse_ptr + row, lo, hi,
                   (long long)slot_rows * HEAD_DIM, slot_rows, acc, big, w_sum);
    if (warps_per_row > 1) {  // uniform across the CTA: every thread reaches the barrier
#pragma unroll
        for (int j = 0; j < MERGE_VECS_PER_LANE; ++j) shared_acc[warp][lane + 32 * j] = acc[j];
        if (lane == 0) shared_big[warp] = big, shared_sum[warp] = w_sum;
        __syncthreads();
        if (share != 0 || !active) return;
        float top = NEG_INF;
        for (int w = 0; w < warps_per_row; ++w) top = fmaxf(top, shared_big[warp + w]);
        w_sum = 0.f;
#pragma unroll
        for (int j = 0; j < MERGE_VECS_PER_LANE; ++j) acc[j] = make_float4(0.f, 0.f, 0.f, 0.f);
        for (int w = 0; w < warps_per_row; ++w) {  // a share with no slots: big -inf, weight 0
            const float scale = shared_sum[warp + w] > 0.f ? __expf(shared_big[warp + w] - top) : 0.f;
            w_sum += scale * shared_sum[warp + w];
#pragma unroll
            for (int j = 0; j < MERGE_VECS_PER_LANE; ++j) {
                const float4 a = shared_acc[warp + w][lane + 32 * j];
                acc[j].x += scale * a.x, acc[j].y += scale * a.y;
                acc[j].z += scale * a.z, acc[j].w += scale * a.w;
            }
        }
        big = top;
    }
    if (!active) return;
    const long long out_row = (long long)merge_seqs_ptr[blockIdx.y] * q_len + token;
    store_merged(acc, big, w_sum, out_ptr + out_row * stride_ob + head * stride_oh,
                 lse_ptr + out_row * stride_lb + head);
}
