"""TileLang building blocks shared by the one-pass and split-K decode kernels.

Every attention kernel runs one thread block per (sequence ``pid_b`` or split-K work item
``pid_i``, KV head ``pid_kvh``). The block copies the ``group_size`` query heads that share the
KV head into a ``[BLOCK_H, HEAD_DIM]`` shared tile (``BLOCK_H`` >= 16: the tensor-core MMA takes
16 rows; padding rows are zero and never stored), then streams the K/V tiles of its token range
through a ``T.Pipelined`` loop: ``T.gemm`` q x K^T into a float32 fragment, online softmax in
the log2 domain (``qk_scale`` = sm_scale * log2(e), ``exp2``), P (cast to the input dtype,
through shared memory) x V accumulated in float32.

How a K/V tile reaches shared memory (``GATHER``):

* ``"tile"``: one ``T.copy`` of ``BLOCK_N`` contiguous rows, the dense cache's, or the paged
  pool's where the tile lies inside one page (``page_size % BLOCK_N == 0``; one block-table entry
  per tile). On sm_90 TileLang lowers it to TMA loads in a warp-specialised producer/consumer
  pipeline of ``num_stages`` buffers.
* ``"token"``: a ``T.Parallel`` gather, row ``n`` of the tile from page
  ``block_table[b, t // page_size]``, row ``t % page_size`` (pages smaller than the tile); lowered
  to ``cp.async``. Its pipeline is one stage: a cp.async loop whose trip count varies per block
  crashes TileLang 0.1.15's codegen at ``num_stages`` >= 2 (``ptx_wait_group`` of a symbolic
  count; tile-ai/TileOPs#1852).

Rows past the range are scored -inf before the running max (``T.if_then_else``), so they get a
zero weight. A tile may load such rows (the dense cache's poisoned tail, a last page's tail): they
hold finite values there, and 0 x finite is 0. A token gather clamps its page index to the
sequence's last page, so it never reads a page past the end (NaN in the pool); a dense tile past
the cache's last row is zero-filled by the TMA unit.
"""

from __future__ import annotations

import functools

import tilelang
import tilelang.language as T
from tilelang.autotuner import AutoTuner

from impls.common import LN2, kv_scale_args, with_overrides
from impls.tilelang import BACKEND
from specs.problem import ProblemError

MIN_BLOCK_H = 16  # the MMA's 16 rows: the query group is padded up to this
MAX_BLOCK_H = 64  # q, scores and the accumulator of 64 rows still fit in registers
WARP_COLS = 8  # T.gemm (FullCol policy) gives each warp a multiple of 8 columns
TILE_PAIR_BYTES = 64 * 1024  # K + V tile of one pipeline stage: wider rows get fewer tokens
MAX_BLOCK_N = 128
TOKEN_BLOCK_N = 64  # a token gather's tile: 4 pages of 16 per cp.async group
THREADS = 128  # one warpgroup: 4 warps split the tile's columns in both GEMMs
NUM_STAGES = 2  # TMA pipeline: one K/V tile in flight while one is consumed
TOKEN_STAGES = 1  # see the module docstring (TileLang 0.1.15 codegen, tile-ai/TileOPs#1852)
REPORTED = ("BLOCK_N", "BLOCK_H", "GATHER", "num_warps", "num_stages")  # Launch.config
TL_KV_DTYPES = {"float8_e4m3fn": "float8_e4m3", "float8_e5m2": "float8_e5m2"}  # TileLang's names


def pick_launch_config(problem, config: dict | None = None) -> dict:
    """Compile-time shape of the kernels for ``problem`` (no device query); ``config``
    overrides the tunable ones (``BLOCK_N``, ``num_warps``, ``num_stages``); the kernels take
    ``threads`` (32 per warp)."""
    paged = problem.layout == "paged"
    fit = TILE_PAIR_BYTES // (2 * problem.head_dim * problem.kv_itemsize)  # tokens in a stage
    block_n = min(MAX_BLOCK_N, 1 << (fit.bit_length() - 1))
    if paged and problem.page_size % block_n:  # the largest tile inside a page, if any
        block_n = problem.page_size & -problem.page_size  # largest power of two dividing it
        if block_n < WARP_COLS * THREADS // 32:
            block_n = TOKEN_BLOCK_N
    defaults = dict(BLOCK_N=block_n, num_warps=THREADS // 32, num_stages=None)
    cfg = with_overrides(defaults, config)
    if cfg["num_warps"] not in (2, 4, 8):
        raise ProblemError(f"config: num_warps={cfg['num_warps']!r}: must be 2, 4 or 8")
    cfg["threads"] = 32 * cfg["num_warps"]
    gather = "token" if paged and problem.page_size % cfg["BLOCK_N"] else "tile"
    if cfg["num_stages"] is None:
        cfg["num_stages"] = TOKEN_STAGES if gather == "token" else NUM_STAGES
    cfg.update(HEAD_DIM=problem.head_dim, GROUP_SIZE=problem.group_size,
               NUM_KV_HEADS=problem.num_kv_heads, DTYPE=problem.dtype,
               KV_DTYPE=TL_KV_DTYPES.get(problem.kv_dtype, problem.dtype),
               SCALES=problem.cache.scales_per_tensor(problem.query),
               BLOCK_H=max(MIN_BLOCK_H, 1 << (problem.group_size - 1).bit_length()),
               PAGE_SIZE=problem.page_size if paged else 0, GATHER=gather)
    check_config(cfg)
    return cfg


def check_config(cfg: dict) -> None:
    """A ``ProblemError`` naming what TileLang cannot lower in ``cfg``."""
    block_n, threads, stages = cfg["BLOCK_N"], cfg["threads"], cfg["num_stages"]
    if not isinstance(block_n, int) or block_n < 16 or block_n & (block_n - 1) or block_n > 256:
        raise ProblemError(f"config: BLOCK_N={block_n!r}: must be a power of two in [16, 256]")
    if not isinstance(stages, int) or not 1 <= stages <= 4:
        raise ProblemError(f"config: num_stages={stages!r}: must be an integer in [1, 4]")
    cols = WARP_COLS * threads // 32
    if block_n % cols or cfg["HEAD_DIM"] % cols:
        raise ProblemError(f"config: BLOCK_N={block_n}, head_dim {cfg['HEAD_DIM']}: T.gemm splits "
                           f"both over {threads // 32} warps of {WARP_COLS}-column multiples")
    if cfg["GATHER"] == "token" and stages > 1:
        raise ProblemError(f"config: num_stages={stages} with pages of {cfg['PAGE_SIZE']} tokens "
                           f"(a BLOCK_N={block_n} tile gathers tokens): TileLang 0.1.15 cannot "
                           "lower a multi-stage cp.async pipeline of a per-block trip count "
                           "(tile-ai/TileOPs#1852); use num_stages=1, or a BLOCK_N dividing "
                           "the page")


def compile_key(cfg: dict) -> tuple:
    """The compile-time parameters of ``cfg`` as a hashable key (one kernel per key; the warps
    are the builder's ``threads``)."""
    return tuple(sorted((k, v) for k, v in cfg.items() if k != "num_warps"))


def tile_bound(variant: str, layout: str) -> int:
    """The largest ``BLOCK_N`` of the tune space (split-K's plan cuts items at its multiples)."""
    return max(c.get("block_n", 0) for c in BACKEND.space.configs(variant, layout))


@functools.cache
def compiled(builder, key: tuple):
    """``builder(**cfg)``'s prim_func compiled for the GPU here, once per process and key
    (TileLang also caches the build on disk, TILELANG_CACHE_DIR)."""
    return tilelang.compile(builder(**dict(key)), target="cuda")


def scale_shape(SCALES) -> tuple:
    """The kernels' K and V scale tensors: one float32 per KV head or one for all (an
    unquantised cache passes a [1] stand-in its kernels never read)."""
    return (max(1, SCALES),)


def kv_scales(inputs) -> tuple:
    """K's and V's scales as the kernels take them (``scale_shape``; ``kv_scale_args``)."""
    scales = kv_scale_args(inputs)
    return scales["k_scale_ptr"], scales["v_scale_ptr"]


def attend_macro(HEAD_DIM, GROUP_SIZE, BLOCK_H, BLOCK_N, PAGE_SIZE, GATHER, DTYPE, KV_DTYPE,
                 SCALES, threads, num_stages):
    """A ``T.macro`` computing the online softmax of one KV head's query group over tokens
    [start, end) of sequence ``pid_b`` into the fragments ``acc`` [BLOCK_H, HEAD_DIM], ``m_i``
    and ``l_i`` [BLOCK_H] (float32, log2 domain). An fp8 cache (``KV_DTYPE``): each tile lands
    as fp8 and is converted to the query's dtype in shared memory (exact), since T.gemm takes
    one operand dtype; K's scale folds into the score scale and V's into ``acc``, one float32
    product each."""
    acc_t = "float32"
    quantised = KV_DTYPE != DTYPE
    is_paged = PAGE_SIZE > 0
    col_split = T.GemmWarpPolicy.FullCol  # warps split the columns: 16 rows stay whole per warp

    @T.macro
    def load_tile(src, dst, block_table, pid_b, pid_kvh, tile_start, end):
        if not is_paged:
            T.copy(src[pid_b, tile_start:tile_start + BLOCK_N, pid_kvh, :], dst)
        elif GATHER == "tile":  # the tile lies inside one page: one entry (inline: TMA
            # lowering hoists the address, which a let-bound page would not survive)
            T.copy(src[block_table[pid_b, tile_start // PAGE_SIZE],
                       tile_start % PAGE_SIZE:tile_start % PAGE_SIZE + BLOCK_N, pid_kvh, :], dst)
        else:  # one entry per token, the page clamped to the range's last (no NaN pages)
            for n, d in T.Parallel(BLOCK_N, HEAD_DIM):
                tok = T.min(tile_start + n, end - 1)
                dst[n, d] = src[block_table[pid_b, tok // PAGE_SIZE], tok % PAGE_SIZE, pid_kvh, d]

    @T.macro
    def attend(q, k, v, k_scale, v_scale, block_table, pid_b, pid_kvh, start, end, qk_scale,
               acc, m_i, l_i):
        q_s = T.alloc_shared((BLOCK_H, HEAD_DIM), DTYPE)
        k_s = T.alloc_shared((BLOCK_N, HEAD_DIM), DTYPE)
        v_s = T.alloc_shared((BLOCK_N, HEAD_DIM), DTYPE)
        if quantised:
            k_q = T.alloc_shared((BLOCK_N, HEAD_DIM), KV_DTYPE)  # the tiles as stored
            v_q = T.alloc_shared((BLOCK_N, HEAD_DIM), KV_DTYPE)
        p_s = T.alloc_shared((BLOCK_H, BLOCK_N), DTYPE)  # P in shared: the PV GEMM's A operand
        s = T.alloc_fragment((BLOCK_H, BLOCK_N), acc_t)
        m_prev = T.alloc_fragment((BLOCK_H,), acc_t)
        alpha = T.alloc_fragment((BLOCK_H,), acc_t)
        l_tile = T.alloc_fragment((BLOCK_H,), acc_t)
        head0 = pid_kvh * GROUP_SIZE
        for h, d in T.Parallel(BLOCK_H, HEAD_DIM):
            q_s[h, d] = T.if_then_else(h < GROUP_SIZE, q[pid_b, head0 + h, d], 0)
        T.fill(acc, 0)
        T.fill(l_i, 0)
        T.fill(m_i, -T.infinity(acc_t))
        scale_at = pid_kvh if SCALES > 1 else 0
        score_scale = qk_scale * k_scale[scale_at] if quantised else qk_scale
        for t in T.Pipelined(T.ceildiv(end - start, BLOCK_N), num_stages=num_stages):
            tile_start = start + t * BLOCK_N
            if quantised:
                load_tile(k, k_q, block_table, pid_b, pid_kvh, tile_start, end)
                T.copy(k_q, k_s)
            else:
                load_tile(k, k_s, block_table, pid_b, pid_kvh, tile_start, end)
            T.clear(s)
            T.gemm(q_s, k_s, s, transpose_B=True, policy=col_split)
            for h, n in T.Parallel(BLOCK_H, BLOCK_N):  # mask before the max: -inf past the end
                s[h, n] = T.if_then_else(tile_start + n < end, s[h, n] * score_scale,
                                         -T.infinity(acc_t))
            T.copy(m_i, m_prev)
            T.reduce_max(s, m_i, dim=1, clear=False)
            for h in T.Parallel(BLOCK_H):
                alpha[h] = T.exp2(m_prev[h] - m_i[h])
            for h, n in T.Parallel(BLOCK_H, BLOCK_N):
                s[h, n] = T.exp2(s[h, n] - m_i[h])
            T.reduce_sum(s, l_tile, dim=1)
            for h in T.Parallel(BLOCK_H):
                l_i[h] = l_i[h] * alpha[h] + l_tile[h]
            T.copy(s, p_s)  # P.V on the tensor cores in the input dtype, float32 accumulation
            for h, d in T.Parallel(BLOCK_H, HEAD_DIM):
                acc[h, d] *= alpha[h]
            if quantised:
                load_tile(v, v_q, block_table, pid_b, pid_kvh, tile_start, end)
                T.copy(v_q, v_s)
            else:
                load_tile(v, v_s, block_table, pid_b, pid_kvh, tile_start, end)
            T.gemm(p_s, v_s, acc, policy=col_split)
        if quantised:
            for h, d in T.Parallel(BLOCK_H, HEAD_DIM):
                acc[h, d] *= v_scale[scale_at]

    return attend


def store_macro(HEAD_DIM, GROUP_SIZE, BLOCK_H):
    """A ``T.macro`` storing the group's valid rows normalised: ``out[row, head0 + h, :]`` and
    the natural-log ``lse[row, head0 + h]``; an empty range gives 0 and -inf."""

    @T.macro
    def store(out, lse, row, head0, acc, m_i, l_i):
        for h, d in T.Parallel(BLOCK_H, HEAD_DIM):
            if h < GROUP_SIZE:
                out[row, head0 + h, d] = acc[h, d] / T.if_then_else(l_i[h] == 0, 1.0, l_i[h])
        for h in T.Parallel(BLOCK_H):
            if h < GROUP_SIZE:
                lse[row, head0 + h] = T.if_then_else(
                    l_i[h] == 0, -T.infinity("float32"), (m_i[h] + T.log2(l_i[h])) * LN2)

    return store


def autotune(builder, problem, args: tuple, variant: str, fixed: dict | None = None):
    """TileLang's autotuner (``AutoTuner``) over the declared space (``BACKEND.space``), the
    configs ``pick_launch_config`` accepts for ``problem`` (``fixed`` tunables held), timing
    ``builder``'s kernel on ``args``: (the chosen config, the compiled kernel). Each trial is a
    whole compile-time config, so the tuner calls the module-level ``builder`` itself (it
    refuses closures it cannot serialise)."""
    trials = []
    for config in BACKEND.space.configs(variant, problem.layout):
        try:
            trial = pick_launch_config(problem, BACKEND.space.to_kernel(config) | (fixed or {}))
        except ProblemError:
            continue
        trial = dict(compile_key(trial))  # the builder's arguments
        if trial not in trials:
            trials.append(trial)
    result = (AutoTuner.from_kernel(kernel=builder, configs=trials)
              .set_compile_args(target="cuda")
              .set_profile_args(supply_prog=lambda params: list(args), skip_check=True)
              .run(warmup=10, rep=50))
    if result.kernel is None:
        raise RuntimeError(f"TileLang's autotuner found no working config of {trials}")
    chosen = result.config
    return pick_launch_config(problem, dict(BLOCK_N=chosen["BLOCK_N"],
                                            num_warps=chosen["threads"] // 32,
                                            num_stages=chosen["num_stages"])), result.kernel
