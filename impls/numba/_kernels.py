"""The Numba CUDA kernels: one attention kernel for every variant, one split combine kernel.

``decode`` handles one sequence (blockIdx.y), one KV head and a chunk of up to GROUP of the
query heads that share it (blockIdx.x), and one token range (blockIdx.z: split s covers
[s * split_len, (s + 1) * split_len) of the sequence). The dense and paged variants launch it
with one split and write the final out/lse; split-K launches it with many, writing float32
partials and their LSE, then ``combine`` merges them. Tokens are addressed as
``cache[p0, p1, kv_head]``: dense ``(b, t)``, paged ``(block_table[b, t // page_size],
t % page_size)``, so any page size works.

Inside a block (as in the CuPy kernels): threads form row groups of TPR lanes; a row group reads
UNROLL whole K/V rows per loop step, each lane WPT 8-byte words of a row, so one K/V load
serves all GROUP query heads; partial dot products are summed across the row's lanes with warp
shuffles; each row group keeps a float32 online-softmax state (max m, sum l, accumulator) for
its heads in registers; the next step's words are loaded before this step's arithmetic. At the
end row groups are merged within the warp by shuffles, then warps in shared memory.

Types: K/V/q are read as int64 words (``torch.Tensor.view(torch.int64)``: 4 fp16/bf16 or 2
fp32 values per 8-byte load) and converted in registers. bf16: numba-cuda has no bf16
arithmetic, and a bf16 value is the top half of a float32, so ``(bits << 16)`` reinterpreted
as float32 (``numpy.uint32(x).view(numpy.float32)``, a bitcast on the GPU) is exact. fp16: the
exponent and mantissa bits moved into a float32 and rescaled by 2^112 (exact for normals and
subnormals; inf/NaN kept), since numba-cuda cannot reinterpret bits as float16 (its
``view(float16)`` fails to lower). Outputs: float32 and float16 are stored through the array's
own type (a float16 array rounds on store); bf16 is rounded to nearest-even from the float32 bits
and stored as int16 bits. Nothing is converted outside the kernel.

Compile-time specialisation: ``build(config)`` closes the kernels over the Config's integers
(head_dim, group, dtype, layout, tile), which Numba freezes as constants, so loops over them
unroll and per-thread arrays live in registers; built kernels are cached per Config, and each
compiles once, at its first launch.

Simulator: the CUDA simulator has no warp shuffles. ``exchange`` (a lane reads the values of
lane ^ offset) is ``cuda.shfl_xor_sync`` on the GPU and, in the simulator, a round trip through
shared memory between two ``syncthreads`` (every call site is reached by the whole block, so
the barrier is safe). It moves a whole per-thread array per call, which keeps the simulator's
barriers few. Everything else is the same code on both.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from impls.numba._compat import SIMULATOR, cuda, device_function, kernel_function

DTYPE_CODES = {"float16": 0, "bfloat16": 1, "float32": 2}
OUT_FLOAT32, OUT_FLOAT16, OUT_BF16 = 0, 1, 2  # how the kernel stores its output
OUT_KINDS = {"float32": OUT_FLOAT32, "float16": OUT_FLOAT16, "bfloat16": OUT_BF16}
WORD_BYTES = 8  # one int64 load
LOG2E = 1.4426950408889634  # q is pre-scaled by sm_scale * log2(e): scores in log2 units
LN2 = 0.6931471805599453
FULL_MASK = 0xFFFFFFFF


HALF_RESCALE = np.float32(2.0 ** 112)


@device_function
def bits_as_float(bits):
    """The low 32 bits of an integer reinterpreted as a float32 (a bitcast on the GPU)."""
    return np.uint32(bits).view(np.float32)


@device_function
def half_as_float(h):
    """IEEE half bits (0 <= h < 2^16) to float32, exactly: the exponent and mantissa bits moved
    into a float32 and rescaled by 2^(127 - 15) (normals and subnormals alike; inf and NaN keep
    an all-ones exponent)."""
    mag = (h & 0x7FFF) << 13
    if (h & 0x7C00) == 0x7C00:  # inf, NaN
        f = bits_as_float(mag | 0x7F800000)
    else:
        f = bits_as_float(mag) * HALF_RESCALE
    return -f if h & 0x8000 else f


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


@dataclass(frozen=True)
class Config:
    """Everything the kernels are specialised on (all compile-time constants)."""

    head_dim: int
    group: int  # query heads per block (<= the GQA group)
    dtype: str
    paged: bool
    out_kind: int  # OUT_FLOAT32 for split partials, else the problem's dtype
    tpr: int  # threads per K/V row, a power of two <= 32
    unroll: int  # rows per row group per loop step
    num_warps: int
    min_blocks: int = 0  # launch bounds: blocks per SM the register allocation must allow

    @property
    def epw(self) -> int:  # elements per 8-byte word
        return WORD_BYTES // (4 if self.dtype == "float32" else 2)

    @property
    def words_per_row(self) -> int:
        return self.head_dim // self.epw

    @property
    def wpt(self) -> int:  # words per thread per row
        return -(-self.words_per_row // self.tpr)

    @property
    def threads(self) -> int:
        return self.num_warps * 32

    @property
    def step(self) -> int:  # tokens a block consumes per loop step
        return self.num_warps * (32 // self.tpr) * self.unroll


@functools.cache
def build(c: Config):
    """(decode, combine) kernels specialised on ``c``."""
    HEAD_DIM, GROUP, EPW, TPR, WPT, UNROLL = c.head_dim, c.group, c.epw, c.tpr, c.wpt, c.unroll
    DT, PAGED, OUT, NUM_WARPS = DTYPE_CODES[c.dtype], c.paged, c.out_kind, c.num_warps
    NT = c.threads
    RPW = 32 // TPR  # row groups per warp
    STEP = c.step
    WPR = c.words_per_row
    EPT = WPT * EPW  # elements of a row per thread
    NS = UNROLL * GROUP  # scores per thread per step
    NACC = GROUP * EPT
    NSTATE = 2 * GROUP + NACC  # m[GROUP], l[GROUP], acc[GROUP][EPT]
    NOTHER = max(NS, NSTATE)  # takes both the scores and the state from another lane
    NWORDS = UNROLL * WPT
    NEG_INF = np.float32(-np.inf)
    ZERO = np.float32(0.0)

    @device_function
    def element(w, e):
        """Element e of the int64 word w, as float32."""
        if DT == 2:
            return bits_as_float((w >> (32 * e)) & 0xFFFFFFFF)
        bits = (w >> (16 * e)) & 0xFFFF
        if DT == 1:
            return bits_as_float(bits << 16)
        return half_as_float(bits)

    @device_function
    def store(out, b, h, s, d, x):
        if OUT != OUT_BF16:  # float32, or float16 through the array's own conversion
            out[b, h, s, d] = x
        else:
            out[b, h, s, d] = np.int16(bf16_bits(x))

    if SIMULATOR:
        XMAX = NOTHER

        @device_function
        def exchange(src, dst, n, off):
            scratch = cuda.shared.array((NT, XMAX), np.float32)
            tid = cuda.threadIdx.x
            for i in range(n):
                scratch[tid, i] = src[i]
            cuda.syncthreads()
            for i in range(n):
                dst[i] = scratch[tid ^ off, i]
            cuda.syncthreads()
    else:
        @device_function
        def exchange(src, dst, n, off):
            for i in range(n):
                dst[i] = cuda.shfl_xor_sync(FULL_MASK, src[i], off)

    @device_function
    def find_pages(table, b, base, rg, end, page_size, pages):
        """Paged: the pool page of each of this row group's UNROLL tokens at step ``base``
        (looked up a step before its K/V rows are loaded, so those loads never wait for it)."""
        if PAGED:
            for u in range(UNROLL):
                t = base + rg * UNROLL + u
                page = np.int64(0)
                if t < end:
                    # unsigned 32-bit division: numba's int64 // keeps Python's floor semantics
                    # for negative numbers, several times the instructions
                    page = np.int64(table[b, np.uint32(t) // np.uint32(page_size)])
                pages[u] = page

    @device_function
    def load_step(kw, vw, pages, b, kvh, base, rg, lane_in_row, end, page_size, kbuf, vbuf):
        """The K/V words of this lane for the UNROLL tokens of row group rg at step ``base``
        (zeros past ``end``: rows past a sequence's length are never read)."""
        for u in range(UNROLL):
            t = base + rg * UNROLL + u
            p0 = b
            p1 = t
            if PAGED:
                p0 = pages[u]
                p1 = np.int64(np.uint32(t) % np.uint32(page_size))
            for i in range(WPT):
                j = lane_in_row + i * TPR
                if t < end and j < WPR:
                    kbuf[u * WPT + i] = kw[p0, p1, kvh, j]
                    vbuf[u * WPT + i] = vw[p0, p1, kvh, j]
                else:
                    kbuf[u * WPT + i] = 0
                    vbuf[u * WPT + i] = 0

    @kernel_function(NT, c.min_blocks)
    def decode(qw, kw, vw, seq_lens, table, out, lse, num_chunks, group_size, page_size,
               split_len, qk_scale):
        tid = cuda.threadIdx.x
        lane = tid & 31
        warp = tid >> 5
        lane_in_row = lane % TPR
        rg = warp * RPW + lane // TPR
        kvh = cuda.blockIdx.x // num_chunks
        chunk = cuda.blockIdx.x % num_chunks
        b = cuda.blockIdx.y
        split = cuda.blockIdx.z
        head0 = kvh * group_size + chunk * GROUP
        n_heads = min(GROUP, group_size - chunk * GROUP)
        start = split * split_len
        end = min(start + split_len, seq_lens[b])

        q = cuda.local.array(NACC, np.float32)
        for h in range(GROUP):
            for i in range(WPT):
                j = lane_in_row + i * TPR
                w = np.int64(0)
                if h < n_heads and j < WPR:
                    w = qw[b, head0 + h, j]
                for e in range(EPW):
                    q[h * EPT + i * EPW + e] = element(w, e) * qk_scale

        st = cuda.local.array(NSTATE, np.float32)
        other = cuda.local.array(NOTHER, np.float32)  # the exchange's landing buffer
        for h in range(GROUP):
            st[h] = NEG_INF
            st[GROUP + h] = ZERO
        for i in range(NACC):
            st[2 * GROUP + i] = ZERO

        kbuf = cuda.local.array(NWORDS, np.int64)
        vbuf = cuda.local.array(NWORDS, np.int64)
        knext = cuda.local.array(NWORDS, np.int64)
        vnext = cuda.local.array(NWORDS, np.int64)
        s = cuda.local.array(NS, np.float32)
        pages = cuda.local.array(UNROLL, np.int64)
        find_pages(table, b, start, rg, end, page_size, pages)
        load_step(kw, vw, pages, b, kvh, start, rg, lane_in_row, end, page_size, kbuf, vbuf)
        find_pages(table, b, start + STEP, rg, end, page_size, pages)
        base = start
        while base < end:  # the same trip count for the whole block (exchange needs it)
            # the next step's loads go out before this step's arithmetic, and the page lookup
            # of the step after that
            load_step(kw, vw, pages, b, kvh, base + STEP, rg, lane_in_row, end, page_size,
                      knext, vnext)
            find_pages(table, b, base + 2 * STEP, rg, end, page_size, pages)
            for u in range(UNROLL):
                for h in range(GROUP):
                    s[u * GROUP + h] = ZERO
                for i in range(WPT):
                    w = kbuf[u * WPT + i]
                    for e in range(EPW):
                        kf = element(w, e)
                        for h in range(GROUP):
                            s[u * GROUP + h] += q[h * EPT + i * EPW + e] * kf
            off = TPR // 2
            while off > 0:  # sum the row's partial dot products across its TPR lanes
                exchange(s, other, NS, off)
                for i in range(NS):
                    s[i] += other[i]
                off //= 2
            for h in range(GROUP):
                m_old = st[h]
                m_new = m_old
                for u in range(UNROLL):
                    if base + rg * UNROLL + u < end:
                        m_new = max(m_new, s[u * GROUP + h])
                # nothing seen yet (this row group's tokens all past the end): state unchanged
                alpha = np.float32(1.0) if m_new == NEG_INF else math.exp2(m_old - m_new)
                l_new = st[GROUP + h] * alpha
                for u in range(UNROLL):  # s becomes the probabilities p
                    p = ZERO
                    if base + rg * UNROLL + u < end:
                        p = math.exp2(s[u * GROUP + h] - m_new)
                    s[u * GROUP + h] = p
                    l_new += p
                st[GROUP + h] = l_new
                st[h] = m_new
                for i in range(EPT):
                    st[2 * GROUP + h * EPT + i] *= alpha
            for u in range(UNROLL):
                for i in range(WPT):
                    w = vbuf[u * WPT + i]
                    for e in range(EPW):
                        vf = element(w, e)
                        for h in range(GROUP):
                            st[2 * GROUP + h * EPT + i * EPW + e] += s[u * GROUP + h] * vf
            for i in range(NWORDS):
                kbuf[i] = knext[i]
                vbuf[i] = vnext[i]
            base += STEP

        # merge the row groups of each warp (lanes TPR apart): lanes [0, TPR) get the warp's state
        off = TPR
        while off < 32:
            exchange(st, other, NSTATE, off)
            for h in range(GROUP):
                m_new = max(st[h], other[h])
                w_self = ZERO
                w_other = ZERO
                if m_new != NEG_INF:
                    w_self = math.exp2(st[h] - m_new)
                    w_other = math.exp2(other[h] - m_new)
                st[GROUP + h] = st[GROUP + h] * w_self + other[GROUP + h] * w_other
                for i in range(EPT):
                    a = 2 * GROUP + h * EPT + i
                    st[a] = st[a] * w_self + other[a] * w_other
                st[h] = m_new
            off *= 2

        # merge the warps in shared memory: O = sum_w 2^(m_w - M) acc_w / sum_w 2^(m_w - M) l_w
        sm_m = cuda.shared.array((NUM_WARPS, GROUP), np.float32)
        sm_l = cuda.shared.array((NUM_WARPS, GROUP), np.float32)
        sm_acc = cuda.shared.array((NUM_WARPS, GROUP, HEAD_DIM), np.float32)
        if lane < TPR:
            for h in range(GROUP):
                for i in range(WPT):
                    j = lane_in_row + i * TPR
                    if j < WPR:
                        for e in range(EPW):
                            sm_acc[warp, h, j * EPW + e] = st[2 * GROUP + h * EPT + i * EPW + e]
                if lane == 0:
                    sm_m[warp, h] = st[h]
                    sm_l[warp, h] = st[GROUP + h]
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
                o = sum_o / sum_l
                lse_h = (big + math.log2(sum_l)) * np.float32(LN2)
            store(out, b, head0 + h, split, d, o)
            if d == 0:
                lse[b, head0 + h, split] = lse_h
            idx += NT

    @kernel_function(NT)
    def combine(part_out, part_lse, out, lse, num_splits):
        """out[b, h] = sum_s w_s part_out[b, h, s] / sum_s w_s, w_s = exp(lse_s - max lse)."""
        h = cuda.blockIdx.x
        b = cuda.blockIdx.y
        big = NEG_INF
        for sp in range(num_splits):
            big = max(big, part_lse[b, h, sp])
        total = ZERO
        if big != NEG_INF:
            for sp in range(num_splits):
                total += math.exp2((part_lse[b, h, sp] - big) * np.float32(LOG2E))
        d = cuda.threadIdx.x
        while d < HEAD_DIM:
            o = ZERO
            lse_h = NEG_INF
            if big != NEG_INF:
                for sp in range(num_splits):
                    weight = math.exp2((part_lse[b, h, sp] - big) * np.float32(LOG2E))
                    if weight > ZERO:  # an empty split's partial is never read
                        o += weight * part_out[b, h, sp, d]
                o = o / total
                lse_h = big + math.log(total)
            store(out, b, h, 0, d, o)
            if d == 0:
                lse[b, h, 0] = lse_h
            d += NT

    return decode, combine
