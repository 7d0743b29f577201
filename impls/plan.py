"""A balanced split-KV plan for a decode batch, shared by the DSL backends' split-K kernels.

Pure numpy and torch: from the host copy of ``seq_lens``, the number of KV heads and how many
programs the GPU runs at once (SMs x the kernel's resident programs per SM, ``max_programs``),
the batch is cut into *work items*, each a token range of one sequence, run by one program per
KV head. Every item is at most ``chunk`` tokens, a multiple of ``granule`` (whole K/V tiles, and
whole pages where the kernel reads its block table per page). A sequence no longer than the
chunk stays one item and writes ``out``/``lse`` itself; only the split ones write partials
(``part_out``/``part_lse`` slots) and are merged, each over its own items (FlashInfer's decode
planner does the same).

The chunk minimises an estimate of the batch's makespan in tokens per program, the largest of
three lower bounds:

    min(chunk, longest)                                       the longest item
    (sum of lengths + items(chunk) x OVERHEAD_TOKENS) x kv_heads / max_programs   the busy time
    max over k of (k + 1) x p[k x max_programs]               the waves

p the programs' item lengths, longest first (each item runs once per KV head): of the
k x max_programs + 1 longest, some slot runs k + 1, each at least p[k x max_programs] long;
and each item charged OVERHEAD_TOKENS for its start, its partial write and its share of the merge;
``max_programs`` is the SM count times the kernel's residency (programs one SM holds, from the
compiled kernel where the backend can ask). Where the batch is too small to fill the GPU, the
first two are FlashInfer's rule (the smallest chunk whose items fill the resident programs
once); where it already fills it, a long sequence is still split until no item outlasts the rest
of the batch (a ragged batch's tail). The third counts what the first two smooth over: 160
(sequence, KV head) programs on 132 slots run in two waves, twice the time of one, and cutting
each sequence in four (640 items, five waves of a quarter) takes 1.25x. The search takes the
crossing of the first two and every even cut of the longest sequence into k pieces while the
items make at most WAVES_COUNTED waves (past that a wave's quantum is a small share).
An explicit ``num_splits`` instead cuts every sequence at the same boundaries
(``ceil(longest / num_splits)`` rounded up to the granule), as the metamorphic properties and
the sweeps ask for.

Items are ordered longest first, so the last programs to start are the short ones (longest-
processing-time-first, for a grid of more than one wave).
"""

from __future__ import annotations

import bisect
import contextlib
import io
import math
from dataclasses import dataclass
from typing import Callable, NamedTuple

import numpy as np
import torch

from impls.common import check_num_splits, num_head_blocks, program_tokens, sm_count
from impls.registry import Unsupported
from specs.problem import ProblemError

OVERHEAD_TOKENS = 128  # an item's fixed cost (start, partial write, merge), in tokens of work
MIN_CHUNK = 256  # the planner's smallest chunk (below it the merge outweighs the parallelism)
WAVES_COUNTED = 8  # even cuts are tried up to this many waves of items (a wave: 1/8 or less)
ITEM_FIELDS = 4  # a work item: (sequence, first token, end token, partial slot or -1)
COMBINE_SLOTS = 32  # partials a combine step merges at most (any split count works)
COMBINE_TILE = 8192  # floats of partials a combine step loads (64 a thread on 4 warps)
COMBINE_MIN_DIMS = 32  # a combine program's dims at least: a float a lane, 128 B of a partial row


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
    items = batch.num_items(chunk)
    return max(min(chunk, batch.longest),
               (batch.total + items * overhead) * num_kv_heads / max_programs,
               waves(batch, chunk, items * num_kv_heads, num_kv_heads, max_programs))


def waves(batch: "Batch", chunk: int, programs: int, num_kv_heads: int, max_programs: int) -> int:
    """The waves' bound (module docstring) for k up to WAVES_COUNTED: whole-chunk items first,
    then each sequence's last, shorter piece, longest first (past that the busy time rules)."""
    full = batch.num_full(chunk) * num_kv_heads
    tails = None
    bound = 0
    for k in range(1, WAVES_COUNTED + 1):
        j = k * max_programs
        if j >= programs:
            break
        if j < full:
            bound = max(bound, (k + 1) * chunk)
            continue
        if tails is None:
            rest = batch.array % chunk
            tails = -np.sort(-rest[rest > 0])
        bound = max(bound, (k + 1) * int(tails[(j - full) // num_kv_heads]))
    return bound


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

    def _sort(self) -> None:
        if self._ascending is None:
            self._sorted = np.sort(self.array)
            self._ascending = self._sorted.tolist()

    def num_items(self, chunk: int) -> int:
        """Work items of the batch cut at ``chunk`` tokens (every sequence at least one): only
        the sequences longer than the chunk add to the count, and in the search they are few."""
        self._sort()
        n = len(self._ascending)
        longer = n - bisect.bisect_right(self._ascending, chunk)
        if longer <= self.SMALL:
            return n + sum(-(-length // chunk) - 1 for length in self._ascending[n - longer:])
        return n + int((-(-self._sorted[n - longer:] // chunk)).sum()) - longer

    def num_full(self, chunk: int) -> int:
        """Items of exactly ``chunk`` tokens when the batch is cut at ``chunk``."""
        self._sort()
        n = len(self._ascending)
        at_least = n - bisect.bisect_left(self._ascending, chunk)
        if at_least <= self.SMALL:
            return sum(length // chunk for length in self._ascending[n - at_least:])
        return int((self._sorted[n - at_least:] // chunk).sum())


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
    lo = min(lo, hi)  # busy past the longest: only the waves can still gain from a cut
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
    # the least estimate of: the whole, the crossing, and (the waves) the even cuts of the
    # longest sequence while the items make few waves; of equal ones the longest chunk (fewer
    # items, partials, merges)
    found = {"chunk": whole,
             "least": makespan(batch, whole, num_kv_heads, max_programs, overhead)}

    def consider(chunk: int) -> bool:
        """Weigh ``chunk``; False once no shorter chunk can win (the busy time only grows as the
        chunk shrinks, and no estimate is below it)."""
        busy = (batch.total + batch.num_items(chunk) * overhead) * num_kv_heads / max_programs
        if busy >= found["least"]:
            return False
        if max(min(chunk, batch.longest), busy) < found["least"]:
            estimate = makespan(batch, chunk, num_kv_heads, max_programs, overhead)
            if estimate < found["least"] or (estimate == found["least"] and chunk > found["chunk"]):
                found.update(chunk=chunk, least=estimate)
        return True

    for chunk in (best, before):
        if chunk >= shortest:
            consider(chunk)
    for pieces in range(2, batch.longest // max(shortest, granule) + 1):
        chunk = round_up(-(-batch.longest // pieces), granule)
        if chunk < shortest or not consider(chunk) or \
                batch.num_items(chunk) * num_kv_heads > WAVES_COUNTED * max_programs:
            break
    return found["chunk"]


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
    """The workspace of a plan's split sequences: ``part_out`` float32 [slots, q_len x Hq, D]
    (normalised partial outputs, query token t's head h in row t x Hq + h) and ``part_lse``
    float32 [slots, q_len x Hq] (their natural-log LSE); one slot at least, so a plan with
    nothing split still has valid pointers."""
    slots, rows = max(1, split_plan.num_slots), problem.q_len * problem.num_q_heads
    return (torch.empty(slots, rows, problem.head_dim, dtype=torch.float32, device=device),
            torch.empty(slots, rows, dtype=torch.float32, device=device))


MAX_ITEMS = 65535  # the kernels put work items on a CUDA grid's y dimension


def one_pass_grid(problem, row_blocks: int) -> tuple[int, int]:
    """The one-pass grid of Triton, Gluon and CuPy: (KV heads x ``row_blocks``, sequences), a
    sequence's KV heads side by side in launch order as split-K's items have them (the heads' rows
    interleave in the cache: results/nvidia-h200/2026-11-29-head-order); its sequences on the y
    dimension, as many as that holds."""
    if problem.batch > MAX_ITEMS:
        raise Unsupported(f"a batch of {problem.batch} sequences: more than the {MAX_ITEMS} a grid "
                          f"dimension holds (split-K's plan refuses it too)")
    return problem.num_kv_heads * row_blocks, problem.batch


MAX_THREAD_REGS = 255  # ptxas allocates a thread no more


@dataclass(frozen=True)
class SmLimits:
    """What one SM holds (Hopper's figures by default; ``sm_limits`` reads the GPU's)."""

    smem: int = 228 * 1024  # shared memory bytes
    regs: int = 65536  # 32-bit registers
    threads: int = 2048
    programs: int = 32
    reserved_smem: int = 1024  # the driver's per-program share


def sm_limits(device: torch.device) -> SmLimits:
    """The limits of ``device``'s SMs (the defaults off a GPU, where the CPU tests compile for
    sm_90)."""
    if device.type != "cuda":
        return SmLimits()
    props = torch.cuda.get_device_properties(device)
    default = SmLimits()
    return SmLimits(smem=getattr(props, "shared_memory_per_multiprocessor", default.smem),
                    regs=getattr(props, "regs_per_multiprocessor", default.regs),
                    threads=getattr(props, "max_threads_per_multi_processor", default.threads))


def residency(regs_per_thread: int, smem_bytes: int, num_warps: int,
              limits: SmLimits = SmLimits()) -> int:
    """Programs of a compiled kernel one SM holds, by the CUDA occupancy rules: registers
    (allocated per warp in 256s, from each of the 4 sub-partitions' quarter of the file), shared
    memory (+ the driver's reserve per program), threads and programs per SM. The planner's
    ``max_programs`` is the SM count times this."""
    regs_per_warp = -(-regs_per_thread * 32 // 256) * 256
    by_regs = (limits.regs // 4 // max(regs_per_warp, 1)) * 4 // num_warps
    by_smem = limits.smem // (smem_bytes + limits.reserved_smem)
    return max(1, min(by_regs, by_smem, limits.threads // (32 * num_warps), limits.programs))


# A grid of more programs than the SMs hold runs them in waves. A K/V ring sized for one program
# an SM then keeps the others off it: a 4-warp program alone leaves its softmax and its first
# tile's wait exposed, and a short sequence never fills its ring. Where the grid gives s programs
# an SM, each ring takes 1/s of the SM's shared memory so the s are resident together, up to
# this many (a 16 KB stage at most 4 ways: narrower tiles cost more per token)
MAX_SHARERS = 4


def sharers(programs: int, sms: int) -> int:
    """Programs an SM would take in turn for a grid of ``programs`` on ``sms`` SMs (its waves), at
    most MAX_SHARERS and at least 1."""
    return min(MAX_SHARERS, max(1, -(-programs // max(1, sms))))


# A program alone on its SM pays its start and end (about a DRAM round trip) with nothing else
# in flight, which sharers hide at a per-token cost of narrower tiles; the two weigh about equal
# at this many K/V bytes a program, measured on an H100 (results/nvidia-h100/2026-11-28-short-bytes).
SHORT_PROGRAM_BYTES = 256 * 1024


def short_programs(problem, programs: int, sms: int, ring_tokens: int, split: bool = False) -> bool:
    """Whether a grid of ``programs`` programs of whole sequences on ``sms`` SMs should share its
    SMs (narrower rings, several programs resident): more programs than SMs, whose tokens
    (``program_tokens``) would not fill a ring of ``ring_tokens`` or, one-pass and of
    near-uniform lengths, whose mean program reads under SHORT_PROGRAM_BYTES of K/V, and none of
    them the grid's tail. The longest program (the tokens it attends) must read no more than an
    SM's share of the grid's tokens: a longer one is what the grid waits for at its end, alone
    on its SM, where a narrow ring streams slowest (ragged batches of short sequences with a few
    of ~740 tokens ran 20-58 % slower shared: results/nvidia-h200/2026-11-27-sharers-tune-x4).
    Split-K's longest item is the planner's chunk: at least MIN_CHUNK, and cut so that no item
    outlasts an SM slot's share of the work, so within the SM's share wherever that is MIN_CHUNK
    or more: the test takes min(longest, MIN_CHUNK). (A forced ``num_splits`` cuts by count
    instead, which this does not see.)"""
    if programs <= sms:
        return False
    spans = problem.attended_lens
    # by bytes only one-pass (split-K's items are the planner's cuts, not the sequences) and
    # near-uniform (a ragged batch's long programs hold most of its work and stream slower shared)
    few_bytes = not split and near_uniform(spans) and \
        problem.kv_bytes < SHORT_PROGRAM_BYTES * problem.batch * problem.num_kv_heads
    if program_tokens(problem) >= ring_tokens and not few_bytes:
        return False
    return shared_tail_free(problem, programs, sms, 1, split)


def shared_tail_free(problem, grid_programs: int, sms: int, sharers_: int,
                     split: bool = False) -> bool:
    """Whether ``sharers_`` programs an SM on narrower rings, each streaming about 1/sharers_ of
    what the SM streams alone, leave no program the grid's tail: the longest program times
    ``sharers_`` within an SM's share of the grid's tokens (``grid_programs`` the one-pass grid:
    whole sequences by KV head and head block). One-pass: the longest attended span, so a ragged
    batch's long sequence is what this refuses. Split-K: the plan made for the shared ring cuts
    items to a slot's share, at least MIN_CHUNK, so the test takes MIN_CHUNK (as
    ``short_programs`` does) and asks only that the grid hold enough tokens an SM for items that
    long, slowed; raggedness is the plan's to even out. A forced ``num_splits`` cuts by count
    instead, which this does not see."""
    spans = problem.attended_lens
    longest = min(max(spans), MIN_CHUNK) if split else max(spans)
    return longest * sharers_ * problem.batch * sms <= grid_programs * sum(spans)


def widest_tile(problem, narrowest: int = 16) -> int:
    """The widest K/V tile worth a program of ``problem``: its longest attended span rounded up to
    a power of two, at least ``narrowest``. A wider tile's extra tokens are all masked, yet its
    program still computes them and holds their ring: on 57 sequences of 20 tokens, 32-token
    tiles ran 15-22 % faster than 128 (results/nvidia-h200/2026-11-28-tile-cap)."""
    return max(narrowest, 1 << (max(problem.attended_lens) - 1).bit_length())


# Narrower tiles' cost to a program that shares its SM: 4-10 % on seed 105's dense one-pass
# batches, where sharing could not make the grid resident (results/nvidia-h100/2026-11-27-sharers)
SHARED_RING_COST = 0.10
NEAR_UNIFORM = 1.25  # longest length at most this over the mean: no program is the grid's tail


def near_uniform(lens) -> bool:
    """Whether no length of ``lens`` is more than NEAR_UNIFORM times their mean."""
    return max(lens) * len(lens) <= NEAR_UNIFORM * sum(lens)


def resident_grid(problem, programs: int, sms: int, residency_: int = 1) -> bool:
    """Whether a one-pass grid of ``programs`` programs of whole sequences, ``residency_`` an SM
    with their deep rings, should share its ``sms`` SMs so that all are resident from the start:
    more than the SMs hold now, no more than MAX_SHARERS an SM, near-uniform lengths (a longer
    program would end alone, streaming slowest through a narrow ring), and a last wave whose
    empty part costs more than SHARED_RING_COST."""
    held = sms * max(1, residency_)
    if programs <= held or programs > MAX_SHARERS * sms:
        return False
    if not near_uniform(problem.attended_lens):
        return False
    turns = programs / held
    return math.ceil(turns) / turns > 1 + SHARED_RING_COST


def shared_bytes_each(sharers_: int, limits: SmLimits = SmLimits()) -> int:
    """Shared memory a program may take for ``sharers_`` of them to be resident on one SM."""
    return limits.smem // max(1, sharers_) - limits.reserved_smem


def registers_for(programs: int, num_warps: int, limits: SmLimits = SmLimits()) -> int:
    """The most registers a thread may use (a multiple of 8, the allocation step) for an SM's
    register file to hold ``programs`` programs of ``num_warps`` warps (ptxas's ceiling at most)."""
    warps_per_quarter = -(-programs * num_warps // 4)
    return min(MAX_THREAD_REGS, limits.regs // 4 // warps_per_quarter // 256 * 8)


def register_cap(regs_per_thread: int, smem_bytes: int, num_warps: int, programs: int, sms: int,
                 limits: SmLimits = SmLimits()) -> int:
    """Programs a SM would hold with the registers capped (a launch's ``min_blocks``): one more
    than a compiled kernel's ``regs_per_thread`` let it hold, where registers alone bind its
    residency (shared memory, threads and the program limit would hold one more) and the grid's
    ``programs`` (whole sequences: batch x KV heads x row blocks) are more than the ``sms`` hold
    now; 0 otherwise. ptxas's count moves with unrelated edits of a kernel, and the residency
    with it: a cap makes the residency the launch's. Where the SMs hold the grid already, a cap
    buys no program that runs and costs the kernel registers
    (results/nvidia-h200/2026-11-27-register-cap)."""
    now = residency(regs_per_thread, smem_bytes, num_warps, limits)
    if programs <= sms * now:
        return 0
    return now + 1 if residency(8, smem_bytes, num_warps, limits) > now else 0


def check_min_blocks(min_blocks, num_warps: int, limits: SmLimits = SmLimits()) -> None:
    """A ``min_blocks`` launch option (None: the rule's), or a ``ProblemError`` naming the rule."""
    most = limits.threads // (32 * num_warps)
    if min_blocks is not None and (isinstance(min_blocks, bool) or not isinstance(min_blocks, int)
                                   or not 0 <= min_blocks <= most):
        raise ProblemError(f"config: min_blocks={min_blocks!r}: programs a SM, an int from 0 (no "
                           f"cap) to {most} ({limits.threads} threads an SM over {num_warps} "
                           "warps a program)")


REFUSED_CAPS: set = set()  # (uncapped binary's hash, cap) the compiler refused in this process


def capped_kernel(compile_with: Callable, inputs, num_warps: int, block_h: int,
                  min_blocks: int | None, too_few: type[Exception] | tuple = ()):
    """(compiled kernel, min_blocks, register cap or None) of a launch on ``inputs`` of
    ``block_h`` query rows a program; ``compile_with(cap)`` compiles and loads the kernel under a
    per-thread register cap (None: ptxas's own count). ``min_blocks`` given: that many programs a
    SM (0: no cap). None: ``register_cap``'s rule on the uncapped kernel, kept where the capped
    one holds the programs asked for and needs no more local memory (spills; a spill can cost
    more than the program it buys). ``too_few``: the compiler's error where a cap is below what
    an instruction of the kernel needs (wgmma's accumulators, at 8 warps and 80 registers): the
    rule's cap is then dropped, and one asked for refused as a ``ProblemError``."""
    limits = sm_limits(inputs.device)
    check_min_blocks(min_blocks, num_warps, limits)
    if min_blocks == 0:
        return compile_with(None), 0, None
    if min_blocks is not None:
        cap = registers_for(min_blocks, num_warps, limits)
        try:
            return compile_quietly(compile_with, cap), min_blocks, cap
        except too_few as error:
            compile_with(None)  # raises the kernel's own error where the cap is not what fails
            raise ProblemError(f"config: min_blocks={min_blocks} caps a thread at {cap} registers "
                               f"({num_warps} warps a program), fewer than an instruction of this "
                               f"kernel needs: {compiler_says(error)}") from error
    kernel = compile_with(None)
    programs = inputs.problem.batch * inputs.problem.num_kv_heads * num_head_blocks(inputs.problem,
                                                                                    block_h)
    rule = register_cap(kernel.n_regs, kernel.metadata.shared, num_warps, programs,
                        sm_count(inputs.device), limits)
    if not rule:
        return kernel, 0, None
    cap = registers_for(rule, num_warps, limits)
    refused = (getattr(kernel, "hash", None), cap)  # the compiler keeps no failed build: we do
    if refused in REFUSED_CAPS:
        return kernel, 0, None
    try:
        capped = compile_quietly(compile_with, cap)
    except too_few:
        if refused[0] is not None:  # a binary with no hash (a stand-in) is not told apart
            REFUSED_CAPS.add(refused)
        return kernel, 0, None
    held = residency(capped.n_regs, capped.metadata.shared, num_warps, limits)
    if held < rule or capped.n_spills > kernel.n_spills:
        return kernel, 0, None
    return capped, rule, cap


def compile_quietly(compile_with: Callable, cap: int):
    """``compile_with(cap)`` with its standard output dropped: a compiler that refuses a cap may
    print the whole PTX it was given (Triton does), thousands of lines a refused launch."""
    with contextlib.redirect_stdout(io.StringIO()):
        return compile_with(cap)


def compiler_says(error: Exception) -> str:
    """The compiler's own reason in its error: the first line that says 'fatal' (ptxas's, before
    the repro command Triton puts last), else the last line."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return next((line for line in lines if "fatal" in line.lower()), lines[-1] if lines else repr(error))


def loaded_binary(kernel, grid, args: tuple, kwargs: dict):
    """The binary of a Triton JIT kernel's launch ``kernel[grid](*args, **kwargs)``, compiled and
    loaded, not launched: its n_regs and n_spills are known from then on."""
    binary = kernel.warmup(*args, grid=grid, **kwargs)
    binary._init_handles()
    return binary


def capped_warmup(kernel, args, grid, kwargs: dict, min_blocks: int | None, inputs,
                  too_few: type[Exception]):
    """``capped_kernel`` of the launch ``kernel[grid](*args, **kwargs)`` of a JIT kernel that
    compiles and loads without launching (``warmup``) and takes the cap as its ``maxnreg``;
    ``too_few``: its compiler's error for a cap the kernel cannot be compiled in."""
    def compile_with(cap):
        return loaded_binary(kernel, grid, args, {**kwargs, "maxnreg": cap})
    return capped_kernel(compile_with, inputs, kwargs["num_warps"], kwargs["BLOCK_H"], min_blocks,
                         too_few)


class CombineTiles(NamedTuple):
    """A combine program's step: [slots, rows, dims] of partials (``combine_blocks``)."""

    slots: int
    rows: int
    dims: int

    def grid(self, num_merges: int, num_rows: int, head_dim: int) -> tuple[int, int, int]:
        """The combine's grid: (merge, row block, dim block) programs, as the kernels read
        their program ids (the dim blocks past the head dim left out)."""
        return num_merges, -(-num_rows // self.rows), -(-head_dim // self.dims)


def combine_blocks(num_merges: int, num_rows: int, max_slots: int, head_dim_pad: int,
                   sms: int) -> CombineTiles:
    """(slots, rows, dims) of a combine program's step, for the split-K launchers whose combine
    merges [slots, rows, dims] tiles: up to COMBINE_SLOTS slots, and as many of a sequence's
    ``num_rows`` (q_len x query heads) as keep the tile within COMBINE_TILE floats, fewer while
    the grid (``num_merges`` x row blocks) leaves some of the ``sms`` idle. A program a row
    leaves a multi-token query's hundreds of rows each a program too small to cover its launch.
    Where a row a program still leaves SMs idle (one long sequence: many slots, few rows), the
    head dim is cut too, down to COMBINE_MIN_DIMS, and the slots fill the tile: its many slots
    are merged in one step on several SMs, not in a loop of dependent loads on a few."""
    slots_pow2 = 1 << (max(max_slots, 1) - 1).bit_length()
    block_s = min(COMBINE_SLOTS, slots_pow2)
    rows_pow2 = 1 << (max(num_rows, 1) - 1).bit_length()
    block_r = max(1, min(rows_pow2, COMBINE_TILE // (block_s * head_dim_pad)))
    while block_r > 1 and num_merges * -(-num_rows // block_r) < sms:
        block_r //= 2
    block_d = head_dim_pad
    if block_r == 1:
        while block_d > COMBINE_MIN_DIMS and num_merges * num_rows * (head_dim_pad // block_d) < sms:
            block_d //= 2
        # (dims under a warp's 32 lanes are held twice: the tile counts 32 of them)
        block_s = max(block_s, min(slots_pow2, COMBINE_TILE // max(block_d, COMBINE_MIN_DIMS)))
    return CombineTiles(block_s, block_r, block_d)


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
    lens = p.seq_lens if seq_lens is None else seq_lens
    offsets = None
    if p.window is not None:  # each sequence's span from the granule holding the window's start
        offsets = np.asarray(p.window_starts, dtype=np.int64) // granule * granule
        lens = np.asarray(lens, dtype=np.int64) - offsets
    split_plan = plan(lens, p.num_kv_heads, programs, granule, num_splits=num_splits,
                      shortest=shortest, overhead=overhead)
    if offsets is not None:  # the items moved to their spans: what the window masks gets none
        split_plan.items[:, 1:3] += offsets[split_plan.items[:, 0]].astype(np.int32)[:, None]
    if split_plan.num_items > MAX_ITEMS:
        raise Unsupported(f"{split_plan.num_items} work items of {split_plan.chunk} tokens: more "
                          f"than the {MAX_ITEMS} a grid dimension holds (fewer num_splits)")
    return split_plan


@dataclass
class SplitLaunch:
    """The host side every split-K launcher shares: the plan of one launch, its workspace on the
    device, the partials, and ``replan`` (the plan again from the host lengths into the same
    workspace: what a serving loop redoes per batch, ``Launch.plan``)."""

    plan: SplitPlan
    workspace: Workspace
    part_out: torch.Tensor
    part_lse: torch.Tensor
    replan: Callable[[], dict]

    @property
    def tensors(self) -> dict[str, torch.Tensor]:
        return self.workspace.tensors

    @classmethod
    def of(cls, split_plan: SplitPlan, inputs, make_plan: Callable[[], SplitPlan] | None = None):
        """``split_plan``'s workspace and partials on the inputs' device; ``make_plan`` makes
        the batch's plan again (None: the launch keeps this one, e.g. one item per sequence)."""
        workspace = Workspace(split_plan, inputs.device)
        part_out, part_lse = new_partials(split_plan, inputs.problem, inputs.device)
        return cls(split_plan, workspace, part_out, part_lse,
                   lambda: workspace.load(make_plan() if make_plan else split_plan))

    def reported(self) -> dict:
        """What every split-K ``Launch.config`` records of its plan."""
        return {"num_items": self.plan.num_items, "chunk": self.plan.chunk,
                "merges": self.plan.num_merges}


def split_launch(inputs, programs_per_sm: int, tile: int, num_splits: int | None,
                 head_blocks: int = 1, whole_pages: bool = False, shortest: int = MIN_CHUNK,
                 overhead: int = OVERHEAD_TOKENS, seq_lens=None) -> SplitLaunch:
    """Plan, workspace and partials of one split-K launch (``for_launch``'s arguments;
    ``seq_lens`` the host lengths where the launcher already made them)."""
    lens = host_lengths(inputs) if seq_lens is None else seq_lens

    def make_plan() -> SplitPlan:
        return for_launch(inputs, programs_per_sm, tile, num_splits, head_blocks, whole_pages,
                          seq_lens=lens, shortest=shortest, overhead=overhead)

    return SplitLaunch.of(make_plan(), inputs, make_plan)
