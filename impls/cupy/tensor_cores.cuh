// The tensor-core inner loop (TENSOR_CORES=1, fp16/bf16, HEAD_DIM a multiple of 16): the CTA's
// query rows (the GQA group's heads, times the draft's tokens: Rows) are ROW_TILES row tiles of
// the M = 16 rows of mma.sync.m16n8k16 (BLOCK_H = 16 x ROW_TILES, rows past the row block are
// zeros), for S = Q K^T and O += P V alike, fp32 accumulators, fragments read from shared memory
// with ldmatrix. The warps form SLICES slices of ROW_TILES warps, a warp per row tile: a slice
// takes 16 tokens of every tile of BLOCK_N (one k16 step of P V) and streams them into its own
// STAGES-deep ring of shared-memory buffers with cp.async (16 bytes a copy, L2 only; the slice's
// warps share the copies), so HBM keeps streaming while the tensor cores work on the oldest tile,
// and each K/V tile crosses HBM once for all the CTA's rows; rows past the range are zero-filled
// by the copy itself. A slice waits for its own copies only (cp.async.wait_group, then __syncwarp
// or the slice's named barrier): no CTA-wide barrier between the first tile and the merge, so one
// slow slice does not hold up the others' loads.
//
// Each warp keeps its own online-softmax state: the C fragment of S, exponentiated, is already
// the A fragment of P V (no shared-memory round trip). The warps' states are merged at the end
// (merge_warps) in the same shared memory.
//
// An fp8 cache (KV_FP8): the rings hold the tiles' bytes as they are stored; each lane reads the
// fp8 bytes of its B fragments with plain shared loads and converts them to the query's dtype in
// registers (ldmatrix moves 16-bit elements only). The k order of Q K^T is permuted so that a
// lane's K bytes are one word (q_fragment reads Q in the same order), and V's n order so that a
// lane's V bytes of a row are adjacent too, V_GRANULE of them (v_dim says where O's columns go).
//
// Paged: a tile's rows are gathered through the block table row by row (any page size), from a
// table of row offsets in shared memory that is filled ahead of the copies: the table reads of
// tile i + STAGES are in flight while tile i is computed, so no copy waits on them.
//
// Its own compile-time parameters: STAGES (buffers in the ring, >= 2), SMEM_BYTES (the dynamic
// shared memory the launcher gives; checked against the layout below at compile time).
#pragma once

#define ROW_TILES (BLOCK_H / 16)  // the CTA's row tiles: a warp each in every slice
#define SLICES (NUM_WARPS / ROW_TILES)  // warps that share one 16-token slice of each tile
#define BLOCK_N (16 * SLICES)  // tokens per tile: 16 per slice
#define STEP BLOCK_N  // tokens a CTA consumes per loop step (the planner's granule)
#define Q_VECS_PER_ROW (HEAD_DIM / 8)  // 16-byte vectors per row of Q
#define KV_VECS_PER_ROW (HEAD_DIM * (int)sizeof(kv_t) / 16)  // ... of K and V
// Rows padded to whole 128-byte lines (head_dim 80 and 96 to 128), so a warp's cp.async rows land
// on aligned lines (fewer, wider L2 requests); vector c of row r is stored at c ^ (r % 8) (XOR
// swizzle): ldmatrix's 8 rows of one vector column (or the fp8 loads' 8 rows of one word column)
// then hit 8 different 16-byte bank groups
#define Q_ROW_BYTES ((Q_VECS_PER_ROW + 7) / 8 * 128)
#define KV_ROW_BYTES ((KV_VECS_PER_ROW + 7) / 8 * 128)
#define TILE_BYTES (BLOCK_N * KV_ROW_BYTES)  // one slot of every slice's ring
// rows of a tile one pass of the slice's threads copies, a thread a 16-byte column
#define COPY_ROWS (32 * ROW_TILES / KV_VECS_PER_ROW)
#if KV_FP8
// Bytes of a V row a lane reads at a time (its V_GRANULE consecutive dims are one column of
// V_GRANULE n8 fragments)
#define V_GRANULE (HEAD_DIM % 32 == 0 ? 4 : 2)
#else
#define V_GRANULE 1  // ldmatrix: column n of fragment j is dim 8j + n
#endif
// Q's A fragments (of the warp's row tile) stay in registers up to head_dim 128; at 256 their
// 64 registers would spill the accumulator, so they are re-read from shared memory every tile
#define Q_IN_REGISTERS (HEAD_DIM <= 128)

#if DTYPE_ID == 2 || HEAD_DIM % 16
#error "the tensor-core loop takes fp16/bf16 with HEAD_DIM a multiple of 16"
#endif
static_assert(BLOCK_H == 16 || BLOCK_H == 32 || BLOCK_H == 64, "the query rows are 1, 2 or 4 of the mma's 16-row tiles");
static_assert(NUM_WARPS % ROW_TILES == 0, "a warp per row tile in every slice");
static_assert(STATE_WARPS == SLICES, "merge_warps merges a state per slice");
static_assert(STAGES >= 2, "the ring needs a buffer to fill while one is read");
static_assert(COPY_ROWS >= 1, "a row's 16-byte columns are at most a warp's threads");

// Dynamic shared memory: K and V rings [SLICES][STAGES][16][KV_ROW_BYTES], the Q tile
// [BLOCK_H][Q_ROW_BYTES] and the row-offset tables [SLICES][STAGES][16]; after the loop the same
// memory holds the warps' states (_build.ring_smem_bytes sizes it for both).
#define RING_BYTES (2 * STAGES * TILE_BYTES)
#define LAYOUT_BYTES (RING_BYTES + BLOCK_H * Q_ROW_BYTES + STAGES * BLOCK_N * 8)
#define STATE_BYTES (STATE_WARPS * BLOCK_H * (HEAD_DIM + 2) * 4)
static_assert(LAYOUT_BYTES <= SMEM_BYTES, "the launcher's shared memory must hold the layout");
static_assert(STATE_BYTES <= SMEM_BYTES, "the launcher's shared memory must hold the warps' states");
// ... as [SLICES][BLOCK_H] m, then l, then [SLICES][BLOCK_H][HEAD_DIM] acc (floats from the
// start): a slice's warps hold its state of every row (STATE_WARPS is SLICES)
#define STATE_L (STATE_WARPS * BLOCK_H)
#define STATE_ACC (2 * STATE_WARPS * BLOCK_H)
extern __shared__ __align__(16) unsigned char smem[];

// Byte offset of 16-byte vector c of row r in a tile of row_bytes rows (the swizzle above)
__device__ __forceinline__ unsigned swizzled(int r, int c, int row_bytes) {
    return r * row_bytes + ((c ^ r) & 7 | c & ~7) * 16;
}

__device__ __forceinline__ unsigned smem_address(const void* p) {  // for cp.async / ldmatrix
    unsigned r;
    asm("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }\n" : "=r"(r) : "l"(p));
    return r;
}

// 16 bytes global -> shared, asynchronously; .cg caches in L2 only (the cache is read once),
// .L2::128B has L2 fetch the whole line (the warp's other copies of the row need it next);
// a source size of 0 writes 16 zero bytes instead (a row past the range: its global memory, poisoned,
// is never read; its zero V row and -inf score add nothing to P V)
__device__ __forceinline__ void cp_async_16(unsigned dst, const void* src, bool valid) {
    asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

// The slice's warps wait for each other (their copies, waited for by each thread, are then seen
// by all of them): one warp, __syncwarp; more, named barrier 1 + slice (0 is __syncthreads')
__device__ __forceinline__ void slice_sync(int slice) {
#if ROW_TILES == 1
    __syncwarp();
#else
    asm volatile("bar.sync %0, %1;\n" ::"r"(1 + slice), "n"(32 * ROW_TILES) : "memory");
#endif
}
template <int N>  // wait until at most N of this thread's copy groups are in flight
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// Four 8x8 b16 matrices from shared memory, lanes 8i..8i+7 giving the row addresses of matrix i;
// .trans hands each thread a column pair instead of a row pair (V, whose rows are the k axis).
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

#if KV_FP8
// Plain shared loads of a lane's fp8 bytes (zero-extended) and of two Q registers
__device__ __forceinline__ unsigned ld_shared_u32(unsigned addr) {
    unsigned r;
    asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(r) : "r"(addr));
    return r;
}
__device__ __forceinline__ unsigned ld_shared_u16(unsigned addr) {
    unsigned short r;
    asm volatile("ld.shared.u16 %0, [%1];\n" : "=h"(r) : "r"(addr));
    return r;
}
__device__ __forceinline__ void ld_shared_v2(unsigned& x, unsigned& y, unsigned addr) {
    asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];\n" : "=r"(x), "=r"(y) : "r"(addr));
}

// Four fp8 values (a word, the first in the low byte) -> two registers of the query's dtype, lo
// from bytes 0-1 and hi from 2-3: mma operand pairs, exact. bf16 by bit operations (the
// *_TO_BF16_ASM macros _build.source defines): through fp16 it would take two more conversions
// per value on the slow conversion pipe.
__device__ __forceinline__ void fp8x4_to_operands(unsigned w, unsigned& lo, unsigned& hi) {
#if DTYPE_ID == 1 && KV_DTYPE_ID == 3
    asm(E4M3_TO_BF16_ASM : "=r"(lo), "=r"(hi) : "r"(w));
#elif DTYPE_ID == 1
    asm(E5M2_TO_BF16_ASM : "=r"(lo), "=r"(hi) : "r"(w));
#else
    fp8x4_to_f16x2(w, lo, hi);
#endif
}
#endif

// The head dim of column n of O's n8 fragment j (and of the V column its B fragment holds)
__device__ __forceinline__ int v_dim(int j, int n) {
    return j / V_GRANULE * 8 * V_GRANULE + n * V_GRANULE + j % V_GRANULE;
}

// d += a b for one m16n8k16 tile: a 16x16 row-major (4 registers of 2 values), b 16x8 "col"
// (2 registers), d 16x8 fp32 (thread l holds rows l/4 and l/4 + 8, columns 2(l%4) and +1)
__device__ __forceinline__ void mma_16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
#if DTYPE_ID == 0
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
#else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
#endif
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two floats rounded into one register of the input dtype, lo in the low half (cvt puts its
// first source in the high half)
__device__ __forceinline__ unsigned pack2(float lo, float hi) {
    unsigned r;
#if DTYPE_ID == 0
    asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
#else
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
#endif
    return r;
}

// Attention of the CTA's query rows (rows.n <= BLOCK_H) over tokens [start, end), each row over the part
// of them it sees (Rows; the range is cut to what any row sees), scores soft-capped (soft_cap):
// each warp's state left in shared memory for store_result(). Same contract as the CUDA-core
// attend().
__device__ __forceinline__ void attend(
    const scalar_t* __restrict__ q_ptr, const kv_t* __restrict__ k_ptr,
    const kv_t* __restrict__ v_ptr, const int* __restrict__ block_table_ptr,
    int pid_kvh, const Rows& rows, int start, int end,
    long long stride_qb, long long stride_qh, long long stride_kp, long long stride_kt,
    long long stride_kh, long long stride_btb, int page_size, float qk_scale,
    const float* __restrict__ k_scale_ptr, const float* __restrict__ v_scale_ptr, int scale_stride,
    float softcap) {
    qk_scale *= kv_scale(k_scale_ptr, pid_kvh, scale_stride);
    // rows are gathered one by one: the range starts at the first row's window and ends past the
    // last row's token
    start = max(start, rows.first(0));
    end = min(end, rows.end(rows.n - 1));
    const int pid_b = rows.b;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    // the warp's slice and row tile; its thread index among the slice's ROW_TILES warps
    const int slice = warp / ROW_TILES, tile = warp % ROW_TILES, slice_tid = tile * 32 + lane;
    // this slice's rings [STAGES][16][KV_ROW_BYTES] and row offsets [STAGES][16]; the CTA's Q tile
    unsigned char* k_ring = smem + slice * STAGES * 16 * KV_ROW_BYTES;
    unsigned char* v_ring = k_ring + STAGES * TILE_BYTES;
    unsigned char* q_tile = smem + 2 * STAGES * TILE_BYTES;
    long long* row_off = reinterpret_cast<long long*>(q_tile + BLOCK_H * Q_ROW_BYTES) + slice * STAGES * 16;
    const unsigned k_base = smem_address(k_ring), v_base = smem_address(v_ring);
    const unsigned q_base = smem_address(q_tile);
    const kv_t* k_head = k_ptr + pid_kvh * stride_kh;
    const kv_t* v_head = v_ptr + pid_kvh * stride_kh;
    // the slice's tile i: tokens [first + i * BLOCK_N, + 16) (the CTA's tile i, the slice's rows)
    const int first = start + slice * 16;
    const int num_tiles = first < end ? (end - first + BLOCK_N - 1) / BLOCK_N : 0;

    // byte offset of row r of the slice's tile i (head 0), 0 past the range (no table read; the
    // copy writes zeros there)
    auto row_of = [&](int i, int r) -> long long {
        const int t = first + i * BLOCK_N + r;
        return t < end ? kv_row_offset(pid_b, t, block_table_ptr, stride_btb, page_size, stride_kp,
                                       stride_kt) * (long long)sizeof(kv_t)
                       : 0;
    };
    // cp.async of the slice's tile i, K and V, into ring slot i % STAGES (offsets from row_off),
    // shared by its warps. A thread copies one 16-byte column of every COPY_ROWS-th row, so its
    // column's source and swizzle are fixed: a copy costs a row offset and two adds, not a
    // division and the whole address (the copies were most of what a warp issued a tile)
    const int copy_c = slice_tid % KV_VECS_PER_ROW, copy_r = slice_tid / KV_VECS_PER_ROW;
    const char* k_col = reinterpret_cast<const char*>(k_head) + 16 * copy_c;
    const char* v_col = reinterpret_cast<const char*>(v_head) + 16 * copy_c;
    auto load_tile = [&](int i) {
        const int slot = i % STAGES;
        // the tile's rows past the range are its last ones (the range is one run of tokens)
        const int rows_in = end - (first + i * BLOCK_N);
        if (copy_r >= COPY_ROWS) return;  // the threads past the last whole row of a pass
#pragma unroll
        for (int j = 0; j < (16 + COPY_ROWS - 1) / COPY_ROWS; ++j) {
            const int r = (COPY_ROWS == 1 ? 0 : copy_r) + j * COPY_ROWS;  // (a row a pass: r is j)
            if (16 % COPY_ROWS == 0 || r < 16) {
                const long long off = row_off[slot * 16 + r];
                const unsigned dst = swizzled(slot * 16 + r, copy_c, KV_ROW_BYTES);
                cp_async_16(k_base + dst, k_col + off, r < rows_in);
                cp_async_16(v_base + dst, v_col + off, r < rows_in);
            }
        }
    };

    // Prologue: Q (zero rows past the row block) as the CTA's first copy group, then each slice's
    // first STAGES - 1 tiles, a group each (empty groups past the range keep the count uniform).
    for (int idx = tid; idx < BLOCK_H * Q_VECS_PER_ROW; idx += NUM_THREADS) {
        const int h = idx / Q_VECS_PER_ROW, c = idx % Q_VECS_PER_ROW;
        const scalar_t* src = q_ptr + rows.q_offset(min(h, rows.n - 1), stride_qb, stride_qh) + c * 8;
        cp_async_16(q_base + swizzled(h, c, Q_ROW_BYTES), src, h < rows.n);
    }
    cp_async_commit();
    for (int idx = slice_tid; idx < STAGES * 16; idx += 32 * ROW_TILES) row_off[idx] = row_of(idx / 16, idx % 16);
    slice_sync(slice);
#pragma unroll
    for (int i = 0; i < STAGES - 1; ++i) {
        if (i < num_tiles) load_tile(i);
        cp_async_commit();
    }

#if MULTI_TOKEN
    // the spans of this lane's rows lane/4 and lane/4 + 8 of the warp's row tile (a padding row:
    // the last row's)
    int row_first[2], row_end[2];
#pragma unroll
    for (int x = 0; x < 2; ++x) {
        const int r = min(16 * tile + lane / 4 + 8 * x, rows.n - 1);
        row_first[x] = rows.first(r);
        row_end[x] = rows.end(r);
    }
#endif
    float m_i[2] = {NEG_INF, NEG_INF};  // rows lane/4 and lane/4 + 8 of the warp's fragments
    float l_i[2] = {0.f, 0.f};  // this thread's columns only until the end (summed over the quad)
    float acc[HEAD_DIM / 8][4];  // O: an m16n8 fragment per 8 columns of the head dim (v_dim)
#pragma unroll
    for (int n = 0; n < HEAD_DIM / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[n][e] = 0.f;
    // A fragments of Q for k step kk, the warp's row tile (rows q0 ..)
    const int q0 = 16 * tile;
    auto q_fragment = [&](unsigned (&a)[4], int kk) {
#if KV_FP8
        // in the fp8 K fragments' k order: lane (g, tig) holds dims 16kk + 4tig .. + 3 of heads g
        // (a[0], a[2]) and g + 8 (a[1], a[3]), 8 bytes of each row
        const int c = 2 * kk + (lane % 4) / 2;
        ld_shared_v2(a[0], a[2], q_base + swizzled(q0 + lane / 4, c, Q_ROW_BYTES) + 8 * (lane % 2));
        ld_shared_v2(a[1], a[3], q_base + swizzled(q0 + lane / 4 + 8, c, Q_ROW_BYTES) + 8 * (lane % 2));
#else
        // matrices: heads 0-7 / 8-15 x head dims 0-7 / 8-15 of the k step
        ldmatrix_x4(a, q_base + swizzled(q0 + lane % 16, kk * 2 + lane / 16, Q_ROW_BYTES));
#endif
    };
    cp_async_wait<STAGES - 1>();  // Q copied, by this thread ...
    __syncthreads();  // ... and by all (the only CTA-wide wait before the merge)
#if Q_IN_REGISTERS
    unsigned q_frag[HEAD_DIM / 16][4];
#pragma unroll
    for (int kk = 0; kk < HEAD_DIM / 16; ++kk) q_fragment(q_frag[kk], kk);
#endif

    // The slices run their pipelines independently: a slice waits for its own copies only.
    for (int i = 0; i < num_tiles; ++i) {
        // the row offsets of tile i + STAGES (the slice's first warp): table reads issued now,
        // stored after the compute
        const long long next_off = tile == 0 && lane < 16 ? row_of(i + STAGES, lane) : 0;
        cp_async_wait<STAGES - 2>();  // tile i copied, by this thread ...
        slice_sync(slice);  // ... and by the slice; slot (i - 1) % STAGES is free again
        if (i + STAGES - 1 < num_tiles) load_tile(i + STAGES - 1);
        cp_async_commit();
        const int slot = i % STAGES;
        const int row0 = slot * 16;  // the slot's first row in the slice's ring

        // S = Q K^T for the warp's 16 tokens: two n8 fragments, tokens 0-7 and 8-15; K rows are
        // the B operand's columns as stored
        float s[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
        for (int kk = 0; kk < HEAD_DIM / 16; ++kk) {
#if Q_IN_REGISTERS
            const unsigned (&a)[4] = q_frag[kk];
#else
            unsigned a[4];
            q_fragment(a, kk);
#endif
            unsigned b[4];
#if KV_FP8
            // lane (g, tig): dims 16kk + 4tig .. + 3 of tokens g and g + 8, a word each (k
            // 2tig, 2tig + 1 from its bytes 0-1, k 2tig + 8, 2tig + 9 from 2-3)
#pragma unroll
            for (int n = 0; n < 2; ++n)
                fp8x4_to_operands(ld_shared_u32(k_base + swizzled(row0 + 8 * n + lane / 4, kk, KV_ROW_BYTES) + 4 * (lane % 4)),
                                  b[2 * n], b[2 * n + 1]);
#else
            // matrices: tokens 0-7 / 8-15 x head dims 0-7 / 8-15 of the k step
            ldmatrix_x4(b, k_base + swizzled(row0 + lane % 8 + (lane / 16) * 8, kk * 2 + (lane / 8) % 2, KV_ROW_BYTES));
#endif
            mma_16816(s[0], a, b[0], b[1]);
            mma_16816(s[1], a, b[2], b[3]);
        }

        // online softmax over the warp's rows (log2 domain); tokens past the range, or outside
        // the row's own span, score -inf
        const int t0 = first + i * BLOCK_N + 2 * (lane % 4);
#pragma unroll
        for (int n = 0; n < 2; ++n)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int t = t0 + n * 8 + (e & 1);
#if MULTI_TOKEN
                const bool seen = t < end && t >= row_first[e >> 1] && t < row_end[e >> 1];
#else
                const bool seen = t < end;
#endif
                s[n][e] = seen ? soft_cap(s[n][e] * qk_scale, softcap) : NEG_INF;
            }
#pragma unroll
        for (int x = 0; x < 2; ++x) {  // x: row lane/4 + 8x, values s[n][2x], s[n][2x + 1]
            float m_new = fmaxf(fmaxf(s[0][2 * x], s[0][2 * x + 1]), fmaxf(s[1][2 * x], s[1][2 * x + 1]));
            m_new = fmaxf(m_new, __shfl_xor_sync(0xffffffffu, m_new, 1));  // the row's 4 lanes
            m_new = fmaxf(m_new, __shfl_xor_sync(0xffffffffu, m_new, 2));
            m_new = fmaxf(m_new, m_i[x]);
            // nothing seen yet: the state stays as is and every p is 0
            const float alpha = m_new == NEG_INF ? 1.f : exp2f(m_i[x] - m_new);
            const float m_sub = m_new == NEG_INF ? 0.f : m_new;
#pragma unroll
            for (int n = 0; n < 2; ++n)
#pragma unroll
                for (int e = 2 * x; e < 2 * x + 2; ++e) s[n][e] = exp2f(s[n][e] - m_sub);
            l_i[x] = l_i[x] * alpha + s[0][2 * x] + s[0][2 * x + 1] + s[1][2 * x] + s[1][2 * x + 1];
#pragma unroll
            for (int n = 0; n < HEAD_DIM / 8; ++n) {
                acc[n][2 * x] *= alpha;
                acc[n][2 * x + 1] *= alpha;
            }
            m_i[x] = m_new;
        }

        // O += P V: P's C fragments are its A fragment (k = the tile's token); V rows are the k
        // axis
        const unsigned p_frag[4] = {pack2(s[0][0], s[0][1]), pack2(s[0][2], s[0][3]),
                                    pack2(s[1][0], s[1][1]), pack2(s[1][2], s[1][3])};
#if KV_FP8
        // lane (g, tig): V_GRANULE bytes at dims v_dim(jj * V_GRANULE, g) .. of tokens 2tig,
        // 2tig + 1 (b0) and 2tig + 8, 2tig + 9 (b1); byte e of them is column g of fragment
        // jj * V_GRANULE + e, the two tokens' bytes paired by a byte permute
#pragma unroll
        for (int jj = 0; jj < HEAD_DIM / (8 * V_GRANULE); ++jj) {
            const int byte = v_dim(jj * V_GRANULE, lane / 4);
            unsigned w[4];
#pragma unroll
            for (int r = 0; r < 4; ++r) {
                const int token = 2 * (lane % 4) + (r & 1) + 8 * (r >> 1);
                const unsigned addr = v_base + swizzled(row0 + token, byte / 16, KV_ROW_BYTES) + byte % 16;
                w[r] = V_GRANULE == 4 ? ld_shared_u32(addr) : ld_shared_u16(addr);
            }
#pragma unroll
            for (int e = 0; e < V_GRANULE; e += 2) {
                // bytes e and e + 1 of both tokens: [lo e, hi e, lo e + 1, hi e + 1]
                const unsigned sel = e == 0 ? 0x5140u : 0x7362u;
                unsigned b0[2], b1[2];
                fp8x4_to_operands(__byte_perm(w[0], w[1], sel), b0[0], b0[1]);
                fp8x4_to_operands(__byte_perm(w[2], w[3], sel), b1[0], b1[1]);
                mma_16816(acc[jj * V_GRANULE + e], p_frag, b0[0], b1[0]);
                mma_16816(acc[jj * V_GRANULE + e + 1], p_frag, b0[1], b1[1]);
            }
        }
#else
        // read transposed (matrices: tokens 0-7 / 8-15 x head dims 0-7 / 8-15 of the 16-column
        // step)
#pragma unroll
        for (int dd = 0; dd < HEAD_DIM / 16; ++dd) {
            unsigned b[4];
            ldmatrix_x4_trans(b, v_base + swizzled(row0 + lane % 16, dd * 2 + lane / 16, KV_ROW_BYTES));
            mma_16816(acc[2 * dd], p_frag, b[0], b[1]);
            mma_16816(acc[2 * dd + 1], p_frag, b[2], b[3]);
        }
#endif
        if (tile == 0 && lane < 16) row_off[slot * 16 + lane] = next_off;  // tile i + STAGES's slot
    }

    // The warps' states to shared memory (the rings are free once every copy has landed and every
    // warp is done), [SLICES][BLOCK_H] m and l, [SLICES][BLOCK_H][HEAD_DIM] acc, for merge_warps
    cp_async_wait<0>();
    __syncthreads();
    const float v_scale = kv_scale(v_scale_ptr, pid_kvh, scale_stride);
    float* sm_m = reinterpret_cast<float*>(smem);
    float* sm_l = sm_m + STATE_L;
    float* sm_acc = sm_m + STATE_ACC;
#pragma unroll
    for (int x = 0; x < 2; ++x) {
        l_i[x] += __shfl_xor_sync(0xffffffffu, l_i[x], 1);
        l_i[x] += __shfl_xor_sync(0xffffffffu, l_i[x], 2);
        const int h = slice * BLOCK_H + q0 + lane / 4 + 8 * x;
        if (lane % 4 == 0) {
            sm_m[h] = m_i[x];
            sm_l[h] = l_i[x];
        }
#pragma unroll
        for (int n = 0; n < HEAD_DIM / 8; ++n) {
            sm_acc[h * HEAD_DIM + v_dim(n, 2 * (lane % 4))] = acc[n][2 * x] * v_scale;
            sm_acc[h * HEAD_DIM + v_dim(n, 2 * (lane % 4) + 1)] = acc[n][2 * x + 1] * v_scale;
        }
    }
    __syncthreads();
}

__device__ __forceinline__ void store_result(const Dest& dest) {
    const float* sm_m = reinterpret_cast<const float*>(smem);
    merge_warps(sm_m, sm_m + STATE_L, sm_m + STATE_ACC, dest);
}
