"""Seeded, adversarial inputs for a ``DecodeProblem``, in either KV layout.

Generation first draws the *logical* cache, ``k_logical, v_logical [batch, max_seq_len +
TAIL_ROWS, num_kv_heads, head_dim]``, then lays it out. Everything a correct kernel must not read
is poisoned so that reading it shows up in the output:

* rows past a sequence's length, the longest sequence's included (the dense cache keeps at
  least TAIL_ROWS rows past the longest, its row count rounded up to a multiple of ROW_BLOCK as
  a real cache is allocated; in the paged layout, the tail of each last page): K rows
  drawn like real keys, so a leaked row gets a normal softmax weight, and V rows of
  +-``POISON_V``, so that weight drags the output far off (a finite value: some kernels legally
  load a whole tile and mask the scores, and 0 * finite is 0);
* pool pages no sequence uses: NaN in K and V. The block table's entries past a sequence's last
  page (TAIL_PAGES more columns than the longest sequence needs) point at such pages, so a
  kernel that walks too far reads NaN.

Pages are handed to sequences in a shuffled order (``seed``). The poison values come from their
own generator (``poison_seed``): the same logical cache with two poison seeds must give
bit-identical outputs from a kernel that reads only what it should.

Keys have occasional 4x "spike" tokens so the running maximum of the online softmax moves late in
a sequence, which exercises the rescaling path.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from specs.problem import DecodeProblem, ProblemError

POISON_V = 1.0e4  # finite in fp16/bf16/fp32, and ~1e4x the size of a real value
SPIKE_PROB = 0.02  # fraction of keys scaled up ...
SPIKE_SCALE = 4.0  # ... by this factor, so late tokens can raise the softmax maximum
TAIL_ROWS = 64  # poisoned rows past the *longest* sequence too (a tile a kernel might overrun)
ROW_BLOCK = 64  # the dense cache's rows per sequence are a multiple of this (pages can view it)
TAIL_PAGES = 1  # block-table columns past the longest sequence's pages, pointing at NaN pages

TORCH_DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}


def default_device() -> torch.device:
    return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")


@dataclass
class DecodeInputs:
    """The tensors of one problem instance, as every implementation receives them.

    ``k``/``v`` are in the problem's layout (dense cache or page pool); ``k_logical``/``v_logical``
    are the dense logical cache the reference reads (the same tensors for the dense layout).
    """

    problem: DecodeProblem
    q: torch.Tensor  # [batch, num_q_heads, head_dim]
    k: torch.Tensor  # dense [batch, max_seq_len, Hkv, D] or pool [num_pages, page_size, Hkv, D]
    v: torch.Tensor
    seq_lens: torch.Tensor  # int32 [batch]
    block_table: torch.Tensor | None  # int32 [batch, max_pages_per_seq] (paged only)
    k_logical: torch.Tensor  # [batch, max_seq_len, Hkv, D]
    v_logical: torch.Tensor
    seed: int

    @property
    def device(self) -> torch.device:
        return self.q.device

    def new_outputs(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Output buffers ``out [B, Hq, D]`` (input dtype) and ``lse [B, Hq]`` (float32), NaN."""
        p = self.problem
        out = torch.full((p.batch, p.num_q_heads, p.head_dim), float("nan"),
                         dtype=self.q.dtype, device=self.device)
        lse = torch.full((p.batch, p.num_q_heads), float("nan"), dtype=torch.float32,
                         device=self.device)
        return out, lse


def _generator(device: torch.device, seed: int) -> torch.Generator:
    return torch.Generator(device=device).manual_seed(int(seed))


def make_logical(problem: DecodeProblem, seed: int, device: torch.device | None = None,
                 poison_seed: int | None = None):
    """Draw ``q, k_logical, v_logical`` (input dtype) with rows past each length poisoned."""
    device = torch.device(device) if device is not None else default_device()
    p = problem
    dtype = TORCH_DTYPES[p.dtype]
    g = _generator(device, seed)
    rows = -(-(p.max_seq_len + TAIL_ROWS) // ROW_BLOCK) * ROW_BLOCK
    shape = (p.batch, rows, p.num_kv_heads, p.head_dim)
    q = torch.randn(p.batch, p.num_q_heads, p.head_dim, generator=g, device=device)
    k = torch.randn(shape, generator=g, device=device)
    spikes = torch.rand(shape[:3] + (1,), generator=g, device=device) < SPIKE_PROB
    k = torch.where(spikes, k * SPIKE_SCALE, k)
    v = torch.randn(shape, generator=g, device=device)
    _poison_tail(p, v, poison_seed if poison_seed is not None else seed + 1)
    return q.to(dtype), k.to(dtype), v.to(dtype)


def _poison_values(shape: tuple, g: torch.Generator, device: torch.device) -> torch.Tensor:
    """+-POISON_V with random signs and sizes in [1, 2) x POISON_V."""
    sign = torch.randint(0, 2, shape, generator=g, device=device) * 2 - 1
    return sign * (1 + torch.rand(shape, generator=g, device=device)) * POISON_V


def _poison_tail(p: DecodeProblem, v: torch.Tensor, poison_seed: int) -> None:
    """V rows at or past each sequence's length become poison (K rows stay key-like)."""
    lens = torch.tensor(p.seq_lens, device=v.device)
    tail = torch.arange(v.shape[1], device=v.device)[None, :] >= lens[:, None]  # [B, S]
    n = int(tail.sum())
    if n:
        g = _generator(v.device, poison_seed)
        v[tail] = _poison_values((n,) + tuple(v.shape[2:]), g, v.device).to(v.dtype)


def _pad_rows(k: torch.Tensor, v: torch.Tensor, rows: int, poison_seed: int):
    """Append ``rows`` poisoned rows (keys drawn like real ones, V poison) to the logical cache,
    so a partial last page has a poisoned tail even for the longest sequence."""
    g = _generator(k.device, poison_seed + 7)
    shape = (k.shape[0], rows) + tuple(k.shape[2:])
    k_pad = torch.randn(shape, generator=g, device=k.device).to(k.dtype)
    v_pad = _poison_values(shape, g, k.device).to(v.dtype)
    return torch.cat([k, k_pad], dim=1), torch.cat([v, v_pad], dim=1)


def build_inputs(problem: DecodeProblem, q: torch.Tensor, k_logical: torch.Tensor,
                 v_logical: torch.Tensor, seed: int, poison_seed: int | None = None) -> DecodeInputs:
    """Lay the logical cache out as the problem says (the paged layout shuffles pages by ``seed``)."""
    device = q.device
    seq_lens = torch.tensor(problem.seq_lens, dtype=torch.int32, device=device)
    if problem.layout == "dense":
        return DecodeInputs(problem, q, k_logical, v_logical, seq_lens, None, k_logical, v_logical,
                            seed)
    k_pool, v_pool, table = _to_paged(problem, k_logical, v_logical, seed,
                                      poison_seed if poison_seed is not None else seed + 1)
    return DecodeInputs(problem, q, k_pool, v_pool, seq_lens, table, k_logical, v_logical, seed)


def _to_paged(p: DecodeProblem, k_logical: torch.Tensor, v_logical: torch.Tensor, seed: int,
              poison_seed: int):
    device = k_logical.device
    ps, max_pages = p.page_size, p.max_pages_per_seq
    pages_needed = torch.tensor([p.pages_for(n) for n in p.seq_lens], device=device)
    used = int(pages_needed.sum())
    unused = max(1, used // 8)  # pages no sequence owns, NaN-filled, so stray reads are seen
    num_pages = used + unused
    order = torch.randperm(num_pages, generator=_generator(device, seed + 2), device=device)
    cols = max_pages + TAIL_PAGES
    used_mask = torch.arange(cols, device=device)[None, :] < pages_needed[:, None]  # [B, cols]
    # Entries past a sequence's last page point at unused (NaN) pages, never out of the pool.
    spare = order[used:]
    table = spare[torch.arange(p.batch * cols, device=device) % unused].view(p.batch, cols)
    table = table.clone()
    table[used_mask] = order[:used]

    pad = max_pages * ps - k_logical.shape[1]
    if pad > 0:
        k_logical, v_logical = _pad_rows(k_logical, v_logical, pad, poison_seed)
    rows = max_pages * ps
    k_pool = torch.full((num_pages, ps) + tuple(k_logical.shape[2:]), float("nan"),
                        dtype=k_logical.dtype, device=device)
    v_pool = torch.full_like(k_pool, float("nan"))
    for logical, pool in ((k_logical, k_pool), (v_logical, v_pool)):
        # Rows past a length inside a used page come from the logical tail: already poisoned.
        pages = logical[:, :rows].reshape(p.batch, max_pages, ps, *logical.shape[2:])
        pool[table[used_mask].long()] = pages[used_mask[:, :max_pages]]
    return k_pool, v_pool, table.to(torch.int32).contiguous()


def make_inputs(problem: DecodeProblem, seed: int = 0, device: torch.device | str | None = None,
                poison_seed: int | None = None) -> DecodeInputs:
    """The seeded inputs of ``problem``: same seed, same device -> same tensors."""
    q, k, v = make_logical(problem, seed, device, poison_seed)
    return build_inputs(problem, q, k, v, seed, poison_seed)


# ---- validation of tensors against the problem (run before any kernel launch) --------------
def _expect(name: str, tensor: torch.Tensor, shape: tuple, dtype: torch.dtype,
            device: torch.device) -> None:
    if not isinstance(tensor, torch.Tensor):
        raise ProblemError(f"{name}: expected a torch.Tensor, got {type(tensor).__name__}")
    if tuple(tensor.shape) != tuple(shape):
        raise ProblemError(f"{name}.shape={tuple(tensor.shape)}: expected {tuple(shape)}")
    if tensor.dtype != dtype:
        raise ProblemError(f"{name}.dtype={tensor.dtype}: expected {dtype} "
                           "(q, k, v share the problem's dtype)")
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
    B, Hq, Hkv, D = p.batch, p.num_q_heads, p.num_kv_heads, p.head_dim
    _expect("q", inputs.q, (B, Hq, D), dtype, dev)
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
            _expect(name, t, (B, inputs.k.shape[1], Hkv, D), dtype, dev)
        if inputs.block_table is not None:
            raise ProblemError("block_table: must be None for the dense layout")
    else:
        num_pages = inputs.k.shape[0] if inputs.k.dim() == 4 else -1
        for name in ("k", "v"):
            _expect(name, getattr(inputs, name), (num_pages, p.page_size, Hkv, D), dtype, dev)
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
    if out is not None:
        _expect("out", out, (B, Hq, D), dtype, dev)
    if lse is not None:
        _expect("lse", lse, (B, Hq), torch.float32, dev)
    # Kernels address v with k's strides and read rows as contiguous vectors.
    for name, t in (("q", inputs.q), ("k", inputs.k), ("v", inputs.v), ("out", out)):
        if t is not None and t.stride(-1) != 1:
            raise ProblemError(f"{name}.stride(-1)={t.stride(-1)}: the head_dim axis must be "
                               "contiguous (stride 1)")
    if inputs.k.stride() != inputs.v.stride():
        raise ProblemError(f"v.stride()={inputs.v.stride()} differs from k.stride()="
                           f"{inputs.k.stride()}: k and v must share one layout")
