"""A balanced split-KV plan for a decode batch, shared by the DSL backends' split-K kernels.

Pure numpy and torch: from the host copy of ``seq_lens``, the number of KV heads and how many
programs the GPU runs at once (SMs x the kernel's resident programs per SM, ``max_programs``),
the batch is cut into *work items*, each a token range of one sequence, run by one program per
KV head. Every item is at most ``chunk`` tokens, a multiple of ``granule`` (whole K/V tiles, and
whole pages where the kernel reads its block table per page). A sequence no longer than the
chunk stays one item and writes ``out``/``lse`` itself; only the split ones write partials
(``part_out``/``part_lse`` slots) and are merged, each over its own items (FlashInfer's decode
planner does the same).

The chunk minimises an estimate of the batch's makespan in tokens per program,

    max(min(chunk, longest), (sum of lengths + items(chunk) x OVERHEAD_TOKENS) x kv_heads / max_programs)

the longest item against the work per program when all of them are busy, each item charged
OVERHEAD_TOKENS for its start, its partial write and its share of the merge. Where the batch is
too small to fill the GPU, this is FlashInfer's rule (the smallest chunk whose items fill the
resident programs once); where it already fills it, a long sequence is still split until no item
outlasts the rest of the batch (a ragged batch's tail). An explicit ``num_splits`` instead cuts
every sequence at the same boundaries (``ceil(longest / num_splits)`` rounded up to the granule),
as the metamorphic properties and the sweeps ask for.

Items are ordered longest first, so the last programs to start are the short ones (longest-
processing-time-first, for a grid of more than one wave).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

import numpy as np
import torch

from impls.common import check_num_splits, sm_count
from impls.registry import Unsupported

OVERHEAD_TOKENS = 128  # an item's fixed cost (start, partial write, merge), in tokens of work
MIN_CHUNK = 256  # the planner's smallest chunk (below it the merge outweighs the parallelism)
ITEM_FIELDS = 4  # a work item: (sequence, first token, end token, partial slot or -1)


@dataclass(frozen=True)
class SplitPlan:
    """Work items and merges. ``items`` int32 ``[num_items, 4]`` rows (sequence, start, end,
    slot: the partial slot, -1 for a sequence written whole); ``merge_seqs`` int32
    ``[num_merges]`` the split sequences, ``merge_indptr`` int32 ``[num_merges + 1]`` their
    slots ``[indptr[i], indptr[i + 1])``."""

    chunk: int  # tokens per work item at most (a multiple of the granule)
    items: np.ndarray
    merge_seqs: np.ndarray
    merge_indptr: np.ndarray

    @property
    def num_items(self) -> int:
        return len(self.items)

    @property
    def num_merges(self) -> int:
        return len(self.merge_seqs)

    @property
    def num_slots(self) -> int:
        return int(self.merge_indptr[-1])

    @property
    def max_items_per_seq(self) -> int:
        return int(np.diff(self.merge_indptr).max()) if self.num_merges else 1


class Workspace:
    """A plan's device tensors, views of one int32 device buffer filled from a pinned host buffer
    by one asynchronous copy (FlashInfer's ``plan()`` fills its workspace the same way). Made in
    ``prepare`` for the launch's plan; ``load`` refills it with a new plan of no more items and
    merges, as a serving loop's per-batch planning would, and returns the new tensors. (A launch
    keeps the grid of the plan it was prepared with: the harness reloads that same plan.)"""

    def __init__(self, split_plan: SplitPlan, device: torch.device):
        self.capacity = self._size(split_plan)
        self.device_buffer = torch.empty(self.capacity, dtype=torch.int32, device=device)
        cuda = device.type == "cuda"
        self.host_buffer = torch.empty(self.capacity, dtype=torch.int32, pin_memory=cuda)
        self.host = self.host_buffer.numpy()
        self.copied = torch.cuda.Event() if cuda else None  # the last copy out of host_buffer
        self._views = {}  # (items, merges) -> the tensors of a plan of that size
        self.tensors = self.load(split_plan)

    @staticmethod
    def _size(split_plan: SplitPlan) -> int:
        # a plan with no merge still gets a (never read) merge_seqs entry: valid pointers
        return split_plan.items.size + max(1, split_plan.num_merges) + split_plan.num_merges + 1

    def load(self, split_plan: SplitPlan) -> dict[str, torch.Tensor]:
        """Copy ``split_plan`` to the device (stream-ordered after the launches before it);
        ``items`` int32 [num_items, 4], ``merge_seqs`` [max(1, num_merges)], ``merge_indptr``."""
        size = self._size(split_plan)
        if size > self.capacity:
            raise ValueError(f"a plan of {size} entries does not fit a workspace of {self.capacity}")
        if self.copied is not None:
            self.copied.synchronize()  # the host buffer is free again once its last copy is done
        n_items, n_seqs = split_plan.items.size, max(1, split_plan.num_merges)
        self.host[:n_items] = split_plan.items.ravel()
        self.host[n_items:n_items + split_plan.num_merges] = split_plan.merge_seqs
        self.host[n_items + n_seqs:size] = split_plan.merge_indptr
        # the whole buffer (a few bytes more at most): one copy, no slicing per call
        self.device_buffer.copy_(self.host_buffer, non_blocking=True)
        if self.copied is not None:
            self.copied.record()
        key = (n_items, split_plan.num_merges)
        if key not in self._views:
            buffer = self.device_buffer
            self._views[key] = {"items": buffer[:n_items].view(-1, ITEM_FIELDS),
                                "merge_seqs": buffer[n_items:n_items + n_seqs],
                                "merge_indptr": buffer[n_items + n_seqs:size]}
        return self._views[key]


def whole_sequences(seq_lens) -> SplitPlan:
    """The one-pass plan: one item per sequence, in batch order, nothing split."""
    n = len(seq_lens)
    items = np.stack([np.arange(n), np.zeros(n, np.int64), np.asarray(seq_lens, np.int64),
                      np.full(n, -1)], axis=1)
    return SplitPlan(int(max(seq_lens)), items.astype(np.int32), np.zeros(0, np.int32),
                     np.zeros(1, np.int32))


def round_up(n: int, granule: int) -> int:
    return -(-n // granule) * granule


def makespan(lens, chunk: int, num_kv_heads: int, max_programs: int,
             overhead: int = OVERHEAD_TOKENS) -> float:
    """The estimate the chunk minimises (tokens per program; module docstring, ``overhead`` an
    item's fixed cost); ``lens`` a sequence of lengths or a ``Batch``."""
    batch = lens if isinstance(lens, Batch) else Batch(lens)
    return max(min(chunk, batch.longest),
               (batch.total + batch.num_items(chunk) * overhead) * num_kv_heads / max_programs)


class Batch:
    """A batch's lengths, with what the chunk search asks of them many times."""

    SMALL = 48  # up to this many sequences a Python loop beats numpy's per-call overhead
    SMALL_ITEMS = 96  # ... and up to this many work items (cut_in_python against cut_in_numpy)

    def __init__(self, lens):
        self.array = np.asarray(lens, dtype=np.int64)
        self.list = self.array.tolist() if len(self.array) <= self.SMALL else None
        if self.list is not None:
            self.total, self.longest = sum(self.list), max(self.list)
        else:
            self.total, self.longest = int(self.array.sum()), int(self.array.max())
        self._ascending = None

    def num_items(self, chunk: int) -> int:
        """Work items of the batch cut at ``chunk`` tokens (every sequence at least one): only
        the sequences longer than the chunk add to the count, and in the search they are few."""
        if self._ascending is None:
            self._sorted = np.sort(self.array)
            self._ascending = self._sorted.tolist()
        n = len(self._ascending)
        longer = n - bisect.bisect_right(self._ascending, chunk)
        if longer <= self.SMALL:
            return n + sum(-(-length // chunk) - 1 for length in self._ascending[n - longer:])
        return n + int((-(-self._sorted[n - longer:] // chunk)).sum()) - longer


def balanced_cut(lens, num_kv_heads: int, max_programs: int, granule: int,
               shortest: int = MIN_CHUNK, overhead: int = OVERHEAD_TOKENS) -> int:
    """The chunk (a multiple of ``granule``, at least ``shortest``) of least ``makespan``; the
    longest sequence whole when splitting cannot shorten the batch."""
    batch = lens if isinstance(lens, Batch) else Batch(lens)
    whole = round_up(batch.longest, granule)
    # each sequence is at least one item: the busy time is at least this, and no chunk below it
    # can be the crossing point of the two terms of the estimate
    floor = (batch.total + len(batch.array) * overhead) * num_kv_heads / max_programs
    lo = max(1, -(-shortest // granule), int(floor // granule))
    hi = whole // granule
    if lo >= hi:
        return whole
    per_item = overhead * num_kv_heads / max_programs
    busy_floor = batch.total * num_kv_heads / max_programs
    while lo < hi:  # the smallest chunk no shorter than the busy time (the terms cross there;
        mid = (lo + hi) // 2  # below ``whole`` the longest item is the chunk itself)
        if mid * granule >= busy_floor + batch.num_items(mid * granule) * per_item:
            hi = mid
        else:
            lo = mid + 1
    best = lo * granule
    before = best - granule  # below the crossing the busy time rules: compare
    if before >= shortest and makespan(batch, before, num_kv_heads, max_programs, overhead) < \
            makespan(batch, best, num_kv_heads, max_programs, overhead):
        best = before
    return best


def plan(seq_lens, num_kv_heads: int, max_programs: int, granule: int,
         num_splits: int | None = None, shortest: int = MIN_CHUNK,
         overhead: int = OVERHEAD_TOKENS) -> SplitPlan:
    """The plan for one batch (module docstring); ``num_splits`` forces a uniform cut;
    ``shortest`` and ``overhead`` a kernel's own smallest chunk and per-item cost."""
    batch = Batch(seq_lens)
    if num_splits is not None:
        chunk = round_up(-(-batch.longest // num_splits), granule)
    else:
        chunk = balanced_cut(batch, num_kv_heads, max_programs, granule, shortest, overhead)
    if batch.longest <= chunk:  # nothing split: one item per sequence, longest first
        if batch.list is not None:  # (a stable sort, as argsort's below)
            order = sorted(range(len(batch.list)), key=batch.list.__getitem__, reverse=True)
            items = np.array([(b, 0, batch.list[b], -1) for b in order], np.int32)
        else:
            lens = batch.array
            order = np.argsort(-lens, kind="stable")
            items = np.empty((len(lens), ITEM_FIELDS), np.int32)
            items[:, 0], items[:, 1], items[:, 2], items[:, 3] = order, 0, lens[order], -1
        return SplitPlan(chunk, items, np.zeros(0, np.int32), np.zeros(1, np.int32))
    if batch.num_items(chunk) <= Batch.SMALL_ITEMS:
        return cut_in_python(batch.array.tolist(), chunk)
    return cut_in_numpy(batch.array, chunk)


def cut_in_python(lens: list[int], chunk: int) -> SplitPlan:
    """The items and merges of a batch cut at ``chunk`` tokens, for a few items (numpy's per-call
    overhead outweighs the work there); the same plan as ``cut_in_numpy``."""
    items, merge_seqs, merge_indptr = [], [], [0]
    for b, n in enumerate(lens):
        if n <= chunk:
            items.append((b, 0, n, -1))
            continue
        first = merge_indptr[-1]
        starts = range(0, n, chunk)
        items.extend((b, s, min(s + chunk, n), first + i) for i, s in enumerate(starts))
        merge_seqs.append(b)
        merge_indptr.append(first + len(starts))
    items.sort(key=lambda item: item[1] - item[2])  # longest first (a stable sort)
    return SplitPlan(chunk, np.array(items, np.int32), np.array(merge_seqs, np.int32),
                     np.array(merge_indptr, np.int32))


def cut_in_numpy(lens: np.ndarray, chunk: int) -> SplitPlan:
    """``cut_in_python`` in array operations, for many items."""
    per_seq = -(-lens // chunk)  # items of each sequence
    split = per_seq > 1
    merge_indptr = np.zeros(int(split.sum()) + 1, np.int32)
    seq = np.repeat(np.arange(len(lens)), per_seq)
    index = np.arange(len(seq)) - np.repeat(np.cumsum(per_seq) - per_seq, per_seq)
    np.cumsum(per_seq[split], out=merge_indptr[1:])
    first_slot = np.full(len(lens), -1, np.int64)
    first_slot[split] = merge_indptr[:-1]
    items = np.empty((len(seq), ITEM_FIELDS), np.int64)
    items[:, 0] = seq
    items[:, 1] = index * chunk
    items[:, 2] = np.minimum(items[:, 1] + chunk, lens[seq])
    items[:, 3] = np.where(split[seq], first_slot[seq] + index, -1)
    items = items[np.argsort(items[:, 1] - items[:, 2], kind="stable")]  # longest first
    return SplitPlan(chunk, items.astype(np.int32), np.flatnonzero(split).astype(np.int32),
                     merge_indptr)


def new_partials(split_plan: SplitPlan, problem, device: torch.device):
    """The workspace of a plan's split sequences: ``part_out`` float32 [slots, Hq, D] (normalised
    partial outputs) and ``part_lse`` float32 [slots, Hq] (their natural-log LSE); one slot at
    least, so a plan with nothing split still has valid pointers."""
    slots = max(1, split_plan.num_slots)
    return (torch.empty(slots, problem.num_q_heads, problem.head_dim, dtype=torch.float32,
                        device=device),
            torch.empty(slots, problem.num_q_heads, dtype=torch.float32, device=device))


MAX_ITEMS = 65535  # the kernels put work items on a CUDA grid's y dimension


def host_lengths(inputs) -> np.ndarray:
    """The batch's lengths as a host array, as a serving loop's scheduler holds them (made once
    per launch, so the timed ``plan`` does not convert the problem's tuple every call)."""
    return np.asarray(inputs.problem.seq_lens, dtype=np.int64)


def for_launch(inputs, programs_per_sm: int, tile: int, num_splits: int | None,
               head_blocks: int = 1, whole_pages: bool = False, seq_lens=None,
               shortest: int = MIN_CHUNK, overhead: int = OVERHEAD_TOKENS) -> SplitPlan:
    """The plan of one launch: a kernel with ``programs_per_sm`` programs resident per SM, items
    starting on whole ``tile``s (and pages, for a kernel that reads its block table per page),
    ``head_blocks`` programs per (item, KV head); ``num_splits`` checked and, when given, a
    uniform cut; ``seq_lens`` the host lengths (``host_lengths``; else the problem's);
    ``shortest`` (the least chunk), ``overhead``: the kernel's own, where they differ from the
    defaults. More items than a grid dimension holds is unsupported."""
    p = inputs.problem
    if num_splits is not None:
        check_num_splits(num_splits)
    programs = max(1, sm_count(inputs.device) * programs_per_sm // head_blocks)
    granule = math.lcm(tile, p.page_size) if whole_pages and p.layout == "paged" else tile
    split_plan = plan(p.seq_lens if seq_lens is None else seq_lens, p.num_kv_heads, programs,
                      granule, num_splits=num_splits, shortest=shortest, overhead=overhead)
    if split_plan.num_items > MAX_ITEMS:
        raise Unsupported(f"{split_plan.num_items} work items of {split_plan.chunk} tokens: more "
                          f"than the {MAX_ITEMS} a grid dimension holds (fewer num_splits)")
    return split_plan
