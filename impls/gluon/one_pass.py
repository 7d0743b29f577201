"""Gluon one-pass decode, on the dense or the paged layout (``IS_PAGED``).

Algorithm: grid (num_kv_heads x row blocks, batch; row blocks: a multi-token query's tokens x the
group in blocks of ``BLOCK_H`` rows); each program streams its sequence's K/V tiles through a
``NUM_STAGES``-slot cp.async ring in shared memory once (``DENSE_TMA=1``: dense tiles by TMA),
for all query heads of its GQA group at once (``_common.attend``: mma_v2 scores and P.V, online
softmax), and writes the final ``out`` and ``lse``. Paged: each tile's rows are gathered
through the block table, its entries loaded one tile ahead. No workspace, no second kernel.
Expected bottleneck: HBM bandwidth when batch x num_kv_heads fills the GPU; at small batch the
grid is too small (8 programs at batch 1 for Llama-3-8B) and split-K is the answer.
"""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.runtime.errors import PTXASError

from impls import plan as planner
from impls.common import (kv_scale_args, l2_bytes, mask_args, num_head_blocks, program_tokens,
                          query_args, require_alignment, sm_count, tile_kernel_args)
from impls.gluon import _ws
from impls.gluon._common import (COPY_BYTES, attend, kv_descriptors, pick_launch_config, reported,
                                 store_rows)
from impls.registry import Launch


# runtime ints that vary per problem are not specialised (fewer recompiles, same code)
@gluon.jit(do_not_specialize=["page_size", "group_size", "q_len", "row_blocks"])
def decode_kernel(
    q_ptr, k_ptr, v_ptr, seq_lens_ptr, block_table_ptr, out_ptr, lse_ptr,
    stride_qb, stride_qh, stride_kp, stride_kt, stride_kh, stride_btb, stride_ob, stride_oh,
    stride_lb, page_size, group_size, qk_scale, k_desc, v_desc, k_hi_desc, v_hi_desc,
    k_scale_ptr, v_scale_ptr, scale_stride, window, softcap, q_len, row_blocks,
    HEAD_DIM: gl.constexpr, HEAD_DIM_PAD: gl.constexpr, D_HI: gl.constexpr,
    BLOCK_H: gl.constexpr, BLOCK_N: gl.constexpr, IS_PAGED: gl.constexpr, PAGE_SIZE: gl.constexpr,
    NUM_STAGES: gl.constexpr, DENSE_TMA: gl.constexpr, KV_SCALED: gl.constexpr,
    SOFTCAP: gl.constexpr, ROW_SPANS: gl.constexpr, WGMMA: gl.constexpr,
):
    # impls.plan.one_pass_grid's order: a sequence's KV heads side by side, a head's row blocks
    # beside each other
    pid_kvh = gl.program_id(0) // row_blocks
    row0 = gl.program_id(0) % row_blocks * BLOCK_H  # the block of the KV head's query rows
    pid_b = gl.program_id(1)
    seq_len = gl.load(seq_lens_ptr + pid_b)
    out, out_hi, lse = attend(q_ptr, k_ptr, v_ptr, k_desc, v_desc, k_hi_desc, v_hi_desc,
                              block_table_ptr, pid_b, pid_kvh, 0, seq_len, group_size, stride_qb,
                              stride_qh, stride_kp, stride_kt, stride_kh, stride_btb, page_size,
                              qk_scale, k_scale_ptr, v_scale_ptr, scale_stride, seq_len, window,
                              softcap, q_len, row0, HEAD_DIM, HEAD_DIM_PAD, D_HI, BLOCK_H,
                              BLOCK_N, IS_PAGED, PAGE_SIZE, NUM_STAGES, DENSE_TMA, KV_SCALED,
                              SOFTCAP, ROW_SPANS, WGMMA)
    head0 = pid_kvh * group_size
    token0 = pid_b * q_len
    store_rows(out_ptr + token0 * stride_ob + head0 * stride_oh, lse_ptr + token0 * stride_lb + head0,
               out, out_hi, lse, stride_ob, stride_oh, stride_lb, group_size, q_len, row0,
               BLOCK_H, HEAD_DIM, HEAD_DIM_PAD, D_HI, WGMMA)


def tma_config(p, config: dict | None, sms: int) -> dict | None:
    """The one-pass config by TMA for ``p`` on ``sms`` SMs, or None where cp.async takes it.
    Dense sequences that fill a TMA ring stream best as split-K's items do, by TMA, the head dim
    in one padded tile (the tuner's pick on seed 104; A/B on seeds 107-108 and the grid:
    results/nvidia-h200/2026-11-27-combine-x4/rules-ab); shorter ones, and near-uniform grids
    whose last wave would run part-empty (impls.plan.resident_grid), by cp.async, several
    programs an SM."""
    if p.layout != "dense" or not (config or {}).get("DENSE_TMA", 1):
        return None
    cfg = pick_launch_config(p, {"DIM_SPLIT": 0, **(config or {})}, sharers=1, tma=True)
    programs = p.batch * p.num_kv_heads * num_head_blocks(p, cfg["BLOCK_H"])
    # TMA's ring is sized for one program an SM (sharers=1), as the rule counts it. Where it comes
    # out smaller (fp8, head dim 64: the tile's cap) more are resident; counting those would move
    # the fp8 grid's batch-64 cells to cp.async, unmeasured: left as measured
    if program_tokens(p) < cfg["NUM_STAGES"] * cfg["BLOCK_N"] or \
            planner.resident_grid(p, programs, sms):
        return None
    return cfg


def prepare(inputs, out, lse, config: dict | None = None) -> Launch:
    p = inputs.problem
    sms = sm_count(inputs.device)
    ws = _ws.ws_config(p, config, l2_bytes(inputs.device), sms)
    config = {k: v for k, v in (config or {}).items() if k != "WARP_SPEC"}
    if ws is not None:
        return _prepare_ws(inputs, out, lse, ws)
    waves = planner.sharers(p.batch * p.num_kv_heads, sms)  # programs per SM
    cfg = tma_config(p, config, sms) or pick_launch_config(p, config, sharers=waves, tma=False)
    require_alignment(inputs, COPY_BYTES)
    rows = query_args(p, cfg["BLOCK_H"])
    grid = planner.one_pass_grid(p, rows["row_blocks"])
    args = (*tile_kernel_args(inputs, out, lse), *kv_descriptors(inputs, cfg),
            *kv_scale_args(inputs).values(), *mask_args(p).values(), *rows.values())
    min_blocks = cfg.pop("MIN_BLOCKS")
    _, min_blocks, cap = planner.capped_warmup(decode_kernel, args, grid, cfg, min_blocks, inputs,
                                              PTXASError)

    def run():
        decode_kernel[grid](*args, **cfg, maxnreg=cap)

    return Launch(run, {**reported(cfg), "MIN_BLOCKS": min_blocks, "WARP_SPEC": 0})


def _prepare_ws(inputs, out, lse, cfg: dict) -> Launch:
    """The warp-specialized kernel's launch (``impls.gluon._ws``): its registers a partition are
    set in the kernel (setmaxnreg), within ``KERNEL_MAXNREG`` a thread of the program's 12 warps."""
    p = inputs.problem
    require_alignment(inputs, COPY_BYTES)
    rows = query_args(p, _ws.WS_ROWS)
    args = (*tile_kernel_args(inputs, out, lse), *kv_descriptors(inputs, cfg),
            *mask_args(p).values(), *rows.values())
    grid = _ws.grid(p)

    def run():
        _ws.ws_kernel[grid](*args, **cfg, maxnreg=_ws.KERNEL_MAXNREG)

    return Launch(run, _ws.reported(cfg))
