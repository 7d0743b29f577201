"""The decode-attention problem, defined once.

One query token per sequence attends over that sequence's KV cache:

    out[b, h]  = softmax(q[b, h] . K[b, :L_b, g(h)]^T * sm_scale) . V[b, :L_b, g(h)]
    lse[b, h]  = log(sum_t exp(q[b, h] . K[b, t, g(h)] * sm_scale))      (natural log)

with ``g(h) = h // (num_q_heads // num_kv_heads)``: MHA when the two head counts are equal, GQA
when several query heads share a KV head, MQA when there is one KV head. ``L_b = seq_lens[b]``
(a ragged batch). Shapes:

    q    [batch, num_q_heads, head_dim]
    out  [batch, num_q_heads, head_dim]     in the input dtype
    lse  [batch, num_q_heads]               float32

The KV cache comes in two layouts holding the same logical cache (see ``specs.inputs``):

    dense  k, v        [batch, max_seq_len, num_kv_heads, head_dim]
    paged  k, v pool   [num_pages, page_size, num_kv_heads, head_dim]
           block_table int32 [batch, max_pages_per_seq]; token t of sequence b lives in page
           block_table[b, t // page_size], row t % page_size

A ``DecodeProblem`` is pure data: it checks itself when built and raises ``ProblemError`` naming
the parameter and the rule it breaks, so nothing invalid ever reaches a kernel.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Mapping

DTYPES = ("float16", "bfloat16", "float32")
LAYOUTS = ("dense", "paged")
DTYPE_SHORT = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}


class ProblemError(ValueError):
    """An invalid problem or input. The message names the parameter and the rule it breaks."""


INT32_MAX = 2**31 - 1  # lengths, page sizes and head counts are int32 on the device (seq_lens,
# the block table) and in every kernel's index arithmetic


def _require_int(name: str, value: Any, minimum: int, maximum: int = INT32_MAX) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProblemError(f"{name}={value!r}: must be an integer")
    if value < minimum:
        raise ProblemError(f"{name}={value}: must be >= {minimum}")
    if value > maximum:
        raise ProblemError(f"{name}={value}: must be <= {maximum} (int32, as kernels index it)")


@dataclass(frozen=True)
class DecodeProblem:
    """One decode-attention problem: the axes, the layout and the dtype; no data."""

    num_q_heads: int
    num_kv_heads: int
    head_dim: int
    seq_lens: tuple[int, ...]
    layout: str = "dense"
    page_size: int = 16  # only meaningful for the paged layout
    dtype: str = "bfloat16"
    sm_scale: float | None = None  # None means 1 / sqrt(head_dim)
    name: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.seq_lens, (list, range)):
            object.__setattr__(self, "seq_lens", tuple(self.seq_lens))
        self._validate()

    def _validate(self) -> None:
        _require_int("num_q_heads", self.num_q_heads, 1)
        _require_int("num_kv_heads", self.num_kv_heads, 1)
        if self.num_q_heads % self.num_kv_heads:
            raise ProblemError(
                f"num_kv_heads={self.num_kv_heads} must divide num_q_heads={self.num_q_heads} "
                "(each KV head serves a whole group of query heads)")
        _require_int("head_dim", self.head_dim, 1)
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
        if self.layout not in LAYOUTS:
            raise ProblemError(f"layout={self.layout!r}: must be one of {LAYOUTS}")
        _require_int("page_size", self.page_size, 1)
        if self.dtype not in DTYPES:
            raise ProblemError(f"dtype={self.dtype!r}: must be one of {DTYPES}")
        if self.sm_scale is not None:
            if isinstance(self.sm_scale, bool) or not isinstance(self.sm_scale, (int, float)):
                raise ProblemError(f"sm_scale={self.sm_scale!r}: must be a number")
            if not math.isfinite(self.sm_scale) or self.sm_scale == 0:
                raise ProblemError(f"sm_scale={self.sm_scale}: must be finite and non-zero")

    # ---- derived axes -------------------------------------------------------------------------
    @property
    def batch(self) -> int:
        return len(self.seq_lens)

    @property
    def group_size(self) -> int:
        """Query heads per KV head (1: MHA; num_q_heads: MQA)."""
        return self.num_q_heads // self.num_kv_heads

    @property
    def max_seq_len(self) -> int:
        return max(self.seq_lens)

    @property
    def scale(self) -> float:
        return float(self.sm_scale) if self.sm_scale is not None else 1.0 / math.sqrt(self.head_dim)

    @property
    def uniform(self) -> bool:
        return len(set(self.seq_lens)) == 1

    def pages_for(self, length: int) -> int:
        return -(-length // self.page_size)

    @property
    def max_pages_per_seq(self) -> int:
        return self.pages_for(self.max_seq_len)

    # ---- bytes the problem must move (the roofline's numerator) ----------------------------
    @property
    def itemsize(self) -> int:
        return 4 if self.dtype == "float32" else 2

    @property
    def kv_bytes(self) -> int:
        """K and V bytes of the tokens that exist: what any correct kernel must read."""
        return 2 * sum(self.seq_lens) * self.num_kv_heads * self.head_dim * self.itemsize

    @property
    def bytes_moved(self) -> int:
        """Fewest bytes through device memory: K, V, q read; out, lse written; block table read."""
        qo = 2 * self.batch * self.num_q_heads * self.head_dim * self.itemsize
        lse = 4 * self.batch * self.num_q_heads
        table = 4 * sum(self.pages_for(n) for n in self.seq_lens) if self.layout == "paged" else 0
        return self.kv_bytes + qo + lse + table

    # ---- naming and (de)serialisation -----------------------------------------------------
    def label(self) -> str:
        """A short readable id: shape, lengths, layout, dtype."""
        if self.uniform:
            lens = f"b{self.batch}xs{self.seq_lens[0]}"
        else:
            lens = f"b{self.batch}xragged(mean {sum(self.seq_lens) // self.batch}, max {self.max_seq_len})"
        layout = f"paged{self.page_size}" if self.layout == "paged" else "dense"
        shape = self.name or f"{self.num_q_heads}/{self.num_kv_heads}/{self.head_dim}"
        return f"{shape} {lens} {layout} {DTYPE_SHORT[self.dtype]}"

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["seq_lens"] = list(self.seq_lens)
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "problem") -> "DecodeProblem":
        """Build from explicit fields; an unknown or missing field is an error naming it."""
        if not isinstance(data, Mapping):
            raise ProblemError(f"{where}: must be an object with the problem's fields")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ProblemError(f"{where}: unknown field(s) {unknown}; known fields: {sorted(known)}")
        required = {"num_q_heads", "num_kv_heads", "head_dim", "seq_lens"}
        missing = sorted(required - set(data))
        if missing:
            raise ProblemError(f"{where}: missing field(s) {missing}")
        try:
            return cls(**data)
        except ProblemError as e:
            raise ProblemError(f"{where}: {e}") from None

    def replace(self, **changes: Any) -> "DecodeProblem":
        return dataclasses.replace(self, **changes)
