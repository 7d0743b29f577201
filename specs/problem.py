"""The decode-attention problem, defined once.

The ``q_len`` newest tokens of each sequence (1 in plain decode; 2-16 when a speculative or
multi-token draft is verified) attend over that sequence's KV cache, which holds them too. Query
row ``r = b * q_len + i`` is token ``i`` of sequence ``b``:

    out[r, h]  = softmax(s[r, h, W_r]) . V[b, W_r, g(h)]
    lse[r, h]  = log(sum_{t in W_r} exp(s[r, h, t]))                      (natural log)
    s[r, h, t] = q[r, h] . K[b, t, g(h)] * sm_scale, then softcap * tanh(s / softcap) if set

over the tokens ``W_r = [max(0, E_r - window), E_r)`` (from 0 without a window), with
``E_r = L_b - q_len + i + 1``: causal among the query tokens, the last one seeing the whole cache

with ``g(h) = h // (num_q_heads // num_kv_heads)``: MHA when the two head counts are equal, GQA
when several query heads share a KV head, MQA when there is one KV head. ``L_b = seq_lens[b]``
(a ragged batch). Shapes:

    q    [batch * q_len, num_q_heads, head_dim]
    out  [batch * q_len, num_q_heads, head_dim]     in the query dtype
    lse  [batch * q_len, num_q_heads]               float32

The KV cache comes in two layouts holding the same logical cache (see ``specs.inputs``):

    dense  k, v        [batch, rows >= max_seq_len, num_kv_heads, head_dim]
    paged  k, v pool   [num_pages, page_size, num_kv_heads, head_dim]
           block_table int32 [batch, max_pages_per_seq]; token t of sequence b lives in page
           block_table[b, t // page_size], row t % page_size

A problem is three parts and the lengths, each part an axis of the problem that validates
itself, states its bytes and its label:

    Query   what a query is: heads, head dim, the query/output dtype, tokens per sequence
    Cache   how the cache is stored: layout, page size, the storage dtype (fp8 or the query's)
            and, for fp8, the granularity of its float32 scales
    Mask    how scores are formed and what is masked: the softmax scale, a left window of the
            last ``window`` tokens, logits soft-capped at ``softcap``

A new axis of the problem is a field of the part it belongs to (with its rule in that part's
``validate``); ``DecodeProblem`` reads every part's fields by name (``p.head_dim``,
``p.layout``), builds from them (``DecodeProblem(32, 8, 128, lens, layout="paged")``), and
serialises them flat, so a problem written before a field existed loads with its default.

A ``DecodeProblem`` is pure data: it checks itself when built and raises ``ProblemError`` naming
the parameter and the rule it breaks, so nothing invalid ever reaches a kernel.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Mapping

DTYPES = ("float16", "bfloat16", "float32")
LAYOUTS = ("dense", "paged")
DTYPE_SHORT = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32",
               "float8_e4m3fn": "e4m3", "float8_e5m2": "e5m2"}
ITEMSIZE = {"float16": 2, "bfloat16": 2, "float32": 4, "float8_e4m3fn": 1, "float8_e5m2": 1}
# A quantised cache's storage dtypes (the query and output stay 16-bit) and its scales' granularity:
# one float32 scale per tensor (K and V) or one per KV head, as serving engines keep them.
KV_DTYPES = ("float8_e4m3fn", "float8_e5m2")
KV_SCALES = ("tensor", "head")
QUANTISED_QUERY_DTYPES = ("bfloat16", "float16")


class ProblemError(ValueError):
    """An invalid problem or input. The message names the parameter and the rule it breaks."""


INT32_MAX = 2**31 - 1  # lengths, page sizes and head counts are int32 on the device (seq_lens,
# the block table) and in every kernel's index arithmetic
MAX_Q_LEN = 16  # query tokens per sequence: the drafts speculative decoding verifies (2-8) and more
# The longest sequence the spec judges: there the bound of a float32 sum of L terms in any order
# (specs.tolerance.sum_error) reaches 1/2, and at 2^24 tokens it says nothing at all.
MAX_SEQ_LEN = 1 << 23


def _require_int(name: str, value: Any, minimum: int, maximum: int = INT32_MAX) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProblemError(f"{name}={value!r}: must be an integer")
    if value < minimum:
        raise ProblemError(f"{name}={value}: must be >= {minimum}")
    if value > maximum:
        raise ProblemError(f"{name}={value}: must be <= {maximum} (int32, as kernels index it)")


# ---- the parts --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Query:
    """What a query is: ``num_q_heads`` query heads of ``head_dim`` sharing ``num_kv_heads`` KV
    heads, in ``dtype`` (q and out; the LSE is float32); ``q_len`` tokens per sequence, causal
    among themselves (1: plain decode)."""

    num_q_heads: int
    num_kv_heads: int
    head_dim: int
    dtype: str = "bfloat16"
    q_len: int = 1

    def validate(self) -> None:
        _require_int("num_q_heads", self.num_q_heads, 1)
        _require_int("num_kv_heads", self.num_kv_heads, 1)
        if self.num_q_heads % self.num_kv_heads:
            raise ProblemError(
                f"num_kv_heads={self.num_kv_heads} must divide num_q_heads={self.num_q_heads} "
                "(each KV head serves a whole group of query heads)")
        _require_int("head_dim", self.head_dim, 1)
        if self.dtype not in DTYPES:
            raise ProblemError(f"dtype={self.dtype!r}: must be one of {DTYPES}")
        _require_int("q_len", self.q_len, 1)
        if self.q_len > MAX_Q_LEN:
            raise ProblemError(f"q_len={self.q_len}: must be <= {MAX_Q_LEN} (a decode step's draft; "
                               "longer queries are prefill)")

    @property
    def group_size(self) -> int:
        """Query heads per KV head (1: MHA; num_q_heads: MQA)."""
        return self.num_q_heads // self.num_kv_heads

    def bytes(self, batch: int) -> int:
        """q read, out and the float32 LSE written."""
        return batch * self.q_len * self.num_q_heads * self.head_dim * ITEMSIZE[self.dtype] + \
            self.written_bytes(batch)

    def written_bytes(self, batch: int) -> int:
        """out and the float32 LSE: all a call writes."""
        return batch * self.q_len * self.num_q_heads * (self.head_dim * ITEMSIZE[self.dtype] + 4)

    def label(self, name: str = "") -> str:
        shape = name or f"{self.num_q_heads}/{self.num_kv_heads}/{self.head_dim}"
        return shape + (f" q{self.q_len}" if self.q_len > 1 else "")


@dataclass(frozen=True)
class Cache:
    """How the KV cache is stored: ``layout`` (dense or paged) and, paged, ``page_size`` tokens a
    page; ``kv_dtype`` its storage dtype (None: the query's; or an fp8 dtype of KV_DTYPES, the
    values then stand for value x scale, ``kv_scale`` saying whether K and V have one float32
    scale each ("tensor") or one per KV head ("head"))."""

    layout: str = "dense"
    page_size: int = 16  # only meaningful for the paged layout
    kv_dtype: str | None = None
    kv_scale: str = "tensor"  # only meaningful for an fp8 cache

    def validate(self) -> None:
        if self.layout not in LAYOUTS:
            raise ProblemError(f"layout={self.layout!r}: must be one of {LAYOUTS}")
        _require_int("page_size", self.page_size, 1)
        if self.kv_dtype is not None and self.kv_dtype not in KV_DTYPES:
            raise ProblemError(f"kv_dtype={self.kv_dtype!r}: must be one of {KV_DTYPES}, or None "
                               "(the query's dtype)")
        if self.kv_scale not in KV_SCALES:
            raise ProblemError(f"kv_scale={self.kv_scale!r}: must be one of {KV_SCALES}")

    def __post_init__(self):
        # an unquantised cache has no scales: one spelling of it, whatever kv_scale was given
        if self.kv_dtype is None and self.kv_scale != "tensor":
            object.__setattr__(self, "kv_scale", "tensor")

    @property
    def quantised(self) -> bool:
        return self.kv_dtype is not None

    def storage_dtype(self, query: "Query") -> str:
        return self.kv_dtype or query.dtype

    def scales_per_tensor(self, query: "Query") -> int:
        """Float32 scales K (and V) each hold: one per KV head or one; none unquantised."""
        if not self.quantised:
            return 0
        return query.num_kv_heads if self.kv_scale == "head" else 1

    def pages_for(self, length: int) -> int:
        return -(-length // self.page_size)

    def kv_bytes(self, seq_lens: tuple[int, ...], query: Query) -> int:
        """K and V of the tokens that exist: what any correct kernel must read."""
        return 2 * sum(seq_lens) * query.num_kv_heads * query.head_dim * \
            ITEMSIZE[self.storage_dtype(query)]

    def bytes(self, seq_lens: tuple[int, ...], query: Query) -> int:
        """The K and V it must read, plus the block table's entries in use when paged, plus the
        scales of a quantised cache."""
        table = 4 * sum(self.pages_for(n) for n in seq_lens) if self.layout == "paged" else 0
        return self.kv_bytes(seq_lens, query) + table + self.scale_bytes(query)

    def scale_bytes(self, query: "Query") -> int:
        """K's and V's float32 scales."""
        return 2 * 4 * self.scales_per_tensor(query)

    def label(self) -> str:
        where = f"paged{self.page_size}" if self.layout == "paged" else "dense"
        if not self.quantised:
            return where
        return f"{where} kv-{DTYPE_SHORT[self.kv_dtype]}" + ("/head" if self.kv_scale == "head" else "")


@dataclass(frozen=True)
class Mask:
    """How scores are formed and masked: ``sm_scale`` (None: 1 / sqrt(head_dim)); ``window``
    (None: every token below a sequence's length is attended; w: only its last w tokens, as
    sliding-window models attend; a vendor's ``window_left`` is w - 1); ``softcap`` (None: the
    scaled scores as they are; c: ``c * tanh(s / c)`` of each scaled score s, Gemma-2's logit
    soft-capping)."""

    sm_scale: float | None = None
    window: int | None = None
    softcap: float | None = None

    def validate(self) -> None:
        if self.sm_scale is not None:
            if isinstance(self.sm_scale, bool) or not isinstance(self.sm_scale, (int, float)):
                raise ProblemError(f"sm_scale={self.sm_scale!r}: must be a number")
            if not math.isfinite(self.sm_scale) or self.sm_scale == 0:
                raise ProblemError(f"sm_scale={self.sm_scale}: must be finite and non-zero")
        if self.window is not None:
            _require_int("window", self.window, 1)  # a window of 0 tokens attends nothing
        if self.softcap is not None:
            if isinstance(self.softcap, bool) or not isinstance(self.softcap, (int, float)):
                raise ProblemError(f"softcap={self.softcap!r}: must be a number")
            if not math.isfinite(self.softcap) or self.softcap <= 0:
                raise ProblemError(f"softcap={self.softcap}: must be finite and > 0 (the cap on "
                                   "|score|)")

    def window_start(self, length: int) -> int:
        """The first token a sequence of ``length`` tokens attends."""
        return max(0, length - self.window) if self.window is not None else 0

    def label(self) -> str:
        # the default scale is not worth a word
        words = ([f"win{self.window}"] if self.window is not None else []) + \
            ([f"cap{self.softcap:g}"] if self.softcap is not None else [])
        return " ".join(words)


PARTS = {"query": Query, "cache": Cache, "mask": Mask}
# every part's field -> the part holding it (names are unique across parts)
FIELD_PART = {f.name: part for part, cls in PARTS.items() for f in dataclasses.fields(cls)}
REQUIRED = ("num_q_heads", "num_kv_heads", "head_dim", "seq_lens")


@dataclass(frozen=True, init=False)
class DecodeProblem:
    """One decode-attention problem: its parts and the lengths of its sequences; no data.

    Built from the parts' fields by name (``DecodeProblem(num_q_heads, num_kv_heads, head_dim,
    seq_lens, layout=..., page_size=..., dtype=..., sm_scale=..., name=...)``) or from the parts
    (``query=Query(...), cache=Cache(...), mask=Mask(...)``); each field reads as an attribute."""

    query: Query
    cache: Cache
    mask: Mask
    seq_lens: tuple[int, ...]
    name: str = dataclasses.field(default="", compare=False)

    def __init__(self, num_q_heads=None, num_kv_heads=None, head_dim=None, seq_lens=None, *,
                 name: str = "", query: Query | None = None, cache: Cache | None = None,
                 mask: Mask | None = None, **fields: Any) -> None:
        flat = {k: v for k, v in (("num_q_heads", num_q_heads), ("num_kv_heads", num_kv_heads),
                                  ("head_dim", head_dim)) if v is not None}
        flat.update(fields)
        unknown = sorted(set(flat) - set(FIELD_PART))
        if unknown:
            raise ProblemError(f"unknown field(s) {unknown}; known fields: "
                               f"{sorted(FIELD_PART) + ['name', 'seq_lens']}")
        given = {"query": query, "cache": cache, "mask": mask}
        for part, cls in PARTS.items():
            own = {k: v for k, v in flat.items() if FIELD_PART[k] == part}
            base = given[part]
            if base is None:
                try:
                    base = cls(**own)
                except TypeError:
                    missing = [f.name for f in dataclasses.fields(cls)
                               if f.default is dataclasses.MISSING and f.name not in own]
                    raise ProblemError(f"missing field(s) {missing}") from None
            elif own:
                base = dataclasses.replace(base, **own)
            object.__setattr__(self, part, base)
        if isinstance(seq_lens, (list, range)):
            seq_lens = tuple(seq_lens)
        object.__setattr__(self, "seq_lens", seq_lens)
        object.__setattr__(self, "name", name)
        self._validate()

    def _validate(self) -> None:
        self.query.validate()
        if not isinstance(self.seq_lens, tuple) or not self.seq_lens:
            raise ProblemError(f"seq_lens={self.seq_lens!r}: must be a non-empty list of lengths, "
                               "one per sequence in the batch")
        for b, length in enumerate(self.seq_lens):
            if isinstance(length, bool) or not isinstance(length, int):
                raise ProblemError(f"seq_lens[{b}]={length!r}: must be an integer")
            if length < 1:
                raise ProblemError(f"seq_lens[{b}]={length}: every sequence needs at least 1 KV "
                                   "token (decode attends over the cache plus the new token)")
            _require_int(f"seq_lens[{b}]", length, 1)
            if length < self.query.q_len:
                raise ProblemError(f"seq_lens[{b}]={length} < q_len={self.query.q_len}: the query's "
                                   "tokens are the sequence's newest, their K/V in its cache")
            if length > MAX_SEQ_LEN:
                raise ProblemError(f"seq_lens[{b}]={length}: must be <= {MAX_SEQ_LEN} (beyond, float32 "
                                   "sums of the sequence's terms may err by half their value: no "
                                   "tolerance can judge the result)")
        self.cache.validate()
        if self.cache.quantised and self.query.dtype not in QUANTISED_QUERY_DTYPES:
            raise ProblemError(f"kv_dtype={self.cache.kv_dtype!r} with dtype={self.query.dtype!r}: "
                               f"a quantised cache is read with a {' or '.join(QUANTISED_QUERY_DTYPES)} "
                               "query (the dtype of q and out)")
        self.mask.validate()

    def __getattr__(self, attr: str) -> Any:
        # a part's field by its name (p.head_dim is p.query.head_dim); only called for names
        # that are not attributes of the problem itself
        part = FIELD_PART.get(attr)
        if part is None:
            raise AttributeError(f"{type(self).__name__!s} has no attribute {attr!r}")
        return getattr(object.__getattribute__(self, part), attr)

    # ---- derived axes -------------------------------------------------------------------------
    @property
    def batch(self) -> int:
        return len(self.seq_lens)

    @property
    def group_size(self) -> int:
        """Query heads per KV head (1: MHA; num_q_heads: MQA)."""
        return self.query.group_size

    @property
    def max_seq_len(self) -> int:
        return max(self.seq_lens)

    @property
    def total_tokens(self) -> int:
        return sum(self.seq_lens)

    @property
    def q_rows(self) -> int:
        """Rows of q, out and lse: ``q_len`` per sequence, sequence after sequence."""
        return self.batch * self.q_len

    def query_span(self, b: int, i: int | None = None) -> tuple[int, int]:
        """``[first, end)``: the cache tokens query token ``i`` (default: the last, which sees
        the whole cache) of sequence ``b`` attends."""
        n = self.q_len
        i = n - 1 if i is None else i
        end = self.seq_lens[b] - n + i + 1
        return self.mask.window_start(end), end

    @property
    def window_starts(self) -> tuple[int, ...]:
        """Each sequence's first token any of its query tokens attends (0 without a window):
        what precedes it no kernel may read."""
        return tuple(self.query_span(b, 0)[0] for b in range(self.batch))

    @property
    def attended_lens(self) -> tuple[int, ...]:
        """Tokens each sequence's query tokens attend together: its length, or from its first
        query token's window start where that is later."""
        return tuple(n - start for n, start in zip(self.seq_lens, self.window_starts))

    @property
    def scale(self) -> float:
        s = self.mask.sm_scale
        return float(s) if s is not None else 1.0 / math.sqrt(self.head_dim)

    @property
    def uniform(self) -> bool:
        return len(set(self.seq_lens)) == 1

    def pages_for(self, length: int) -> int:
        return self.cache.pages_for(length)

    @property
    def max_pages_per_seq(self) -> int:
        return self.pages_for(self.max_seq_len)

    # ---- bytes the problem must move (the roofline's numerator) ----------------------------
    @property
    def itemsize(self) -> int:
        """Bytes of a query or output element."""
        return ITEMSIZE[self.dtype]

    @property
    def kv_itemsize(self) -> int:
        """Bytes of a stored K or V element (1 for an fp8 cache)."""
        return ITEMSIZE[self.cache.storage_dtype(self.query)]

    @property
    def kv_bytes(self) -> int:
        """K and V bytes of the tokens attended: what any correct kernel must read."""
        return self.cache.kv_bytes(self.attended_lens, self.query)

    @property
    def bytes_moved(self) -> int:
        """Fewest bytes through device memory: K, V, q read; out, lse written; block table read."""
        return self.query.bytes(self.batch) + self.cache.bytes(self.attended_lens, self.query)

    # ---- naming and (de)serialisation -----------------------------------------------------
    def label(self) -> str:
        """A short readable id: shape, lengths, layout, dtype (and any non-default mask)."""
        if self.uniform:
            lens = f"b{self.batch}xs{self.seq_lens[0]}"
        else:
            lens = f"b{self.batch}xragged(mean {self.total_tokens // self.batch}, max {self.max_seq_len})"
        words = [self.query.label(self.name), lens, self.cache.label(), DTYPE_SHORT[self.dtype],
                 self.mask.label()]
        return " ".join(w for w in words if w)

    def to_dict(self) -> dict[str, Any]:
        """Every part's fields, flat, beside seq_lens and name."""
        d: dict[str, Any] = {}
        for part in PARTS:
            d.update(dataclasses.asdict(getattr(self, part)))
        return {**d, "seq_lens": list(self.seq_lens), "name": self.name}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "problem") -> "DecodeProblem":
        """Build from fields (flat, as ``to_dict`` writes them, or grouped by part:
        ``{"query": {...}, "cache": {...}, ...}``); a field left out takes its default, an
        unknown or missing required one is an error naming it."""
        if not isinstance(data, Mapping):
            raise ProblemError(f"{where}: must be an object with the problem's fields")
        flat: dict[str, Any] = {}
        for key, value in data.items():
            if key in PARTS and isinstance(value, Mapping):
                for k in value:
                    if FIELD_PART.get(k, key) != key:
                        raise ProblemError(f"{where}: {key}.{k}: {k} belongs to {FIELD_PART[k]}")
                    if k in data or k in flat:
                        raise ProblemError(f"{where}: {k} given twice ({key}.{k} and another)")
                flat.update(value)
            else:
                if key in flat:
                    raise ProblemError(f"{where}: {key} given twice")
                flat[key] = value
        known = set(FIELD_PART) | {"seq_lens", "name"}
        unknown = sorted(set(flat) - known)
        if unknown:
            raise ProblemError(f"{where}: unknown field(s) {unknown}; known fields: {sorted(known)}")
        missing = sorted(set(REQUIRED) - set(flat))
        if missing:
            raise ProblemError(f"{where}: missing field(s) {missing}")
        try:
            return cls(**flat)
        except ProblemError as e:
            raise ProblemError(f"{where}: {e}") from None

    def replace(self, **changes: Any) -> "DecodeProblem":
        """A copy with fields changed by name (a part's field, seq_lens or name) or whole parts
        (``query=Query(...)``)."""
        fields = {k: v for k, v in self.to_dict().items()
                  if FIELD_PART.get(k) not in changes}  # a part given whole replaces its fields
        return DecodeProblem(**{**fields, **changes})
