"""Properties of the split-KV planner (``impls/plan.py``), on the host: every token of every
sequence is in exactly one work item, no item is longer than the chunk, item boundaries fall on
the granule (tiles, pages), the chunk is the one of least estimated makespan, only split
sequences are merged, each over its own slots, and ``num_splits`` cuts uniformly. A planner
that drops the last chunk of the longest sequence is caught (the negative control), here and,
run as a kernel, by the properties of ``test_properties.py``."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from conformance.negative_controls import drop_last_chunk_of_longest
from impls import plan as planner

GRANULES = (16, 64, 128, 256, 384, 2176)  # tiles, and tile-page lcms (128 and 17 -> 2176)


def coverage_errors(split_plan: planner.SplitPlan, seq_lens) -> list[str]:
    """What is wrong with a plan's work items and merges, as a list of findings (empty: none)."""
    errors = []
    items = split_plan.items
    for b, n in enumerate(seq_lens):
        mine = items[items[:, 0] == b]
        ranges = sorted((int(s), int(e)) for _, s, e, _ in mine)
        covered = [t for s, e in ranges for t in range(s, e)]
        if covered != list(range(n)):
            errors.append(f"sequence {b} (length {n}): items cover {ranges}")
        slots = sorted(int(s) for s in mine[:, 3])
        if len(mine) == 1 and slots != [-1]:
            errors.append(f"sequence {b} is one item but writes a partial slot {slots}")
        if len(mine) > 1:
            where = np.flatnonzero(split_plan.merge_seqs == b)
            if len(where) != 1:
                errors.append(f"sequence {b} is split but merged {len(where)} times")
            else:
                first, last = split_plan.merge_indptr[where[0]], split_plan.merge_indptr[where[0] + 1]
                if slots != list(range(first, last)):
                    errors.append(f"sequence {b}: slots {slots}, merged over [{first}, {last})")
    if any(e - s > split_plan.chunk or e <= s for _, s, e, _ in items):
        errors.append(f"an item is empty or longer than the chunk {split_plan.chunk}")
    return errors


batches = st.lists(st.integers(1, 40_000), min_size=1, max_size=64)
settings_ = settings(max_examples=200, deadline=None)


@settings_
@given(seq_lens=batches, kv_heads=st.sampled_from((1, 2, 4, 8)),
       max_programs=st.sampled_from((4, 66, 132, 264)), granule=st.sampled_from(GRANULES))
@example(seq_lens=[1], kv_heads=8, max_programs=132, granule=128)  # a sequence of one token
@example(seq_lens=[2049, 2048, 1], kv_heads=8, max_programs=132, granule=128)  # just above a chunk
@example(seq_lens=[32768] + [512] * 63, kv_heads=8, max_programs=132, granule=128)  # one long
def test_every_token_in_exactly_one_item(seq_lens, kv_heads, max_programs, granule):
    split_plan = planner.plan(seq_lens, kv_heads, max_programs, granule)
    assert not coverage_errors(split_plan, seq_lens)
    assert split_plan.chunk % granule == 0
    starts = split_plan.items[:, 1]
    assert not (starts % split_plan.chunk).any(), "items start on chunk boundaries"
    lengths = split_plan.items[:, 2] - split_plan.items[:, 1]
    assert (np.diff(lengths) <= 0).all(), "longest items first"


@settings_
@given(seq_lens=batches, kv_heads=st.sampled_from((1, 8)), max_programs=st.sampled_from((4, 132)),
       granule=st.sampled_from((64, 128)))
@example(seq_lens=[2757, 8193, 10047], kv_heads=1, max_programs=4, granule=64)
def test_the_chunk_has_the_least_estimated_makespan(seq_lens, kv_heads, max_programs, granule):
    """Against every candidate (whole granules from the minimum chunk to the longest sequence):
    the search weighs the crossing of the smooth bounds and the even cuts of the longest
    sequence, so off those it may miss a wave's share of the best (1 / WAVES_COUNTED)."""
    lens = np.array(seq_lens)
    chunk = planner.balanced_cut(lens, kv_heads, max_programs, granule)
    whole = planner.round_up(max(seq_lens), granule)
    candidates = range(planner.round_up(planner.MIN_CHUNK, granule), whole + 1, granule)
    best = min([planner.makespan(lens, c, kv_heads, max_programs) for c in candidates],
               default=planner.makespan(lens, whole, kv_heads, max_programs))
    assert planner.makespan(lens, chunk, kv_heads, max_programs) <= \
        best * (1 + 1 / planner.WAVES_COUNTED)
    assert planner.MIN_CHUNK <= chunk or chunk == whole


@settings_
@given(seq_lens=batches, num_splits=st.integers(1, 300), granule=st.sampled_from(GRANULES))
def test_num_splits_cuts_every_sequence_at_the_same_boundaries(seq_lens, num_splits, granule):
    split_plan = planner.plan(seq_lens, 8, 132, granule, num_splits=num_splits)
    assert not coverage_errors(split_plan, seq_lens)
    assert split_plan.chunk == planner.round_up(-(-max(seq_lens) // num_splits), granule)
    per_seq = np.bincount(split_plan.items[:, 0], minlength=len(seq_lens))
    assert per_seq.max() <= num_splits


def test_a_batch_that_fills_the_gpu_splits_only_its_tail():
    """63 sequences of 512 tokens and one of 32k, 8 KV heads, 132 programs: only the long one is
    split, into chunks no longer than the per-program work of the rest of the batch."""
    seq_lens = [512] * 63 + [32768]
    split_plan = planner.plan(seq_lens, 8, 132, 128)
    assert list(split_plan.merge_seqs) == [63]
    assert split_plan.chunk < 32768 and split_plan.num_items > 64
    assert planner.plan([8192] * 64, 8, 132, 128).num_merges == 0  # uniform and full: no split


@pytest.mark.xfail(strict=True, reason="negative control: a planner that drops the last chunk of "
                                       "the longest sequence must be caught")
@settings_
@given(seq_lens=batches, granule=st.sampled_from(GRANULES))
def test_negative_control_dropped_last_chunk_is_caught(seq_lens, granule):
    split_plan = drop_last_chunk_of_longest(planner.plan(seq_lens, 8, 132, granule), seq_lens)
    assert not coverage_errors(split_plan, seq_lens)


@settings_
@given(seq_lens=batches, kv_heads=st.sampled_from((1, 8)), max_programs=st.sampled_from((4, 132)),
       granule=st.sampled_from(GRANULES), num_splits=st.none() | st.integers(1, 40))
def test_python_and_numpy_paths_make_the_same_plan(seq_lens, kv_heads, max_programs, granule,
                                                   num_splits):
    """Small batches are planned in Python (numpy's per-call overhead), large ones in numpy: the
    two give the same items, in the same order, and the same merges."""
    from unittest import mock

    fast = planner.plan(seq_lens, kv_heads, max_programs, granule, num_splits=num_splits)
    with mock.patch.object(planner.Batch, "SMALL", 0), mock.patch.object(planner.Batch, "SMALL_ITEMS", 0):
        arrays = planner.plan(seq_lens, kv_heads, max_programs, granule, num_splits=num_splits)
    assert fast.chunk == arrays.chunk
    for name in ("items", "merge_seqs", "merge_indptr"):
        np.testing.assert_array_equal(getattr(fast, name), getattr(arrays, name), err_msg=name)


@settings_
@given(seq_lens=batches, kv_heads=st.sampled_from((1, 8)), max_programs=st.sampled_from((4, 132)),
       granule=st.sampled_from(GRANULES), num_splits=st.none() | st.integers(1, 40))
def test_a_split_sequences_slots_follow_its_pieces(seq_lens, kv_heads, max_programs, granule,
                                                   num_splits):
    """Piece ``start // chunk`` of a split sequence writes slot ``indptr[m] + start // chunk``,
    and the sequence has ``ceil(length / chunk)`` slots: what a merge that finds a sequence's
    partials from its own piece (one fused into the split kernel) relies on."""
    split_plan = planner.plan(seq_lens, kv_heads, max_programs, granule, num_splits=num_splits)
    first = dict(zip(split_plan.merge_seqs.tolist(), split_plan.merge_indptr[:-1].tolist()))
    count = dict(zip(split_plan.merge_seqs.tolist(), np.diff(split_plan.merge_indptr).tolist()))
    for b, start, _, slot in split_plan.items.tolist():
        if slot >= 0:
            assert slot == first[b] + start // split_plan.chunk
            assert count[b] == -(-seq_lens[b] // split_plan.chunk)


@pytest.mark.parametrize("batch,kv_heads,programs,longest_item", [
    (16, 10, 132, 1 / 4),  # 160 (sequence, KV head) pairs on 132 slots: two waves whole
    (1, 8, 132, 1 / 16),  # one sequence: its pieces fill the slots once
    (16, 8, 128, 1),  # 128 pairs on 128 slots: one wave whole, nothing to gain from a cut
])
def test_the_plan_counts_waves(batch, kv_heads, programs, longest_item):
    """A uniform batch of one more (sequence, KV head) pair than the slots ran in two waves
    whole; the waves' bound cuts it so the items make whole waves (a quarter of a sequence: five
    waves of a quarter, 1.25x one wave, against 2x)."""
    length = 32768
    lens = [length] * batch
    chunk = planner.balanced_cut(lens, kv_heads, programs, 128)
    whole = planner.makespan(lens, length, kv_heads, programs)
    assert planner.makespan(lens, chunk, kv_heads, programs) <= whole
    assert chunk <= length * longest_item * 1.01
    if longest_item < 1:
        assert planner.makespan(lens, chunk, kv_heads, programs) < 0.7 * whole


def test_the_waves_bound():
    """(k + 1) x the (k x slots)-th longest item: 160 equal items on 132 slots take two item
    lengths, 132 take one."""
    batch = planner.Batch([1000] * 160)
    assert planner.waves(batch, 1000, 160, 1, 132) == 2000
    assert planner.waves(planner.Batch([1000] * 132), 1000, 132, 1, 132) == 0  # one wave: none
    # cut at 600: 160 whole items of 600 then 160 tails of 400; the 264th is a tail
    assert planner.waves(batch, 600, 320, 1, 132) == max(2 * 600, 3 * 400)


@pytest.mark.parametrize("n_regs, shared, num_warps, expected", [
    (223, 133136, 4, 1),  # a TMA split kernel, BLOCK_N 128 (Nsight Compute: 1, by smem)
    (117, 34620, 4, 4),  # a cp.async one-pass kernel, BLOCK_N 32 (ncu: 4, by registers)
    (96, 34620, 4, 5),  # a TMA one-pass kernel, BLOCK_N 32 (ncu: 5, registers and smem)
    (192, 8192, 2, 4),  # 2 warps: each sub-partition holds 2 warps of 6144 registers, not 2.67
    (32, 0, 1, 32),  # the 32-programs-per-SM limit
    (32, 0, 32, 2),  # the threads per SM (2048)
])
def test_residency_follows_the_compiled_binary(n_regs, shared, num_warps, expected):
    """The split planner's programs per SM come from a compiled kernel's registers and shared
    memory by the CUDA occupancy rules (the first three rows are what Nsight Compute reported
    on an H100)."""
    assert planner.residency(n_regs, shared, num_warps) == expected
