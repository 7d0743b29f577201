// Decode attention pieces shared by both of the CuPy backend's inner loops (cuda_cores.cuh and
// tensor_cores.cuh, included after this file by one_pass.cu and split_k.cu): the element types and
// their conversions, where a token's K/V row is, where a CTA's result goes, and the merge of the
// warps' online-softmax states that ends every CTA.
//
// One CTA handles one sequence (pid_b), one KV head (pid_kvh), one block of up to BLOCK_H of the
// query rows that share it (pid_hb; Rows: the draft's q_len tokens x the GQA group, split into
// blocks where there are more), and a token range [start, end). Each warp keeps an online-softmax
// state (running max m_i, sum l_i, accumulator acc) per row over its share of the tokens;
// store_result() merges them.
//
// Compile-time parameters shared by both loops (-D, from _build.pick_launch_config): HEAD_DIM,
// BLOCK_H, DTYPE_ID (the query's and output's: 0 fp16, 1 bf16, 2 fp32), KV_DTYPE_ID (the cache's:
// DTYPE_ID, or 3 fp8 e4m3, 4 fp8 e5m2), IS_PAGED, NUM_WARPS, TENSOR_CORES (which loop),
// ITEMS_FIRST (the grid's axis order), SOFTCAP (scores soft-capped), MULTI_TOKEN (q_len > 1:
// each row masked to its own token's span).
// No CUDA headers: fp16/bf16/fp8 conversions are PTX cvt instructions, so NVRTC and nvcc both
// build it.
#pragma once

#define NUM_THREADS (NUM_WARPS * 32)
// Warps whose online-softmax states merge_warps merges per row: every warp on CUDA cores; on
// tensor cores a warp holds one 16-row tile of the block, so the warps of one token slice
#if TENSOR_CORES
#define STATE_WARPS (NUM_WARPS / (BLOCK_H / 16))
#else
#define STATE_WARPS NUM_WARPS
#endif
// The grid's axes: (head blocks of every KV head, sequences or work items), or with ITEMS_FIRST
// the other way round, so CTAs launched together read different sequences
#if ITEMS_FIRST
#define ITEMS_AXIS blockIdx.x
#define HEADS_AXIS blockIdx.y
#else
#define ITEMS_AXIS blockIdx.y
#define HEADS_AXIS blockIdx.x
#endif
#define LN2 0.6931471805599453f  // log2-domain LSE back to the natural log the spec defines
#define NEG_INF (-__int_as_float(0x7f800000))

#if DTYPE_ID == 2
typedef float scalar_t;
#else
typedef unsigned short scalar_t;  // raw fp16 / bf16 bits
#endif

// An fp8 cache holds fp8(x / scale): its values are converted exactly (every e4m3 and e5m2 value
// is an fp16 and a bf16 value), K's scale folds into the score scale and V's into the output
#define KV_FP8 (KV_DTYPE_ID >= 3)
#if KV_FP8
typedef unsigned char kv_t;  // raw fp8 bits
#if DTYPE_ID == 2
#error "an fp8 cache is read with an fp16 or bf16 query"
#endif
#else
typedef scalar_t kv_t;
#if KV_DTYPE_ID != DTYPE_ID
#error "an unquantised cache has the query's dtype"
#endif
#endif

__device__ __forceinline__ float to_float(scalar_t x) {
#if DTYPE_ID == 0
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x));
    return f;
#elif DTYPE_ID == 1
    return __uint_as_float(((unsigned int)x) << 16);  // bf16 is the top half of a float
#else
    return x;
#endif
}

__device__ __forceinline__ void store_value(float* p, float x) { *p = x; }
#if DTYPE_ID != 2
__device__ __forceinline__ void store_value(scalar_t* p, float x) {
    unsigned short h;
#if DTYPE_ID == 0
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
#else
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(x));
#endif
    *p = h;
}
#endif

#if KV_FP8
// Four fp8 values (a 32-bit word, the first in the low byte) -> two f16x2 registers, lo from
// bytes 0-1 and hi from bytes 2-3 (the lower byte in the lower half). cvt from fp8 needs sm_89.
__device__ __forceinline__ void fp8x4_to_f16x2(unsigned w, unsigned& lo, unsigned& hi) {
    asm("{\n .reg .b16 a, b;\n mov.b32 {a, b}, %2;\n"
#if KV_DTYPE_ID == 3
        " cvt.rn.f16x2.e4m3x2 %0, a;\n cvt.rn.f16x2.e4m3x2 %1, b;\n"
#else
        " cvt.rn.f16x2.e5m2x2 %0, a;\n cvt.rn.f16x2.e5m2x2 %1, b;\n"
#endif
        "}\n" : "=r"(lo), "=r"(hi) : "r"(w));
}

// One f16x2 register -> two floats (lo from the low half)
__device__ __forceinline__ void f16x2_to_floats(unsigned x, float& lo, float& hi) {
    asm("{\n .reg .b16 a, b;\n mov.b32 {a, b}, %2;\n cvt.f32.f16 %0, a;\n cvt.f32.f16 %1, b;\n}\n"
        : "=f"(lo), "=f"(hi) : "r"(x));
}
#endif

// A score s (log2 units) soft-capped at cap (log2 units too): cap * tanh(s / cap), tanh by the
// hardware's tanh.approx.f32 (one MUFU instruction, relative error 2^-11: what the spec's
// tolerance allows, specs/tolerance.py, and what the vendor kernels use); SOFTCAP 0 builds leave
// s as it is
__device__ __forceinline__ float soft_cap(float s, float cap) {
#if SOFTCAP
    float t;
    asm("tanh.approx.f32 %0, %1;" : "=f"(t) : "f"(s / cap));
    return cap * t;
#else
    return s;
#endif
}

// The scale of KV head pid_kvh in an fp8 cache's float32 scales (scale_stride 1: one per KV
// head, 0: one for all); 1 for an unquantised cache, whose scale pointer is a stand-in never read
__device__ __forceinline__ float kv_scale(const float* __restrict__ scale_ptr, int pid_kvh, int scale_stride) {
#if KV_FP8
    return scale_ptr[pid_kvh * scale_stride];
#else
    return 1.f;
#endif
}

// Element offset of token t's row (head 0) in the K/V tensors [page, row, Hkv, D]: paged ->
// (block_table[b, t / page_size], t % page_size); dense (a sequence is one page) -> (b, t).
__device__ __forceinline__ long long kv_row_offset(int pid_b, int t, const int* __restrict__ block_table_ptr,
                                                   long long stride_btb, int page_size,
                                                   long long stride_kp, long long stride_kt) {
#if IS_PAGED
    // page_size is a power of two in practice (16): a shift and a mask instead of a division
    const bool pow2 = (page_size & (page_size - 1)) == 0;
    const int shift = __ffs(page_size) - 1;
    const int page_idx = pow2 ? t >> shift : t / page_size;
    const int row = pow2 ? t & (page_size - 1) : t - page_idx * page_size;
    const int page = block_table_ptr[pid_b * stride_btb + page_idx];
    return (long long)page * stride_kp + (long long)row * stride_kt;
#else
    return (long long)pid_b * stride_kp + (long long)t * stride_kt;
#endif
}

// The CTA's query rows: rows row0 .. row0 + n - 1 of its KV head's q_len x group_size rows, row r being
// token r / group_size of sequence b's draft and query head r % group_size of the KV head's group (with
// q_len 1, a block of the group's heads). Token i of a sequence of length L sees the cache up to
// L - q_len + i, and with a window only the window's last tokens of that (the spec's query_span).
struct Rows {
    int b, row0, n, group_size, kv_head0, q_len, seq_len, window;
    __device__ __forceinline__ int token(int r) const { return (row0 + r) / group_size; }
    __device__ __forceinline__ int head(int r) const { return kv_head0 + (row0 + r) % group_size; }
    // past row r's last visible token, and its first (window: int32's largest without one)
    __device__ __forceinline__ int end(int r) const { return seq_len - q_len + token(r) + 1; }
    __device__ __forceinline__ int first(int r) const { return max(0, end(r) - window); }
    __device__ __forceinline__ long long q_offset(int r, long long stride_qb, long long stride_qh) const {
        return ((long long)b * q_len + token(r)) * stride_qb + head(r) * stride_qh;
    }
};

// Where a CTA's results go: the final out (input dtype) from sequence b's first query row, or, for
// a piece of a split sequence, a float32 partial from its slot's first row (part_out set; the
// choice is the same for the whole CTA). Strides between query tokens and heads, in elements of
// the one written; lse's heads are contiguous.
struct Dest {
    scalar_t* out;
    float* part_out;
    float* lse;
    long long stride_ot, stride_oh, stride_lt;
    Rows rows;
    // element d of query token ``token``'s head ``head`` (the row's, from Rows::token and ::head)
    __device__ __forceinline__ void store(int token, int head, int d, float o) const {
        const long long off = token * stride_ot + head * stride_oh + d;
        if (part_out) store_value(part_out + off, o);
        else store_value(out + off, o);
    }
    __device__ __forceinline__ void store_lse(int r, float x) const {
        lse[rows.token(r) * stride_lt + rows.head(r)] = x;
    }
};

// The warps' states merged, O = sum_w exp2(m_w - M) acc_w / sum_w exp2(m_w - M) l_w, normalised,
// stored to ``dest`` (out and one LSE per row); a range that held no token stores 0 and -inf.
// sm_m, sm_l: [STATE_WARPS][BLOCK_H]; sm_acc: [STATE_WARPS][BLOCK_H][HEAD_DIM], in shared memory.
// A warp a row: the row's weights, LSE and out position once, then its elements, a lane's every
// 32nd (coalesced stores). One loop over every element of the CTA's rows recomputed them for
// each (the max, the exponentials, a log, a division by the group): 38 % of what the split
// kernel issued on heldout:481.20 (results/nvidia-h200/2026-11-29-cupy-merge/).
__device__ __forceinline__ void merge_warps(const float* sm_m, const float* sm_l, const float* sm_acc,
                                            const Dest& dest) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int h = warp; h < dest.rows.n; h += NUM_WARPS) {
        float big = NEG_INF;
#pragma unroll
        for (int w = 0; w < STATE_WARPS; ++w) big = fmaxf(big, sm_m[w * BLOCK_H + h]);
        float weight[STATE_WARPS] = {}, sum_l = 0.f;
        if (big != NEG_INF) {
#pragma unroll
            for (int w = 0; w < STATE_WARPS; ++w) {
                weight[w] = exp2f(sm_m[w * BLOCK_H + h] - big);  // a warp that saw nothing: 0
                sum_l += weight[w] * sm_l[w * BLOCK_H + h];
            }
        }
        const float inv = big != NEG_INF ? 1.f / sum_l : 0.f;  // an empty row: out 0
        const int token = dest.rows.token(h), head = dest.rows.head(h);
        for (int d = lane; d < HEAD_DIM; d += 32) {
            float sum_o = 0.f;
#pragma unroll
            for (int w = 0; w < STATE_WARPS; ++w)
                sum_o += weight[w] * sm_acc[(w * BLOCK_H + h) * HEAD_DIM + d];
            dest.store(token, head, d, big != NEG_INF ? sum_o * inv : 0.f);
        }
        if (lane == 0) dest.store_lse(h, big == NEG_INF ? NEG_INF : (big + log2f(sum_l)) * LN2);
    }
}
