// The CUDA-core inner loop (TENSOR_CORES=0): fp32 FMAs on register-resident K/V vectors, for
// float32, head dims that are not a multiple of 16, and where it beats the tensor-core loop.
//
// The CTA's threads are split into ROW_GROUPS "row groups" of TPR threads; a row group reads
// whole K/V rows, each of its threads VPT 16-byte vectors (VEC elements each) per row, so a row is
// one coalesced segment. Every row group keeps its own online-softmax state for all BLOCK_H heads
// in registers: each K/V load serves the whole head block. Scores are reduced across the row's
// TPR lanes with warp shuffles. At the end the row groups' states are merged, within a warp by
// shuffles, then across warps in shared memory (merge_warps).
//
// Its own compile-time parameters: VEC (cache elements per 16-byte load: 16 fp8, 8 fp16/bf16,
// 4 fp32; the query's matching VEC elements take one or two 16-byte loads), TPR (threads per
// row, a power of two <= 32), VPT (16-byte vectors per thread per row), UNROLL (tokens per row
// group per step: their K and V loads are all issued before the first use), PREFETCH (1: the
// next step's loads are issued before this step's arithmetic, a register double buffer).
#pragma once

#define ROWS_PER_WARP (32 / TPR)
#define ROW_GROUPS (NUM_WARPS * ROWS_PER_WARP)
#define VECS_PER_ROW (HEAD_DIM / VEC)
#define STEP (ROW_GROUPS * UNROLL)  // tokens a CTA consumes per loop step
#define Q_VEC (16 / (int)sizeof(scalar_t))  // query elements per 16-byte load
static_assert(VEC % Q_VEC == 0, "a cache vector's dims are whole query loads");

// 16 bytes of the query's dtype -> Q_VEC floats
__device__ __forceinline__ void unpack(const uint4& raw, float* out) {
#if DTYPE_ID == 2
    out[0] = __uint_as_float(raw.x); out[1] = __uint_as_float(raw.y);
    out[2] = __uint_as_float(raw.z); out[3] = __uint_as_float(raw.w);
#else
    const unsigned int w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        out[2 * i] = to_float((scalar_t)(w[i] & 0xffffu));
        out[2 * i + 1] = to_float((scalar_t)(w[i] >> 16));
    }
#endif
}

// 16 bytes of the cache -> VEC floats
__device__ __forceinline__ void unpack_kv(const uint4& raw, float (&out)[VEC]) {
#if KV_FP8
    const unsigned int w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        unsigned lo, hi;
        fp8x4_to_f16x2(w[i], lo, hi);
        f16x2_to_floats(lo, out[4 * i], out[4 * i + 1]);
        f16x2_to_floats(hi, out[4 * i + 2], out[4 * i + 3]);
    }
#else
    unpack(raw, out);
#endif
}

// Each warp's online-softmax state at the end of attend(), for store_result() to merge.
__shared__ float sm_m[NUM_WARPS][BLOCK_H];
__shared__ float sm_l[NUM_WARPS][BLOCK_H];
__shared__ float sm_acc[NUM_WARPS][BLOCK_H][HEAD_DIM];

// Attention of the CTA's query rows (rows.n <= BLOCK_H) over tokens [start, end), each row over the
// part of them it sees (Rows; the range is cut to what any row sees), scores soft-capped
// (soft_cap): each warp's state left in shared memory (sm_m, sm_l, sm_acc) for store_result(). The destination is
// chosen after the loop, so it holds no registers while the K/V stream runs. An fp8 cache's
// scales (kv_scale): K's folds into qk_scale, V's multiplies the state's accumulator.
__device__ __forceinline__ void attend(
    const scalar_t* __restrict__ q_ptr, const kv_t* __restrict__ k_ptr,
    const kv_t* __restrict__ v_ptr, const int* __restrict__ block_table_ptr,
    int pid_kvh, const Rows& rows, int start, int end,
    long long stride_qb, long long stride_qh, long long stride_kp, long long stride_kt,
    long long stride_kh, long long stride_btb, int page_size, float qk_scale,
    const float* __restrict__ k_scale_ptr, const float* __restrict__ v_scale_ptr, int scale_stride,
    float softcap) {
    qk_scale *= kv_scale(k_scale_ptr, pid_kvh, scale_stride);
    // rows are loaded one by one: the range starts at the first row's window and ends past the
    // last row's token
    start = max(start, rows.first(0));
    end = min(end, rows.end(rows.n - 1));
    const int pid_b = rows.b;
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int lane_in_row = lane % TPR;
    const int rg = warp * ROWS_PER_WARP + lane / TPR;

    float q[BLOCK_H][VPT][VEC];  // pre-scaled by sm_scale * log2(e): scores come out in log2 units
#pragma unroll
    for (int h = 0; h < BLOCK_H; ++h) {
#pragma unroll
        for (int i = 0; i < VPT; ++i) {
            const int j = lane_in_row + i * TPR;
            float tmp[VEC];
            if (h < rows.n && j < VECS_PER_ROW) {
                const scalar_t* q_row = q_ptr + rows.q_offset(h, stride_qb, stride_qh) + j * VEC;
#pragma unroll
                for (int l = 0; l < VEC / Q_VEC; ++l)
                    unpack(*reinterpret_cast<const uint4*>(q_row + l * Q_VEC), tmp + l * Q_VEC);
            } else {
#pragma unroll
                for (int e = 0; e < VEC; ++e) tmp[e] = 0.f;
            }
#pragma unroll
            for (int e = 0; e < VEC; ++e) q[h][i][e] = tmp[e] * qk_scale;
        }
    }

#if MULTI_TOKEN
    int row_first[BLOCK_H], row_end[BLOCK_H];  // each row's span (a padding row: the last row's)
#pragma unroll
    for (int h = 0; h < BLOCK_H; ++h) {
        row_first[h] = rows.first(min(h, rows.n - 1));
        row_end[h] = rows.end(min(h, rows.n - 1));
    }
#endif
    float m_i[BLOCK_H], l_i[BLOCK_H], acc[BLOCK_H][VPT][VEC];
#pragma unroll
    for (int h = 0; h < BLOCK_H; ++h) {
        m_i[h] = NEG_INF;
        l_i[h] = 0.f;
#pragma unroll
        for (int i = 0; i < VPT; ++i)
#pragma unroll
            for (int e = 0; e < VEC; ++e) acc[h][i][e] = 0.f;
    }

    const kv_t* k_head = k_ptr + pid_kvh * stride_kh;
    const kv_t* v_head = v_ptr + pid_kvh * stride_kh;
    // Raw K/V vectors of UNROLL tokens of this row group: step `base` covers tokens
    // [base, base + STEP), row group rg the UNROLL consecutive ones at base + rg * UNROLL.
    auto load_step = [&](int base, uint4 (&k_raw)[UNROLL][VPT], uint4 (&v_raw)[UNROLL][VPT],
                         bool (&valid)[UNROLL]) {
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const int t = base + rg * UNROLL + u;
            valid[u] = t < end;  // tokens past the range are never loaded
            const long long row = valid[u] ? kv_row_offset(pid_b, t, block_table_ptr, stride_btb, page_size, stride_kp, stride_kt) : 0;
#pragma unroll
            for (int i = 0; i < VPT; ++i) {
                const int j = lane_in_row + i * TPR;
                const bool ok = valid[u] && j < VECS_PER_ROW;
                k_raw[u][i] = ok ? *reinterpret_cast<const uint4*>(k_head + row + j * VEC) : make_uint4(0, 0, 0, 0);
                v_raw[u][i] = ok ? *reinterpret_cast<const uint4*>(v_head + row + j * VEC) : make_uint4(0, 0, 0, 0);
            }
        }
    };
    uint4 k_raw[UNROLL][VPT], v_raw[UNROLL][VPT];
    bool valid[UNROLL];
    load_step(start, k_raw, v_raw, valid);
    // The loop bound is the same for every thread of the CTA (shuffles need whole warps).
    for (int base = start; base < end; base += STEP) {
#if PREFETCH
        // issue the next step's loads before this step's arithmetic (register double buffer)
        uint4 k_next[UNROLL][VPT], v_next[UNROLL][VPT];
        bool valid_next[UNROLL];
        load_step(base + STEP, k_next, v_next, valid_next);
#endif
        float s[UNROLL][BLOCK_H];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
            for (int h = 0; h < BLOCK_H; ++h) s[u][h] = 0.f;
#pragma unroll
            for (int i = 0; i < VPT; ++i) {
                float kf[VEC];
                unpack_kv(k_raw[u][i], kf);
#pragma unroll
                for (int h = 0; h < BLOCK_H; ++h)
#pragma unroll
                    for (int e = 0; e < VEC; ++e) s[u][h] += q[h][i][e] * kf[e];
            }
#pragma unroll
            for (int h = 0; h < BLOCK_H; ++h)
#pragma unroll
                for (int off = TPR / 2; off > 0; off >>= 1)
                    s[u][h] += __shfl_xor_sync(0xffffffffu, s[u][h], off);
#if SOFTCAP
#pragma unroll
            for (int h = 0; h < BLOCK_H; ++h) s[u][h] = soft_cap(s[u][h], softcap);
#endif
        }
        float p[UNROLL][BLOCK_H];
#pragma unroll
        for (int h = 0; h < BLOCK_H; ++h) {
            bool seen[UNROLL];  // token u in the range and in row h's span
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
#if MULTI_TOKEN
                const int t = base + rg * UNROLL + u;
                seen[u] = valid[u] && t >= row_first[h] && t < row_end[h];
#else
                seen[u] = valid[u];
#endif
            }
            float m_new = m_i[h];
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) m_new = seen[u] ? fmaxf(m_new, s[u][h]) : m_new;
            // nothing seen yet (all of this step's tokens past the end): keep the state as is
            const float alpha = m_new == NEG_INF ? 1.f : exp2f(m_i[h] - m_new);
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) p[u][h] = seen[u] ? exp2f(s[u][h] - m_new) : 0.f;
            l_i[h] *= alpha;
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) l_i[h] += p[u][h];
#pragma unroll
            for (int i = 0; i < VPT; ++i)
#pragma unroll
                for (int e = 0; e < VEC; ++e) acc[h][i][e] *= alpha;
            m_i[h] = m_new;
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
            for (int i = 0; i < VPT; ++i) {
                float vf[VEC];
                unpack_kv(v_raw[u][i], vf);
#pragma unroll
                for (int h = 0; h < BLOCK_H; ++h)
#pragma unroll
                    for (int e = 0; e < VEC; ++e) acc[h][i][e] += p[u][h] * vf[e];
            }
        }
#if PREFETCH
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            valid[u] = valid_next[u];
#pragma unroll
            for (int i = 0; i < VPT; ++i) {
                k_raw[u][i] = k_next[u][i];
                v_raw[u][i] = v_next[u][i];
            }
        }
#else
        if (base + STEP < end) load_step(base + STEP, k_raw, v_raw, valid);
#endif
    }

    // Merge the row groups of each warp with shuffles (their lanes differ by multiples of TPR),
    // so lanes [0, TPR) hold the warp's state ...
#pragma unroll
    for (int off = TPR; off < 32; off <<= 1) {
#pragma unroll
        for (int h = 0; h < BLOCK_H; ++h) {
            const float m_other = __shfl_xor_sync(0xffffffffu, m_i[h], off);
            const float l_other = __shfl_xor_sync(0xffffffffu, l_i[h], off);
            const float m_new = fmaxf(m_i[h], m_other);
            const float w_self = m_new == NEG_INF ? 0.f : exp2f(m_i[h] - m_new);
            const float w_other = m_new == NEG_INF ? 0.f : exp2f(m_other - m_new);
            l_i[h] = l_i[h] * w_self + l_other * w_other;
#pragma unroll
            for (int i = 0; i < VPT; ++i)
#pragma unroll
                for (int e = 0; e < VEC; ++e)
                    acc[h][i][e] = acc[h][i][e] * w_self + __shfl_xor_sync(0xffffffffu, acc[h][i][e], off) * w_other;
            m_i[h] = m_new;
        }
    }

    // ... and each warp's state goes to shared memory for store_result() to merge
    const float v_scale = kv_scale(v_scale_ptr, pid_kvh, scale_stride);
    if (lane < TPR) {
#pragma unroll
        for (int h = 0; h < BLOCK_H; ++h) {
#pragma unroll
            for (int i = 0; i < VPT; ++i) {
                const int j = lane_in_row + i * TPR;
                if (j < VECS_PER_ROW)
#pragma unroll
                    for (int e = 0; e < VEC; ++e) sm_acc[warp][h][j * VEC + e] = acc[h][i][e] * v_scale;
            }
            if (lane == 0) {
                sm_m[warp][h] = m_i[h];
                sm_l[warp][h] = l_i[h];
            }
        }
    }
    __syncthreads();
}

__device__ __forceinline__ void store_result(const Dest& dest) {
    merge_warps(&sm_m[0][0], &sm_l[0][0], &sm_acc[0][0][0], dest);
}
