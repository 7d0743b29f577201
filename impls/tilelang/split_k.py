"""TileLang split-K decode (flash-decoding) over a balanced plan, on the dense or the paged layout.

Algorithm: ``impls.plan`` cuts the batch into work items (a token range of one sequence, at most
a chunk of whole tiles, and of whole pages where a tile lies inside a page), sized so the items
fill the GPU without one outlasting the rest; ``num_splits`` forces a uniform cut. The split
kernel, grid (num_kv_heads, num_items), runs ``_common``'s ``attend`` over its item's range for
its GQA group; an item that is a whole sequence writes the final ``out`` and ``lse``, a piece of
a split one writes its normalised partial output (float32) and LSE to its slot of the
workspace. The combine kernel, grid (num_merges, num_q_heads), merges each split sequence over
its own slots: out = sum_s exp(lse_s - lse) * out_s, lse = log(sum_s exp(lse_s)).
The plan is made in ``prepare`` from the host lengths (the launch's ``plan`` callable redoes it
into the same workspace, for the harness to time).
Why: at batch 1 the one-pass grid has num_kv_heads blocks for 100+ SMs, and in a ragged batch
the longest sequence sets the time; splitting fills the GPU and cuts the tail, for a round trip
of the partials and a second launch.
Expected bottleneck: HBM bandwidth once the items cover the SMs; launch and merge overhead at
short sequences.
"""

import math
import time

import tilelang.language as T

from impls import plan as planner
from impls.common import LOG2E
from impls.registry import Launch
from impls.tilelang._common import (REPORTED, attend_macro, autotune, compile_key, compiled,
                                    kv_scales, pick_launch_config, scale_shape, store_macro,
                                    tile_bound)

RESIDENT_PROGRAMS = 1  # split blocks per SM: the K/V pipeline buffers take its shared memory
# a combine block per (split sequence, query head): its HEAD_DIM row over at most this many
# threads, a divisor of HEAD_DIM (layout inference finds no layout for 160 over 128 threads)
COMBINE_THREADS = 128


def split_kernel(HEAD_DIM, GROUP_SIZE, NUM_KV_HEADS, DTYPE, KV_DTYPE, SCALES, BLOCK_H, BLOCK_N,
                  PAGE_SIZE, GATHER,
                 threads, num_stages):
    """The split prim_func: one block per (KV head, work item ``items[pid_i]`` = (sequence,
    start, end, slot or -1)); batch, cache rows, table columns, items and slots are symbolic."""
    batch, rows, table_cols, num_items, slots = T.dynamic("batch, rows, table_cols, items, slots")
    num_q_heads = GROUP_SIZE * NUM_KV_HEADS
    kv_shape = (rows, PAGE_SIZE, NUM_KV_HEADS, HEAD_DIM) if PAGE_SIZE else \
        (batch, rows, NUM_KV_HEADS, HEAD_DIM)
    attend = attend_macro(HEAD_DIM, GROUP_SIZE, BLOCK_H, BLOCK_N, PAGE_SIZE, GATHER, DTYPE,
                          KV_DTYPE, SCALES, threads, num_stages)
    store = store_macro(HEAD_DIM, GROUP_SIZE, BLOCK_H)

    @T.prim_func
    def split(
        q: T.Tensor((batch, num_q_heads, HEAD_DIM), DTYPE),
        k: T.Tensor(kv_shape, KV_DTYPE),
        v: T.Tensor(kv_shape, KV_DTYPE),
        items: T.Tensor((num_items, 4), "int32"),
        block_table: T.Tensor((batch, table_cols), "int32"),
        out: T.Tensor((batch, num_q_heads, HEAD_DIM), DTYPE),
        lse: T.Tensor((batch, num_q_heads), "float32"),
        part_out: T.Tensor((slots, num_q_heads, HEAD_DIM), "float32"),
        part_lse: T.Tensor((slots, num_q_heads), "float32"),
        qk_scale: T.float32,
        k_scale: T.Tensor(scale_shape(SCALES), "float32"),
        v_scale: T.Tensor(scale_shape(SCALES), "float32"),
    ):
        # KV heads vary fastest: an item's blocks start together, and the items' longest-first
        # order holds across the whole grid
        with T.Kernel(NUM_KV_HEADS, num_items, threads=threads) as (pid_kvh, pid_i):
            acc = T.alloc_fragment((BLOCK_H, HEAD_DIM), "float32")
            m_i = T.alloc_fragment((BLOCK_H,), "float32")
            l_i = T.alloc_fragment((BLOCK_H,), "float32")
            pid_b = items[pid_i, 0]
            slot = items[pid_i, 3]
            attend(q, k, v, k_scale, v_scale, block_table, pid_b, pid_kvh, items[pid_i, 1],
                   items[pid_i, 2], qk_scale, acc, m_i, l_i)
            if slot < 0:  # a whole sequence: the final result
                store(out, lse, pid_b, pid_kvh * GROUP_SIZE, acc, m_i, l_i)
            else:
                store(part_out, part_lse, slot, pid_kvh * GROUP_SIZE, acc, m_i, l_i)

    return split


def combine_kernel(HEAD_DIM, NUM_Q_HEADS, DTYPE):
    """The merge prim_func: one block per (split sequence ``merge_seqs[pid_m]``, query head
    ``pid_h``), over its slots [merge_indptr[pid_m], merge_indptr[pid_m + 1])."""
    batch, slots, num_merges, indptr_len = T.dynamic("batch, slots, merges, indptr_len")
    threads = math.gcd(COMBINE_THREADS, HEAD_DIM)

    @T.prim_func
    def combine(
        part_out: T.Tensor((slots, NUM_Q_HEADS, HEAD_DIM), "float32"),
        part_lse: T.Tensor((slots, NUM_Q_HEADS), "float32"),
        merge_seqs: T.Tensor((num_merges,), "int32"),
        merge_indptr: T.Tensor((indptr_len,), "int32"),
        out: T.Tensor((batch, NUM_Q_HEADS, HEAD_DIM), DTYPE),
        lse: T.Tensor((batch, NUM_Q_HEADS), "float32"),
    ):
        with T.Kernel(num_merges, NUM_Q_HEADS, threads=threads) as (pid_m, pid_h):
            acc = T.alloc_fragment((HEAD_DIM,), "float32")
            lse_max = T.alloc_local((1,), "float32")
            w_sum = T.alloc_local((1,), "float32")
            w = T.alloc_local((1,), "float32")
            pid_b = merge_seqs[pid_m]
            first = merge_indptr[pid_m]
            last = merge_indptr[pid_m + 1]
            # pass 1: the largest partial LSE (finite: every item holds at least one token)
            lse_max[0] = -T.infinity("float32")
            for s in T.serial(first, last):
                lse_max[0] = T.max(lse_max[0], part_lse[s, pid_h])
            # pass 2: weights exp(lse_s - max), weighted sum of the partials
            w_sum[0] = 0
            T.fill(acc, 0)
            for s in T.serial(first, last):
                w[0] = T.exp(part_lse[s, pid_h] - lse_max[0])
                w_sum[0] += w[0]
                for d in T.Parallel(HEAD_DIM):
                    acc[d] += w[0] * part_out[s, pid_h, d]
            for d in T.Parallel(HEAD_DIM):
                out[pid_b, pid_h, d] = acc[d] / w_sum[0]
            lse[pid_b, pid_h] = lse_max[0] + T.log(w_sum[0])

    return combine


def prepare(inputs, out, lse, num_splits: int | None = None, config: dict | None = None,
            tune: bool = False) -> Launch:
    p = inputs.problem
    cfg = pick_launch_config(p, config)
    # tuning tries several tiles on one plan: items cut at multiples of the largest
    tile = tile_bound("split-k", p.layout) if tune else cfg["BLOCK_N"]
    granule = math.lcm(tile, p.page_size) if p.layout == "paged" else tile  # tiles in a page
    split = planner.split_launch(inputs, RESIDENT_PROGRAMS, granule, num_splits)
    split_plan, part_out, part_lse = split.plan, split.part_out, split.part_lse
    table = inputs.block_table if p.layout == "paged" else inputs.seq_lens.view(-1, 1)
    split_args = (inputs.q, inputs.k, inputs.v, split.tensors["items"], table, out, lse, part_out,
                  part_lse, p.scale * LOG2E, *kv_scales(inputs))
    combine_args = (part_out, part_lse, split.tensors["merge_seqs"], split.tensors["merge_indptr"],
                    out, lse)
    tuning_s = None
    if tune:
        start = time.perf_counter()
        cfg, kernel = autotune(split_kernel, p, split_args, "split-k")
        tuning_s = time.perf_counter() - start
    else:
        kernel = compiled(split_kernel, compile_key(cfg))
    combine = compiled(combine_kernel, compile_key(dict(HEAD_DIM=p.head_dim,
                                                        NUM_Q_HEADS=p.num_q_heads,
                                                        DTYPE=p.dtype)))
    merges = split_plan.num_merges

    def run():
        kernel(*split_args)
        if merges:
            combine(*combine_args)

    return Launch(run, {**split.reported(), **{key: cfg[key] for key in REPORTED}},
                  plan=split.replan, tuning_s=tuning_s)
