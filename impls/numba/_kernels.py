"""The Numba CUDA kernels: one attention kernel for both algorithms, one split combine kernel.

``decode_kernel`` handles one work item (blockIdx.y: a row of ``items``, (sequence ``pid_b``,
start, end, partial slot), from ``impls.plan``), one KV head (``pid_kvh``) and one block of up to
BLOCK_H of the query heads that share it (``pid_hb``; both from blockIdx.x). An item that is a
whole sequence (slot -1) writes the final out/lse: the one-pass launcher gives one such item per
sequence; split-K's plan cuts long sequences into items that write float32 partials and their
LSE, then ``combine_kernel`` merges each split sequence over its own slots. Tokens are addressed
as ``cache[page, row, kv_head]``: paged ``(block_table[b, t // page_size], t % page_size)``, so
any page size works; dense ``(b, t)``.

Inside a block (as in the CuPy kernels, with the same names): threads form row groups of TPR
lanes; a row group reads UNROLL whole K/V rows per loop step, each lane VPT 8-byte vectors of a
row (VEC elements each), so one K/V load serves all BLOCK_H query heads; partial dot products
are summed across the row's lanes with warp shuffles (a reduce-scatter, then an all-gather:
about 2-3 shuffles a score where they are many, not log2(TPR), ``sum_exchange``); each row
group keeps a float32 online-softmax state (running max ``m_i``, sum ``l_i``, accumulator
``acc``) for its heads in registers; the next step's vectors are loaded before this step's
arithmetic. At the end row groups are merged within the warp by shuffles, then warps in shared
memory.

Types: K/V/q are read as int64 words (``torch.Tensor.view(torch.int64)``: 4 fp16/bf16, 2 fp32
or 8 fp8 values per 8-byte load) and converted in registers. bf16: numba-cuda has no bf16
arithmetic, and a bf16 value is the top half of a float32, so ``(bits << 16)`` reinterpreted
as float32 (``numpy.uint32(x).view(numpy.float32)``, a bitcast on the GPU) is exact. fp16: the
hardware's conversion (``cvt.f32.f16``) through a two-line intrinsic (LLVM's bitcast of the 16
bits to half, then ``fpext``), since numba-cuda's own ``view(float16)`` fails to lower; in the
simulator, the exponent and mantissa bits moved into a float32 and rescaled by 2^112 (exact for
normals and subnormals; inf/NaN kept). Outputs: float32 and float16 are stored through the array's
own type (a float16 array rounds on store); bf16 is rounded to nearest-even from the float32 bits
and stored as int16 bits. Nothing is converted outside the kernel.

fp8 cache (``KV_DTYPE`` e4m3fn or e5m2, the query bf16/fp16): a K/V word holds 8 elements, so a
vector of VEC = 8 elements takes two query words. e5m2 is the top byte of an fp16 (the fp16 path
on ``byte << 8``); e4m3fn moves its bits into a float32 as the simulator's fp16 path does (rescaled by 2^120). Both are
exact, as every fp8 value is a float32. The inner loop only decodes: K's scale is folded into
the query's pre-scale and V's multiplies the output, once per block.

Compile-time specialisation: ``build(config)`` closes the kernels over the Config's integers,
which Numba freezes as constants, so loops over them unroll and per-thread arrays live in
registers; built kernels are cached per Config, and each compiles once, at its first launch.

Simulator: the CUDA simulator has no warp shuffles. ``exchange`` and ``exchange_state``
(a lane reads the values of lane ^ offset) are ``cuda.shfl_xor_sync`` on the GPU and, in the
simulator, a round trip through shared memory between two ``syncthreads`` (every call site is
reached by the whole block, so the barrier is safe), one round trip per call for all the values
it exchanges. The fp16 conversion differs too (above: the hardware's on the GPU). Everything else
is the same code on both.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from llvmlite import ir

from impls.common import LN2, LOG2E
from impls.numba._compat import SIMULATOR, cuda, device_function, kernel_function
# numba.cuda after _compat (its numpy alias must come before numba's import)
from numba.cuda import types
from numba.cuda.extending import intrinsic
from specs.problem import ITEMSIZE

DTYPE_IDS = {"float16": 0, "bfloat16": 1, "float32": 2, "float8_e4m3fn": 3, "float8_e5m2": 4}
OUT_FLOAT32, OUT_FLOAT16, OUT_BF16 = 0, 1, 2  # how the kernel stores its output
OUT_KINDS = {"float32": OUT_FLOAT32, "float16": OUT_FLOAT16, "bfloat16": OUT_BF16}
LOAD_BYTES = 8  # one int64 word per load
FULL_MASK = 0xFFFFFFFF


HALF_RESCALE = np.float32(2.0 ** 112)
E4M3_RESCALE = np.float32(2.0 ** 120)  # 2^(127 - 7): float32's exponent bias over e4m3's
NAN = np.float32(np.nan)


@device_function
def bits_as_float(bits):
    """The low 32 bits of an integer reinterpreted as a float32 (a bitcast on the GPU)."""
    return np.uint32(bits).view(np.float32)


@device_function
def half_bits_as_float(h):
    """IEEE half bits (0 <= h < 2^16) to float32, exactly, in integer and float32 arithmetic: the
    exponent and mantissa bits moved into a float32 and rescaled by 2^(127 - 15) (normals and
    subnormals alike; inf and NaN keep an all-ones exponent): the simulator's conversion."""
    mag = (h & 0x7FFF) << 13
    if (h & 0x7C00) == 0x7C00:  # inf, NaN
        f = bits_as_float(mag | 0x7F800000)
    else:
        f = bits_as_float(mag) * HALF_RESCALE
    return -f if h & 0x8000 else f


if SIMULATOR:
    half_as_float = half_bits_as_float
else:
    @intrinsic
    def half_as_float(typingctx, h):
        """IEEE half bits (the low 16 of an integer) to float32 by the hardware's conversion
        (``cvt.f32.f16``, exact for every half): numba-cuda has no float16 bitcast of its own,
        and the arithmetic one costs about ten instructions an element."""
        if not isinstance(h, types.Integer) or h.bitwidth <= 16:  # (trunc narrows: wider only)
            return None

        def codegen(context, builder, signature, args):
            half = builder.bitcast(builder.trunc(args[0], ir.IntType(16)), ir.HalfType())
            return builder.fpext(half, ir.FloatType())
        return types.float32(h), codegen


@device_function
def e4m3_as_float(b):
    """float8_e4m3fn bits (0 <= b < 2^8) to float32, exactly: the exponent and mantissa bits
    moved into a float32 (the sign too) and rescaled by 2^(127 - 7) (normals and subnormals
    alike); 0x7F and 0xFF are NaN (the format has no infinities)."""
    if (b & 0x7F) == 0x7F:
        return NAN
    return bits_as_float(((b & 0x80) << 24) | ((b & 0x7F) << 20)) * E4M3_RESCALE


@device_function
def e5m2_as_float(b):
    """float8_e5m2 bits (0 <= b < 2^8) to float32, exactly: e5m2 is the top byte of an fp16."""
    return half_as_float(b << 8)


@device_function
def bf16_bits(x):
    """float32 x rounded to nearest-even bfloat16, as the signed 16-bit integer with its bits
    (NaN stays a quiet NaN)."""
    u = np.int64(np.float32(x).view(np.uint32))
    if (u & 0x7FFFFFFF) > 0x7F800000:
        bits = np.int64(0x7FC0)
    else:  # round to nearest even on the 16 bits dropped
        bits = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return bits - ((bits & 0x8000) << 1)


def sum_exchange(values: int, lanes: int) -> tuple[int, int]:
    """(levels, slots): how a row's ``lanes`` (a power of two) sum each of ``values`` partial dot
    products so that every lane gets every sum, with the fewest shuffles of the halving schemes
    (the SM's shuffle unit issues one warp a cycle, a quarter of its FMA rate; an uneven split
    without padding could take fewer). The highest ``levels`` lane bits
    reduce-scatter (a lane keeps half its values, adding its partner's half of them) and later
    all-gather, over ``slots`` values (``values`` padded to a power of two); the remaining bits
    sum every value still held. Levels 0: every bit sums all ``values`` (values x log2(lanes))."""
    bits = lanes.bit_length() - 1
    best = (values * bits, 0, values)
    slots = 1 << (values - 1).bit_length()
    for levels in range(1, min(bits, slots.bit_length() - 1) + 1):
        held = slots >> levels
        shuffles = 2 * (slots - held) + (bits - levels) * held
        best = min(best, (shuffles, levels, slots))
    return best[1], best[2]


@dataclass(frozen=True)
class Config:
    """Everything the kernels are specialised on (all compile-time constants), named as the CuPy
    kernels' -D parameters."""

    HEAD_DIM: int
    BLOCK_H: int  # query heads per block (<= the GQA group)
    DTYPE: str  # the query's (and output's)
    KV_DTYPE: str  # the cache's storage dtype: DTYPE, or an fp8 one (then scaled)
    IS_PAGED: bool
    OUT_KIND: int  # how the final out is stored (the problem's dtype; partials are float32)
    TPR: int  # threads per K/V row, a power of two <= 32
    UNROLL: int  # rows per row group per loop step
    NUM_WARPS: int
    MIN_BLOCKS: int = 0  # launch bounds: blocks per SM the register allocation must allow

    @property
    def VEC(self) -> int:  # K/V elements per 8-byte load
        return LOAD_BYTES // ITEMSIZE[self.KV_DTYPE]

    @property
    def Q_WORDS(self) -> int:  # query words per vector of VEC elements (2 for an fp8 cache)
        return self.VEC * ITEMSIZE[self.DTYPE] // LOAD_BYTES

    @property
    def KV_SCALED(self) -> bool:
        return self.KV_DTYPE != self.DTYPE

    @property
    def VECS_PER_ROW(self) -> int:
        return self.HEAD_DIM // self.VEC

    @property
    def VPT(self) -> int:  # 8-byte vectors per thread per row
        return -(-self.VECS_PER_ROW // self.TPR)

    @property
    def NUM_THREADS(self) -> int:
        return self.NUM_WARPS * 32

    @property
    def STEP(self) -> int:  # tokens a block consumes per loop step
        return self.NUM_WARPS * (32 // self.TPR) * self.UNROLL


@functools.cache
def build(c: Config):
    """(decode_kernel, combine_kernel) specialised on ``c``."""
    HEAD_DIM, BLOCK_H, VEC, VPT, TPR, UNROLL = c.HEAD_DIM, c.BLOCK_H, c.VEC, c.VPT, c.TPR, c.UNROLL
    DTYPE_ID, IS_PAGED, OUT_KIND, NUM_WARPS = DTYPE_IDS[c.DTYPE], c.IS_PAGED, c.OUT_KIND, c.NUM_WARPS
    KV_ID, KV_SCALED, Q_WORDS = DTYPE_IDS[c.KV_DTYPE], c.KV_SCALED, c.Q_WORDS
    Q_VEC = VEC // Q_WORDS  # query elements per word
    NUM_THREADS, STEP, VECS_PER_ROW = c.NUM_THREADS, c.STEP, c.VECS_PER_ROW
    ROWS_PER_WARP = 32 // TPR  # row groups per warp
    NUM_STATE = 2 * BLOCK_H + BLOCK_H * VPT * VEC  # m_i, l_i and acc of one lane
    NUM_SUMS = UNROLL * BLOCK_H  # the scores a row group sums over its lanes each loop step
    SCATTER_LEVELS, SUM_SLOTS = sum_exchange(NUM_SUMS, TPR)
    NEG_INF = np.float32(-np.inf)
    ZERO = np.float32(0.0)

    @device_function
    def element(w, e):
        """Element e of the query's int64 word w, as float32."""
        if DTYPE_ID == 2:
            return bits_as_float((w >> (32 * e)) & 0xFFFFFFFF)
        bits = (w >> (16 * e)) & 0xFFFF
        if DTYPE_ID == 1:
            return bits_as_float(bits << 16)
        return half_as_float(bits)

    @device_function
    def kv_element(w, e):
        """Element e of the K/V int64 word w, as float32 (an fp8 value unscaled)."""
        if KV_ID == 3:
            return e4m3_as_float((w >> (8 * e)) & 0xFF)
        if KV_ID == 4:
            return e5m2_as_float((w >> (8 * e)) & 0xFF)
        return element(w, e)

    @device_function
    def store(out, pid_b, h, d, x):
        if OUT_KIND != OUT_BF16:  # float32, or float16 through the array's own conversion
            out[pid_b, h, d] = x
        else:
            out[pid_b, h, d] = np.int16(bf16_bits(x))

    if SIMULATOR:
        @device_function
        def exchange(send, recv, count, off):
            scratch = cuda.shared.array((NUM_THREADS, SUM_SLOTS), np.float32)
            tid = cuda.threadIdx.x
            for j in range(count):
                scratch[tid, j] = send[j]
            cuda.syncthreads()
            for j in range(count):
                recv[j] = scratch[tid ^ off, j]
            cuda.syncthreads()

        @device_function
        def exchange_state(m_i, l_i, acc, m_other, l_other, acc_other, off):
            # one lane's state, packed in a row of the scratch: m_i, l_i, then acc
            scratch = cuda.shared.array((NUM_THREADS, NUM_STATE), np.float32)
            tid = cuda.threadIdx.x
            for h in range(BLOCK_H):
                scratch[tid, h] = m_i[h]
                scratch[tid, BLOCK_H + h] = l_i[h]
                for i in range(VPT):
                    for e in range(VEC):
                        scratch[tid, 2 * BLOCK_H + (h * VPT + i) * VEC + e] = acc[h, i, e]
            cuda.syncthreads()
            for h in range(BLOCK_H):
                m_other[h] = scratch[tid ^ off, h]
                l_other[h] = scratch[tid ^ off, BLOCK_H + h]
                for i in range(VPT):
                    for e in range(VEC):
                        acc_other[h, i, e] = scratch[tid ^ off, 2 * BLOCK_H + (h * VPT + i) * VEC + e]
            cuda.syncthreads()
    else:
        @device_function
        def exchange(send, recv, count, off):
            for j in range(count):
                recv[j] = cuda.shfl_xor_sync(FULL_MASK, send[j], off)

        @device_function
        def exchange_state(m_i, l_i, acc, m_other, l_other, acc_other, off):
            for h in range(BLOCK_H):
                m_other[h] = cuda.shfl_xor_sync(FULL_MASK, m_i[h], off)
                l_other[h] = cuda.shfl_xor_sync(FULL_MASK, l_i[h], off)
                for i in range(VPT):
                    for e in range(VEC):
                        acc_other[h, i, e] = cuda.shfl_xor_sync(FULL_MASK, acc[h, i, e], off)

    @device_function
    def row_sums(s, red, send, recv, lane_in_row):
        """Each of the row group's UNROLL x BLOCK_H scores summed over its TPR lanes, on every
        lane (``sum_exchange``): a reduce-scatter over the highest SCATTER_LEVELS lane bits, sums
        of what is still held over the others, then the all-gather."""
        for u in range(UNROLL):
            for h in range(BLOCK_H):
                red[u * BLOCK_H + h] = s[u, h]
        for j in range(NUM_SUMS, SUM_SLOTS):
            red[j] = ZERO
        count = SUM_SLOTS
        off = TPR // 2
        for _ in range(SCATTER_LEVELS):  # the upper lane of a pair keeps the upper half
            half = count // 2
            upper = (lane_in_row & off) != 0
            for j in range(half):
                send[j] = red[j] if upper else red[half + j]
            exchange(send, recv, half, off)
            for j in range(half):
                red[j] = (red[half + j] if upper else red[j]) + recv[j]
            count = half
            off //= 2
        while off > 0:
            exchange(red, recv, count, off)
            for j in range(count):
                red[j] += recv[j]
            off //= 2
        off = TPR >> SCATTER_LEVELS  # the scatter's levels backwards: the last halving joins first
        for _ in range(SCATTER_LEVELS):
            upper = (lane_in_row & off) != 0
            exchange(red, recv, count, off)
            for j in range(count):
                mine = red[j]
                red[j] = recv[j] if upper else mine
                red[count + j] = mine if upper else recv[j]
            count *= 2
            off *= 2
        for u in range(UNROLL):
            for h in range(BLOCK_H):
                s[u, h] = red[u * BLOCK_H + h]

    @device_function
    def find_pages(block_table, pid_b, base, rg, end, page_size, pages):
        """Paged: the pool page of each of this row group's UNROLL tokens at step ``base``
        (looked up a step before its K/V rows are loaded, so those loads never wait for it)."""
        if IS_PAGED:
            for u in range(UNROLL):
                t = base + rg * UNROLL + u
                page = np.int64(0)
                if t < end:
                    # unsigned 32-bit division: numba's int64 // keeps Python's floor semantics
                    # for negative numbers, several times the instructions
                    page = np.int64(block_table[pid_b, np.uint32(t) // np.uint32(page_size)])
                pages[u] = page

    @device_function
    def load_step(k_vecs, v_vecs, pages, pid_b, pid_kvh, base, rg, lane_in_row, end, page_size,
                  k_raw, v_raw):
        """This lane's K/V vectors of the UNROLL tokens of row group rg at step ``base`` (zeros
        past ``end``: rows past a sequence's length are never read)."""
        for u in range(UNROLL):
            t = base + rg * UNROLL + u
            page = pid_b
            row = t
            if IS_PAGED:
                page = pages[u]
                row = np.int64(np.uint32(t) % np.uint32(page_size))
            for i in range(VPT):
                j = lane_in_row + i * TPR
                if t < end and j < VECS_PER_ROW:
                    k_raw[u, i] = k_vecs[page, row, pid_kvh, j]
                    v_raw[u, i] = v_vecs[page, row, pid_kvh, j]
                else:
                    k_raw[u, i] = 0
                    v_raw[u, i] = 0

    @kernel_function(NUM_THREADS, c.MIN_BLOCKS)
    def decode_kernel(q_vecs, k_vecs, v_vecs, items, block_table, out, lse, part_out, part_lse,
                      num_head_blocks, group_size, page_size, qk_scale, k_scale, v_scale,
                      scale_stride):
        tid = cuda.threadIdx.x
        lane = tid & 31
        warp = tid >> 5
        lane_in_row = lane % TPR
        rg = warp * ROWS_PER_WARP + lane // TPR
        pid_kvh = cuda.blockIdx.x // num_head_blocks
        pid_hb = cuda.blockIdx.x % num_head_blocks
        pid_i = cuda.blockIdx.y
        pid_b = items[pid_i, 0]
        start = items[pid_i, 1]
        end = items[pid_i, 2]
        slot = items[pid_i, 3]  # the partial slot, or -1: the final result
        head0 = pid_kvh * group_size + pid_hb * BLOCK_H
        n_heads = min(BLOCK_H, group_size - pid_hb * BLOCK_H)
        v_scale_kvh = np.float32(1.0)  # multiplies the output: 1 unless the cache is fp8
        if KV_SCALED:  # fp8: K's scale joins the query's pre-scale (scale_stride 0: one for all)
            qk_scale = qk_scale * k_scale[pid_kvh * scale_stride]
            v_scale_kvh = v_scale[pid_kvh * scale_stride]

        q = cuda.local.array((BLOCK_H, VPT, VEC), np.float32)  # pre-scaled: scores in log2 units
        for h in range(BLOCK_H):
            for i in range(VPT):
                j = lane_in_row + i * TPR
                for qw in range(Q_WORDS):
                    w = np.int64(0)
                    if h < n_heads and j < VECS_PER_ROW:
                        w = q_vecs[pid_b, head0 + h, j * Q_WORDS + qw]
                    for e in range(Q_VEC):
                        q[h, i, qw * Q_VEC + e] = element(w, e) * qk_scale

        m_i = cuda.local.array(BLOCK_H, np.float32)
        l_i = cuda.local.array(BLOCK_H, np.float32)
        acc = cuda.local.array((BLOCK_H, VPT, VEC), np.float32)
        for h in range(BLOCK_H):
            m_i[h] = NEG_INF
            l_i[h] = ZERO
            for i in range(VPT):
                for e in range(VEC):
                    acc[h, i, e] = ZERO

        k_raw = cuda.local.array((UNROLL, VPT), np.int64)
        v_raw = cuda.local.array((UNROLL, VPT), np.int64)
        k_next = cuda.local.array((UNROLL, VPT), np.int64)
        v_next = cuda.local.array((UNROLL, VPT), np.int64)
        s = cuda.local.array((UNROLL, BLOCK_H), np.float32)  # scores, then probabilities
        red = cuda.local.array(SUM_SLOTS, np.float32)  # row_sums' working values
        send = cuda.local.array(SUM_SLOTS, np.float32)
        recv = cuda.local.array(SUM_SLOTS, np.float32)
        pages = cuda.local.array(UNROLL, np.int64)
        find_pages(block_table, pid_b, start, rg, end, page_size, pages)
        load_step(k_vecs, v_vecs, pages, pid_b, pid_kvh, start, rg, lane_in_row, end, page_size,
                  k_raw, v_raw)
        find_pages(block_table, pid_b, start + STEP, rg, end, page_size, pages)
        base = start
        while base < end:  # the same trip count for the whole block (the exchanges need it)
            # the next step's loads go out before this step's arithmetic, and the page lookup
            # of the step after that
            load_step(k_vecs, v_vecs, pages, pid_b, pid_kvh, base + STEP, rg, lane_in_row, end,
                      page_size, k_next, v_next)
            find_pages(block_table, pid_b, base + 2 * STEP, rg, end, page_size, pages)
            for u in range(UNROLL):
                for h in range(BLOCK_H):
                    s[u, h] = ZERO
                for i in range(VPT):
                    w = k_raw[u, i]
                    for e in range(VEC):
                        kf = kv_element(w, e)
                        for h in range(BLOCK_H):
                            s[u, h] += q[h, i, e] * kf
            row_sums(s, red, send, recv, lane_in_row)
            for h in range(BLOCK_H):
                m_new = m_i[h]
                for u in range(UNROLL):
                    if base + rg * UNROLL + u < end:
                        m_new = max(m_new, s[u, h])
                # nothing seen yet (this row group's tokens all past the end): state unchanged
                alpha = np.float32(1.0) if m_new == NEG_INF else math.exp2(m_i[h] - m_new)
                l_new = l_i[h] * alpha
                for u in range(UNROLL):  # s becomes the probabilities p
                    p = ZERO
                    if base + rg * UNROLL + u < end:
                        p = math.exp2(s[u, h] - m_new)
                    s[u, h] = p
                    l_new += p
                l_i[h] = l_new
                m_i[h] = m_new
                for i in range(VPT):
                    for e in range(VEC):
                        acc[h, i, e] *= alpha
            for u in range(UNROLL):
                for i in range(VPT):
                    w = v_raw[u, i]
                    for e in range(VEC):
                        vf = kv_element(w, e)
                        for h in range(BLOCK_H):
                            acc[h, i, e] += s[u, h] * vf
            for u in range(UNROLL):
                for i in range(VPT):
                    k_raw[u, i] = k_next[u, i]
                    v_raw[u, i] = v_next[u, i]
            base += STEP

        # merge the row groups of each warp (lanes TPR apart): lanes [0, TPR) get the warp's state
        m_other = cuda.local.array(BLOCK_H, np.float32)
        l_other = cuda.local.array(BLOCK_H, np.float32)
        acc_other = cuda.local.array((BLOCK_H, VPT, VEC), np.float32)
        off = TPR
        while off < 32:
            exchange_state(m_i, l_i, acc, m_other, l_other, acc_other, off)
            for h in range(BLOCK_H):
                m_new = max(m_i[h], m_other[h])
                w_self = ZERO
                w_other = ZERO
                if m_new != NEG_INF:
                    w_self = math.exp2(m_i[h] - m_new)
                    w_other = math.exp2(m_other[h] - m_new)
                l_i[h] = l_i[h] * w_self + l_other[h] * w_other
                for i in range(VPT):
                    for e in range(VEC):
                        acc[h, i, e] = acc[h, i, e] * w_self + acc_other[h, i, e] * w_other
                m_i[h] = m_new
            off *= 2

        # merge the warps in shared memory: O = sum_w 2^(m_w - M) acc_w / sum_w 2^(m_w - M) l_w
        sm_m = cuda.shared.array((NUM_WARPS, BLOCK_H), np.float32)
        sm_l = cuda.shared.array((NUM_WARPS, BLOCK_H), np.float32)
        sm_acc = cuda.shared.array((NUM_WARPS, BLOCK_H, HEAD_DIM), np.float32)
        if lane < TPR:
            for h in range(BLOCK_H):
                for i in range(VPT):
                    j = lane_in_row + i * TPR
                    if j < VECS_PER_ROW:
                        for e in range(VEC):
                            sm_acc[warp, h, j * VEC + e] = acc[h, i, e]
                if lane == 0:
                    sm_m[warp, h] = m_i[h]
                    sm_l[warp, h] = l_i[h]
        cuda.syncthreads()
        idx = tid
        while idx < n_heads * HEAD_DIM:
            h = idx // HEAD_DIM
            d = idx % HEAD_DIM
            big = NEG_INF
            for wp in range(NUM_WARPS):
                big = max(big, sm_m[wp, h])
            o = ZERO
            lse_h = NEG_INF
            if big != NEG_INF:
                sum_l = ZERO
                sum_o = ZERO
                for wp in range(NUM_WARPS):
                    weight = math.exp2(sm_m[wp, h] - big)  # a warp that saw nothing: 0
                    sum_l += weight * sm_l[wp, h]
                    sum_o += weight * sm_acc[wp, h, d]
                o = sum_o * v_scale_kvh / sum_l
                lse_h = (big + math.log2(sum_l)) * np.float32(LN2)
            if slot < 0:
                store(out, pid_b, head0 + h, d, o)
                if d == 0:
                    lse[pid_b, head0 + h] = lse_h
            else:
                part_out[slot, head0 + h, d] = o
                if d == 0:
                    part_lse[slot, head0 + h] = lse_h
            idx += NUM_THREADS

    @kernel_function(NUM_THREADS)
    def combine_kernel(part_out, part_lse, merge_seqs, merge_indptr, out, lse):
        """out[b, h] = sum_s w_s part_out[s, h] / sum_s w_s over sequence b's slots s,
        w_s = exp(lse_s - max lse) (items are never empty: every LSE is finite)."""
        pid_h = cuda.blockIdx.x
        pid_b = merge_seqs[cuda.blockIdx.y]
        first = merge_indptr[cuda.blockIdx.y]
        last = merge_indptr[cuda.blockIdx.y + 1]
        big = NEG_INF
        for s in range(first, last):
            big = max(big, part_lse[s, pid_h])
        total = ZERO
        for s in range(first, last):
            total += math.exp2((part_lse[s, pid_h] - big) * np.float32(LOG2E))
        d = cuda.threadIdx.x
        while d < HEAD_DIM:
            o = ZERO
            for s in range(first, last):
                o += math.exp2((part_lse[s, pid_h] - big) * np.float32(LOG2E)) * part_out[s, pid_h, d]
            store(out, pid_b, pid_h, d, o / total)
            if d == 0:
                lse[pid_b, pid_h] = big + math.log(total)
            d += NUM_THREADS

    return decode_kernel, combine_kernel
