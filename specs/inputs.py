"""Seeded, adversarial inputs for a ``DecodeProblem``, in either KV layout, in memory
proportional to what the problem holds.

Every value is a function of (seed, what it is, sequence, token, element), computed by a
counter-based hash in integer tensor arithmetic (``_hash``): the same seed gives bit-identical
inputs on a GPU, on a CPU and in any layout, and the K/V rows of each sequence are drawn straight
into the layout, a slice of tokens at a time (``SLICE_VALUES``), never as batch x longest and
never as a float32 copy of the whole. The paged pool holds the pages in use plus the poison pages;
the dense cache is ``[batch, rows, Hkv, D]`` (batch x longest: that is what a dense cache is).

Values are the sum of two 16-bit uniforms scaled to unit variance (a triangular draw on
+-2.45: exact integer arithmetic and one float32 rounding, so no device's transcendental
functions enter). Keys have occasional 4x "spike" tokens
so the running maximum of the online softmax moves late in a sequence, which exercises the
rescaling path.

Everything a correct kernel must not read is poisoned so that reading it shows up in the output:

* rows past a sequence's length, the longest sequence's included (the dense cache keeps at
  least TAIL_ROWS rows past the longest, its row count rounded up to a multiple of ROW_BLOCK as
  a real cache is allocated; in the paged layout, the tail of each last page): K rows drawn like
  real keys, so a leaked row gets a normal softmax weight, and V rows of +-``POISON_V`` x [1, 2),
  so that weight drags the output far off (a finite value: some kernels legally load a whole
  tile and mask the scores, and 0 * finite is 0);
* rows before a window's start (``window``): poisoned as rows past the end are, so a kernel
  that attends more than the window's tokens is far off;
* pool pages no sequence uses: NaN in K and V. The block table's entries past a sequence's last
  page (TAIL_PAGES more columns than the longest sequence needs) point at such pages, so a
  kernel that walks too far reads NaN.

An fp8 cache (``kv_dtype``) stores each real value x as fp8(x / scale), its scale a float32 per
tensor or per KV head (``k_scale``/``v_scale``, [1] or [Hkv]); the value it stands for is the
stored one times the scale, exactly what the oracle reads. The scales are seeded, distinct per
head, and have 4-bit significands (m / 8 x 2^e, m in 8..15), so every dequantised value is
exact in bf16 and fp16 too: a kernel may apply a scale before or after its products without a
rounding the tolerance would have to allow. The finite V poison is the fp8 dtype's largest
finite value (x [1/2, 1)) stored as is, e4m3's 448 being below POISON_V: V's scales are large
(2 to 7.5) so that it dequantises far above every real V; the unused pages are NaN (both fp8
dtypes have one).

Pages are handed to sequences in a shuffled order (``page_seed``, by default ``seed``). The poison
values come from their own stream (``poison_seed``): the same cache with two poison seeds must
give bit-identical outputs from a kernel that reads only what it should.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Sequence

import torch

from specs.problem import INT32_MAX, DecodeProblem, ProblemError

POISON_V = 1.0e4  # finite in fp16/bf16/fp32, and ~1e4x the size of a real value
SPIKE_PROB = 0.02  # fraction of keys scaled up ...
SPIKE_SCALE = 4.0  # ... by this factor, so late tokens can raise the softmax maximum
TAIL_ROWS = 64  # poisoned rows past the *longest* sequence too (a tile a kernel might overrun)
ROW_BLOCK = 64  # the dense cache's rows per sequence are a multiple of this (pages can view it)
TAIL_PAGES = 1  # block-table columns past the longest sequence's pages, pointing at NaN pages
UNUSED_PAGES = 8  # the pool has one NaN page per this many pages in use (at least one)
SLICE_VALUES = 1 << 22  # values drawn per step: bounds the generator's scratch memory (~0.2 GB)

TORCH_DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32,
                "float8_e4m3fn": torch.float8_e4m3fn, "float8_e5m2": torch.float8_e5m2}
STREAMS = {"q": 1, "k": 2, "v": 3, "spike": 4, "poison": 5, "scale": 6}  # what a value is, in its hash
# fp8 scales m / 8 x 2^e, m distinct per head: K's (|x| <= ~10 with spikes) are small enough
# that its values use most of e4m3's range (448); V's are large, so its real values (|x| <=
# 2.45) are stored small and its poison, the largest fp8 value stored as is, dequantises to at
# least 448 x 2 / 2 = 448, 180x the largest real V (16-bit caches: 1e4, 4000x)
K_SCALE_EXPONENTS = (-2, -3, -4)
V_SCALE_EXPONENTS = (1, 2)
MASK32 = 0xFFFFFFFF
GOLDEN = 0x9E3779B9  # 2^32 / golden ratio: spreads consecutive counters over the hash's input
TRIANGLE_MEAN = 65535  # the mean of two uniforms on [0, 65535] ...
TRIANGLE_SCALE = 6.0**0.5 / 65536  # ... and 1 / their standard deviation (65536 / sqrt(6))


def default_device() -> torch.device:
    return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")


# ---- the counter-based generator ------------------------------------------------------------
def _shr(x: torch.Tensor, bits: int) -> torch.Tensor:
    """Logical right shift of int32 ``x`` (torch's is arithmetic)."""
    return (x >> bits) & ((1 << (32 - bits)) - 1)


def _hash(x: torch.Tensor) -> torch.Tensor:
    """A 32-bit mixing function (two xor-shift-multiply rounds, hash-prospector constants) on
    int32, whose products wrap modulo 2^32 (two's complement) on every device torch runs on."""
    x = x ^ _shr(x, 16)
    x = x * 0x21F0AAAD
    x = x ^ _shr(x, 15)
    x = x * 0x735A2D97
    return x ^ _shr(x, 15)


def _int32(value: int) -> int:
    """``value`` modulo 2^32, as the int32 with those bits."""
    value &= MASK32
    return value - (1 << 32) if value >= 1 << 31 else value


def _key(*words: int) -> int:
    """A 32-bit key from small integers (seed, stream), folded through the hash."""
    k = 0
    for w in words:
        k = int(_hash(torch.tensor([_int32(k + (int(w) & MASK32) * 0x2545F491)], dtype=torch.int32))[0])
    return k


def _token_keys(key: int, seqs: torch.Tensor, toks: torch.Tensor) -> torch.Tensor:
    """One 32-bit key per (sequence id, token), for the values of that token's row."""
    k = _hash(seqs.to(torch.int32) * 0x01000193 + key)
    return _hash(k + toks.to(torch.int32) * _int32(GOLDEN))


def _bits(keys: torch.Tensor, count: int) -> torch.Tensor:
    """``count`` hashes per key: int32 [n, count], 32 random bits each."""
    j = torch.arange(count, device=keys.device, dtype=torch.int32)
    return _hash(keys[:, None] + j[None, :] * 0x6A09E667 + 1)


def _triangular(keys: torch.Tensor, width: int) -> torch.Tensor:
    """float32 [n, width]: the sum of two 16-bit uniforms of one hash (a triangular draw),
    centred and scaled to unit variance (exact integer sums, one rounding)."""
    h = _bits(keys, width)
    return ((h & 0xFFFF) + _shr(h, 16) - TRIANGLE_MEAN).to(torch.float32) * TRIANGLE_SCALE


def _uniform(keys: torch.Tensor, width: int) -> torch.Tensor:
    """float32 [n, width] in [0, 1), 24 bits each."""
    return _shr(_bits(keys, width), 8).to(torch.float32) * 2.0**-24


class Draw:
    """The seeded values of one problem: q, and the K/V rows of any (sequence, token), real
    below the sequence's length and poison (key-like K, +-POISON_V V) at or past it."""

    def __init__(self, problem: DecodeProblem, seed: int, poison_seed: int | None = None,
                 seq_ids: Sequence[int] | None = None):
        self.problem = problem
        self.seed = int(seed)
        self.keys = {s: _key(self.seed, n) for s, n in STREAMS.items()}
        self.keys["poison"] = _key(poison_seed if poison_seed is not None else self.seed + 1,
                                   STREAMS["poison"])
        # which draw each batch entry is: a permuted batch draws the permuted sequences' values
        self.seq_ids = list(seq_ids) if seq_ids is not None else list(range(problem.batch))
        if len(self.seq_ids) != problem.batch:
            raise ProblemError(f"seq_ids: {len(self.seq_ids)} ids for a batch of {problem.batch}")
        for i, s in enumerate(self.seq_ids):
            if isinstance(s, bool) or not isinstance(s, int) or not 0 <= s <= INT32_MAX:
                raise ProblemError(f"seq_ids[{i}]={s!r}: must be an integer in [0, {INT32_MAX}]")
        self.dtype = TORCH_DTYPES[problem.dtype]
        self.kv_dtype = TORCH_DTYPES[problem.cache.storage_dtype(problem.query)]
        self._on: dict[torch.device, tuple[torch.Tensor, torch.Tensor]] = {}
        self._scales: dict[torch.device, tuple[torch.Tensor, torch.Tensor]] = {}

    def scales(self, device: torch.device) -> tuple[torch.Tensor, torch.Tensor] | None:
        """(k_scale, v_scale) of a quantised cache, float32 [Hkv] (per head) or [1]; None
        otherwise. Distinct per head (up to 8 heads), 4-bit significands (see above)."""
        p = self.problem
        if not p.cache.quantised:
            return None
        if device not in self._scales:
            n = p.cache.scales_per_tensor(p.query)
            one = torch.zeros(1, dtype=torch.int32)
            bits = _bits(_token_keys(self.keys["scale"], one, one), 4)[0] & 0x7FFFFFFF
            heads = torch.arange(n)
            scales = []
            for i, exponents in enumerate((K_SCALE_EXPONENTS, V_SCALE_EXPONENTS)):
                # significands 8..15 in turn from a seeded start: distinct for up to 8 heads,
                # and two of them never differ by a power of two (15 / 8 < 2)
                significand = 8 + (int(bits[i]) + heads) % 8
                exponent = torch.tensor(exponents)[(int(bits[2 + i]) + heads * 5) % len(exponents)]
                scales.append((significand / 8 * torch.exp2(exponent.double())).float())
            k_scale, v_scale = scales
            self._scales[device] = (k_scale.to(device), v_scale.to(device))
        return self._scales[device]

    def _per_entry(self, device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Each batch entry's sequence id, length and first attended token (a window's start)
        on ``device`` (made once, not per slice)."""
        if device not in self._on:
            self._on[device] = (torch.tensor(self.seq_ids, device=device),
                                torch.tensor(self.problem.seq_lens, device=device),
                                torch.tensor(self.problem.window_starts, device=device))
        return self._on[device]

    def q(self, device: torch.device) -> torch.Tensor:
        """Rows ``[batch * q_len, Hq, D]``, row b * q_len + i drawn for (sequence, query token i)."""
        p = self.problem
        seqs = self._per_entry(device)[0].repeat_interleave(p.q_len)
        tokens = torch.arange(p.q_len, device=device).repeat(p.batch)
        keys = _token_keys(self.keys["q"], seqs, tokens)
        return _triangular(keys, p.num_q_heads * p.head_dim).view(p.q_rows, p.num_q_heads, p.head_dim).to(self.dtype)

    def rows(self, b: torch.Tensor, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """K and V rows ``[n, Hkv * D]`` in the problem's dtype of batch entries ``b`` at tokens
        ``t`` (int64 [n] each, on the device to draw on)."""
        p = self.problem
        hkv, width = p.num_kv_heads, p.num_kv_heads * p.head_dim
        ids, lengths, firsts = self._per_entry(b.device)
        seqs = ids[b]
        k = _triangular(_token_keys(self.keys["k"], seqs, t), width).view(-1, hkv, p.head_dim)
        spikes = _uniform(_token_keys(self.keys["spike"], seqs, t), hkv) < SPIKE_PROB
        k = torch.where(spikes[..., None], k * SPIKE_SCALE, k).view(-1, width)
        v = _triangular(_token_keys(self.keys["v"], seqs, t), width)
        scales = self.scales(b.device)
        if scales is not None:  # stored values: the real ones over their head's scale
            k_scale, v_scale = (sc.repeat_interleave(p.head_dim) if sc.numel() > 1 else sc
                                for sc in scales)
            k, v = k / k_scale, v / v_scale
        poisoned = (t >= lengths[b]) | (t < firsts[b])  # past the end, or before the window
        if bool(poisoned.any()):
            u = _uniform(_token_keys(self.keys["poison"], seqs[poisoned], t[poisoned]),
                         2 * width).view(-1, width, 2)
            sign = torch.where(u[..., 0] < 0.5, -1.0, 1.0)
            if scales is None:
                v[poisoned] = sign * (1 + u[..., 1]) * POISON_V
            else:  # the largest finite fp8 value (x [1/2, 1)), stored as is
                v[poisoned] = sign * (1 + u[..., 1]) / 2 * torch.finfo(self.kv_dtype).max
        return k.to(self.kv_dtype), v.to(self.kv_dtype)


def _slices(total: int, width: int):
    step = max(1, SLICE_VALUES // max(width, 1))
    for start in range(0, total, step):
        yield start, min(total, start + step)


# ---- the inputs --------------------------------------------------------------------------------
@dataclass
class DecodeInputs:
    """The tensors of one problem instance, as every implementation receives them.

    ``k``/``v`` are in the problem's layout (dense cache or page pool). ``starts`` is set only
    for inputs read back from saved rows (``harness.cases``): ``k``/``v`` then hold each
    sequence's rows one after the other, ``[sum(seq_lens), Hkv, D]``, for the reference alone.
    """

    problem: DecodeProblem
    q: torch.Tensor  # [batch * q_len, num_q_heads, head_dim]
    k: torch.Tensor  # dense [batch, rows, Hkv, D] or pool [num_pages, page_size, Hkv, D]
    v: torch.Tensor
    seq_lens: torch.Tensor  # int32 [batch]
    block_table: torch.Tensor | None  # int32 [batch, max_pages_per_seq] (paged only)
    seed: int
    starts: list[int] | None = None  # packed rows: sequence b's first row
    # an fp8 cache's float32 scales, [Hkv] (per head) or [1] (per tensor); None when unquantised
    k_scale: torch.Tensor | None = None
    v_scale: torch.Tensor | None = None

    @property
    def device(self) -> torch.device:
        return self.q.device

    @property
    def nbytes(self) -> int:
        """Bytes held on the device (q, the cache in its layout, lengths, block table)."""
        return sum(t.nbytes for t in (self.q, self.k, self.v, self.seq_lens, self.block_table,
                                      self.k_scale, self.v_scale) if t is not None)

    def rows(self, b: int, start: int, stop: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Sequence ``b``'s K and V rows ``start:stop`` ``[n, Hkv, D]``, read through the layout
        (views for the dense and packed layouts, a gather of ``stop - start`` rows when paged)."""
        if self.starts is not None:
            s = self.starts[b]
            return self.k[s + start:s + stop], self.v[s + start:s + stop]
        if self.block_table is None:
            return self.k[b, start:stop], self.v[b, start:stop]
        ps = self.problem.page_size
        t = torch.arange(start, stop, device=self.device)
        pages = self.block_table[b, t // ps].long()
        return self.k[pages, t % ps], self.v[pages, t % ps]

    def values64(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Rows ``[n, Hkv, D]`` of ``rows()`` as the float64 values they stand for (stored value
        x its head's scale for an fp8 cache: exact in float64)."""
        if self.k_scale is None:
            return k.double(), v.double()
        return (k.double() * self.k_scale.double().view(1, -1, 1),
                v.double() * self.v_scale.double().view(1, -1, 1))

    def new_outputs(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Output buffers ``out [B * q_len, Hq, D]`` (input dtype) and ``lse [B * q_len, Hq]``
        (float32), NaN."""
        p = self.problem
        out = torch.full((p.q_rows, p.num_q_heads, p.head_dim), float("nan"),
                         dtype=self.q.dtype, device=self.device)
        lse = torch.full((p.q_rows, p.num_q_heads), float("nan"), dtype=torch.float32,
                         device=self.device)
        return out, lse


def dense_rows(problem: DecodeProblem) -> int:
    """Rows per sequence of the dense cache: the longest plus TAIL_ROWS, to ROW_BLOCK."""
    return -(-(problem.max_seq_len + TAIL_ROWS) // ROW_BLOCK) * ROW_BLOCK


def _dense(problem: DecodeProblem, draw: Draw, device: torch.device):
    p = problem
    rows = dense_rows(p)
    width = p.num_kv_heads * p.head_dim
    shape = (p.batch, rows, p.num_kv_heads, p.head_dim)
    k = torch.empty(shape, dtype=draw.kv_dtype, device=device)
    v = torch.empty_like(k)
    kf, vf = k.view(-1, width), v.view(-1, width)
    for start, stop in _slices(p.batch * rows, width):
        i = torch.arange(start, stop, device=device)
        kf[start:stop], vf[start:stop] = draw.rows(i // rows, i % rows)
    return k, v


def page_order(num_pages: int, page_seed: int) -> torch.Tensor:
    """The shuffled order pages are handed out in (on the CPU: the same on every device)."""
    return torch.randperm(num_pages, generator=torch.Generator().manual_seed(int(page_seed) + 2))


def _pool_pages(problem: DecodeProblem) -> tuple[list[int], int, int]:
    """Pages each sequence needs, their sum, and the pool's pages: those plus the unused ones."""
    pages_needed = [problem.pages_for(n) for n in problem.seq_lens]
    used = sum(pages_needed)
    # pages no sequence owns, NaN-filled, so stray reads are seen
    return pages_needed, used, used + max(1, used // UNUSED_PAGES)


def _paged(problem: DecodeProblem, draw: Draw, device: torch.device, page_seed: int):
    p = problem
    ps, cols = p.page_size, p.max_pages_per_seq + TAIL_PAGES
    pages_needed, used, num_pages = _pool_pages(p)
    unused = num_pages - used
    order = page_order(num_pages, page_seed).to(torch.int32)
    # Entries past a sequence's last page point at unused (NaN) pages, never out of the pool
    # (built in int32: the table is batch x longest / page_size entries, the pages it owns not)
    table = order[used:][torch.arange(p.batch * cols, dtype=torch.int32) % unused].view(p.batch, cols)
    needed = torch.tensor(pages_needed, dtype=torch.int32)
    used_mask = torch.arange(cols, dtype=torch.int32)[None, :] < needed[:, None]  # [B, cols]
    table[used_mask] = order[:used]
    table = table.to(device)

    width = p.num_kv_heads * p.head_dim
    k = torch.full((num_pages, ps, p.num_kv_heads, p.head_dim), float("nan"), dtype=draw.kv_dtype,
                   device=device)
    v = torch.full_like(k, float("nan"))
    kf, vf = k.view(-1, width), v.view(-1, width)
    # every row of every page in use, sequence after sequence (a last page's tail included)
    ends = torch.tensor(pages_needed, device=device).cumsum(0) * ps
    firsts = ends - torch.tensor(pages_needed, device=device) * ps  # each sequence's first row
    for start, stop in _slices(used * ps, width):
        i = torch.arange(start, stop, device=device)
        b = torch.searchsorted(ends, i, right=True)
        t = i - firsts[b]
        rows = table[b, t // ps].long() * ps + t % ps
        kf[rows], vf[rows] = draw.rows(b, t)
    return k, v, table.contiguous()


def make_inputs(problem: DecodeProblem, seed: int = 0, device: torch.device | str | None = None,
                poison_seed: int | None = None, page_seed: int | None = None,
                seq_ids: Sequence[int] | None = None) -> DecodeInputs:
    """The seeded inputs of ``problem``: same seed -> the same values on every device and in
    every layout. ``page_seed`` (default ``seed``) shuffles the pages; ``poison_seed`` (default
    ``seed + 1``) draws the poison; ``seq_ids`` (default 0..batch-1) says which draw each batch
    entry holds (a permuted batch holds the same sequences)."""
    device = torch.device(device) if device is not None else default_device()
    draw = Draw(problem, seed, poison_seed, seq_ids)
    q = draw.q(device)
    seq_lens = torch.tensor(problem.seq_lens, dtype=torch.int32, device=device)
    k_scale, v_scale = draw.scales(device) or (None, None)
    if problem.layout == "dense":
        k, v = _dense(problem, draw, device)
        return DecodeInputs(problem, q, k, v, seq_lens, None, seed, k_scale=k_scale, v_scale=v_scale)
    k, v, table = _paged(problem, draw, device, seed if page_seed is None else page_seed)
    return DecodeInputs(problem, q, k, v, seq_lens, table, seed, k_scale=k_scale, v_scale=v_scale)


def input_bytes(problem: DecodeProblem) -> int:
    """Bytes ``make_inputs`` keeps on the device for ``problem`` (before drawing anything)."""
    p = problem
    row = 2 * p.num_kv_heads * p.head_dim * p.kv_itemsize  # K and V of one token
    if p.layout == "dense":
        cache = p.batch * dense_rows(p) * row
    else:
        cache = _pool_pages(p)[2] * p.page_size * row \
            + 4 * p.batch * (p.max_pages_per_seq + TAIL_PAGES)
    return cache + p.cache.scale_bytes(p.query) + p.q_rows * p.num_q_heads * p.head_dim * p.itemsize \
        + 4 * p.batch


def repeat_kv_heads(inputs: DecodeInputs, times: int) -> DecodeInputs:
    """The same inputs with each KV head repeated ``times`` times (GQA as MHA), in its layout."""
    p = inputs.problem
    mha = p.replace(num_kv_heads=p.num_kv_heads * times)
    per_head = {name: getattr(inputs, name).repeat_interleave(times)
                for name in ("k_scale", "v_scale")
                if getattr(inputs, name) is not None and p.kv_scale == "head"}
    return dataclasses.replace(inputs, problem=mha, k=inputs.k.repeat_interleave(times, dim=2),
                               v=inputs.v.repeat_interleave(times, dim=2), **per_head)


# ---- validation of tensors against the problem (run before any kernel launch) --------------
def _expect(name: str, tensor: torch.Tensor, shape: tuple, dtype: torch.dtype,
            device: torch.device) -> None:
    if not isinstance(tensor, torch.Tensor):
        raise ProblemError(f"{name}: expected a torch.Tensor, got {type(tensor).__name__}")
    if tuple(tensor.shape) != tuple(shape):
        raise ProblemError(f"{name}.shape={tuple(tensor.shape)}: expected {tuple(shape)}")
    if tensor.dtype != dtype:
        raise ProblemError(f"{name}.dtype={tensor.dtype}: expected {dtype} (q and out in the "
                           "problem's dtype, k and v in its kv_dtype, the LSE and scales float32)")
    if tensor.device != device:
        raise ProblemError(f"{name}.device={tensor.device}: expected {device} (same as q)")


def validate_inputs(inputs: DecodeInputs, out: torch.Tensor | None = None,
                    lse: torch.Tensor | None = None) -> None:
    """Check every tensor against the problem; raise ``ProblemError`` naming the first violation.

    Reads ``seq_lens`` and the block table on the host (a sync), so call it at launch set-up,
    never inside a timed region.
    """
    p = inputs.problem
    dev = inputs.q.device
    dtype = TORCH_DTYPES[p.dtype]
    kv_dtype = TORCH_DTYPES[p.cache.storage_dtype(p.query)]
    B, Hq, Hkv, D = p.batch, p.num_q_heads, p.num_kv_heads, p.head_dim
    _expect("q", inputs.q, (p.q_rows, Hq, D), dtype, dev)
    _expect("seq_lens", inputs.seq_lens, (B,), torch.int32, dev)
    lens = inputs.seq_lens.tolist()
    if lens != list(p.seq_lens):
        raise ProblemError(f"seq_lens tensor {lens[:8]}... differs from the problem's seq_lens")
    if p.layout == "dense":
        for name in ("k", "v"):
            t = getattr(inputs, name)
            if t.dim() != 4 or t.shape[1] < p.max_seq_len:
                raise ProblemError(f"{name}.shape={tuple(t.shape)}: dense layout needs "
                                   f"[{B}, >= max(seq_lens)={p.max_seq_len}, {Hkv}, {D}]")
            _expect(name, t, (B, inputs.k.shape[1], Hkv, D), kv_dtype, dev)
        if inputs.block_table is not None:
            raise ProblemError("block_table: must be None for the dense layout")
    else:
        num_pages = inputs.k.shape[0] if inputs.k.dim() == 4 else -1
        for name in ("k", "v"):
            _expect(name, getattr(inputs, name), (num_pages, p.page_size, Hkv, D), kv_dtype, dev)
        table = inputs.block_table
        if table is None:
            raise ProblemError("block_table: required for the paged layout")
        if table.dim() != 2 or table.shape[0] != B or table.dtype != torch.int32:
            raise ProblemError(f"block_table: expected int32 [batch={B}, max_pages_per_seq], got "
                               f"{table.dtype} {tuple(table.shape)}")
        if table.shape[1] < p.max_pages_per_seq:
            b = lens.index(p.max_seq_len)
            raise ProblemError(
                f"block_table has {table.shape[1]} columns but seq_lens[{b}]={p.max_seq_len} needs "
                f"ceil({p.max_seq_len}/page_size={p.page_size})={p.max_pages_per_seq} pages")
        host = table.cpu()
        for b, n in enumerate(lens):
            row = host[b, : p.pages_for(n)]
            bad = ((row < 0) | (row >= num_pages)).nonzero()
            if len(bad):
                j = int(bad[0])
                raise ProblemError(f"block_table[{b}, {j}]={int(row[j])} is outside the page pool "
                                   f"[0, {num_pages})")
    _validate_scales(inputs, dev)
    if out is not None:
        _expect("out", out, (p.q_rows, Hq, D), dtype, dev)
    if lse is not None:
        _expect("lse", lse, (p.q_rows, Hq), torch.float32, dev)
    # Kernels address v with k's strides and read rows as contiguous vectors.
    for name, t in (("q", inputs.q), ("k", inputs.k), ("v", inputs.v), ("out", out)):
        if t is not None and t.stride(-1) != 1:
            raise ProblemError(f"{name}.stride(-1)={t.stride(-1)}: the head_dim axis must be "
                               "contiguous (stride 1)")
    if inputs.k.stride() != inputs.v.stride():
        raise ProblemError(f"v.stride()={inputs.v.stride()} differs from k.stride()="
                           f"{inputs.k.stride()}: k and v must share one layout")


def _validate_scales(inputs: DecodeInputs, device: torch.device) -> None:
    """An fp8 cache's scales: float32, one per tensor ([1]) or per KV head ([Hkv]) as the
    problem's ``kv_scale`` says, finite and positive (a host read: set-up time only)."""
    p = inputs.problem
    for name in ("k_scale", "v_scale"):
        t = getattr(inputs, name)
        if not p.cache.quantised:
            if t is not None:
                raise ProblemError(f"{name}: must be None for an unquantised cache (kv_dtype None)")
            continue
        if t is None:
            raise ProblemError(f"{name}: required for kv_dtype={p.kv_dtype!r}")
        _expect(name, t, (p.cache.scales_per_tensor(p.query),), torch.float32, device)
        if not t.is_contiguous():
            raise ProblemError(f"{name}.stride()={t.stride()}: scales must be contiguous (kernels "
                               "index them by KV head)")
        host = t.cpu()
        bad = (~torch.isfinite(host) | (host <= 0)).nonzero()
        if len(bad):
            i = int(bad[0])
            raise ProblemError(f"{name}[{i}]={float(host[i])}: a scale must be finite and > 0")
