"""Named workloads: model attention shapes, batch x seq_len grids, ragged batches, JSON files.

A workload is a list of ``DecodeProblem``. Model shapes are (num_q_heads, num_kv_heads, head_dim)
of one attention layer on one GPU (tensor parallelism divides the heads).

Ragged batches draw each sequence's length from a log-normal distribution, the usual fit for the
context lengths of a chat-serving trace (a long right tail: most requests short, a few very long):
median ``median``, shape sigma = 1.0 (so the 90th percentile is ~3.6x the median), clipped to
[16, max_len]. The draw is seeded by the workload itself, so a name always means the same batch.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Callable

from specs.problem import DTYPES, DecodeProblem, ProblemError

MODELS: dict[str, tuple[int, int, int]] = {
    "llama3-8b": (32, 8, 128),  # GQA 4
    "llama3-70b-tp8": (8, 1, 128),  # 64/8 heads split over 8 GPUs: MQA per GPU
    "qwen2.5-7b": (28, 4, 128),  # GQA 7
    "qwen2.5-1.5b": (12, 2, 128),  # GQA 6
    "llama2-7b": (32, 32, 128),  # MHA
    "llama3.2-1b": (32, 8, 64),  # head_dim 64
    "gemma2-9b": (16, 8, 256),  # head_dim 256
    "phi3-mini": (32, 32, 96),  # head_dim 96 (not a power of two), MHA
}

# batch x seq_len: every pair whose batch holds at most MAX_TOKENS tokens of context. Llama-3-8B's
# KV cache is 128 KiB a token over its 32 layers, so 1M tokens (128 GiB) is about what one
# 141 GB GPU can serve; bigger cells are no decode step anyone runs. Batch 1 needs split-K, large
# batches are pure bandwidth.
GRID_BATCHES = (1, 16, 64, 128)
GRID_SEQ_LENS = (1024, 2048, 4096, 8192, 32768)
MAX_TOKENS = 1 << 20
GRID: list[tuple[int, int]] = [(b, s) for b in GRID_BATCHES for s in GRID_SEQ_LENS if b * s <= MAX_TOKENS]
QUICK_GRID: list[tuple[int, int]] = [(1, 32768), (16, 4096), (64, 2048)]
RAGGED_SIGMA = 1.0  # log-normal shape of serving-trace context lengths (see module docstring)
RAGGED_MIN = 16


def model_problem(model: str, seq_lens, layout: str = "dense", dtype: str = "bfloat16",
                  page_size: int = 16) -> DecodeProblem:
    hq, hkv, d = MODELS[model]
    return DecodeProblem(hq, hkv, d, tuple(seq_lens), layout=layout, page_size=page_size,
                         dtype=dtype, name=model)


def ragged_lengths(batch: int, median: int, max_len: int, seed: int,
                   sigma: float = RAGGED_SIGMA) -> tuple[int, ...]:
    """Log-normal lengths (median ``median``, shape ``sigma``) clipped to [RAGGED_MIN, max_len]."""
    rng = random.Random(seed)
    mu = math.log(median)
    return tuple(min(max_len, max(RAGGED_MIN, round(rng.lognormvariate(mu, sigma))))
                 for _ in range(batch))


def _both_layouts(make: Callable[[str], DecodeProblem]) -> list[DecodeProblem]:
    return [make("dense"), make("paged")]


def _grid(cells) -> list[DecodeProblem]:
    return [p for b, s in cells for p in _both_layouts(lambda lay: model_problem("llama3-8b", [s] * b, lay))]


def _ragged(quick: bool = False) -> list[DecodeProblem]:
    cells = [(16, 1024, 32768, 1), (64, 2048, 32768, 2)]
    return [p for b, med, mx, seed in cells[: 1 if quick else None]
            for p in _both_layouts(lambda lay: model_problem("llama3-8b", ragged_lengths(b, med, mx, seed), lay))]


FP8 = "float8_e4m3fn"  # the fp8 format the serving engines default to


def _fp8(quick: bool = False) -> list[DecodeProblem]:
    return with_kv_dtype(_grid(QUICK_GRID if quick else GRID) + _ragged(quick), FP8, "tensor")


WINDOW = 4096  # Mistral's and gpt-oss's sliding window
GEMMA2_SOFTCAP = 50.0  # Gemma-2's attention logit soft-cap


def _window(quick: bool = False) -> list[DecodeProblem]:
    cells = [(1, 32768), (1, 131072), (16, 32768)][: 1 if quick else None]
    windowed = [p.replace(window=WINDOW) for b, n in cells
                for p in _both_layouts(lambda lay: model_problem("llama3-8b", [n] * b, lay))]
    capped = [p.replace(softcap=GEMMA2_SOFTCAP) for b, n in [(16, 4096), (16, 16384)][: 1 if quick else None]
              for p in _both_layouts(lambda lay: model_problem("gemma2-9b", [n] * b, lay))]
    return windowed + [p.replace(window=None) for p in windowed] + capped


SPEC_DECODE_Q_LENS = (1, 2, 4, 8)  # draft tokens verified per step (1: plain decode, the baseline)
SPEC_DECODE_CELLS = [(1, 32768), (16, 4096), (128, 2048)]
SPEC_DECODE_MODELS = ("llama3-8b", "llama3-70b-tp8")  # GQA 4, and MQA (8 query heads, 1 KV head)


def _spec_decode(quick: bool = False) -> list[DecodeProblem]:
    cells = SPEC_DECODE_CELLS[1:2] if quick else SPEC_DECODE_CELLS
    q_lens = (1, 4) if quick else SPEC_DECODE_Q_LENS
    return [p.replace(q_len=n) for m in SPEC_DECODE_MODELS for b, s in cells for n in q_lens
            for p in _both_layouts(lambda lay: model_problem(m, [s] * b, lay))]


MODEL_CELLS = [(1, 32768), (16, 1024), (16, 4096), (16, 16384)]  # a line against seq_len per shape

# Batches that stress how a split-K kernel schedules its work (a plan per batch, not per kernel):
# one long sequence among many short ones (a uniform split sized from the longest wastes every
# short one's programs; no split leaves the long one as the tail), bimodal lengths, log-normal
# ragged batches from 8 to 256 sequences (median 2k, max 32k), and batch 1 up to 128k tokens
# (one 128k sequence of Llama-3-8B is 256 MB of KV per layer: where split-K must fill the GPU).
SCHED_RAGGED_BATCHES = (8, 32, 128, 256)
SCHED_BATCH1 = (4096, 16384, 65536, 131072)


def bimodal_lengths(batch: int, short: int, long: int, seed: int) -> tuple[int, ...]:
    """Half the batch at ``short`` tokens, half at ``long``, in a seeded order."""
    lens = [short] * (batch - batch // 2) + [long] * (batch // 2)
    random.Random(seed).shuffle(lens)
    return tuple(lens)


def _sched() -> list[DecodeProblem]:
    batches = [(32768,) + (512,) * 63, bimodal_lengths(32, 512, 16384, seed=4)]
    batches += [ragged_lengths(b, 2048, 32768, seed=10 + b) for b in SCHED_RAGGED_BATCHES]
    batches += [(n,) for n in SCHED_BATCH1]
    return [p for lens in batches
            for p in _both_layouts(lambda lay: model_problem("llama3-8b", lens, lay))]


# What a serving engine's decode step holds (one layer of Llama-3-8B): hundreds of sequences of
# log-normal lengths up to 128k tokens, one sequence of 1M tokens, and a batch of 1M tokens in
# all. The dense layout of a skewed batch is batch x longest by definition: where it does not fit
# the GPU, its rows say so (UNAVAILABLE) and the paged rows stand.
SERVING_BATCHES = ((256, 2048), (512, 1024))  # (sequences, median length)
# a serving batch mixes chat turns with long documents and agents' contexts: a heavier tail than
# the chat-only ragged batches (sigma 1.5: ~1 sequence in 300 reaches 64x the median)
SERVING_SIGMA, SERVING_MAX = 1.5, 131072
SERVING_TOTAL = 1 << 20  # tokens in the last batch, as SERVING_TOTAL_BATCH sequences
SERVING_TOTAL_BATCH = 96


def lengths_with_total(total: int, batch: int, seed: int) -> tuple[int, ...]:
    """``batch`` log-normal lengths (sigma RAGGED_SIGMA) scaled to sum to exactly ``total``."""
    rng = random.Random(seed)
    weights = [rng.lognormvariate(0.0, RAGGED_SIGMA) for _ in range(batch)]
    lens = [max(1, int(total * w / sum(weights))) for w in weights]
    lens[lens.index(max(lens))] += total - sum(lens)  # the rounding, on the longest
    return tuple(lens)


def _serving() -> list[DecodeProblem]:
    batches = [ragged_lengths(b, median, SERVING_MAX, seed=20 + b, sigma=SERVING_SIGMA)
               for b, median in SERVING_BATCHES]
    batches += [(1 << 20,), lengths_with_total(SERVING_TOTAL, SERVING_TOTAL_BATCH, seed=30)]
    return [p for lens in batches
            for p in _both_layouts(lambda lay: model_problem("llama3-8b", lens, lay))]


LENGTHS = (1, 4096, 65536, 262144, 1 << 20)  # the tolerance's lengths, from one token to 1M


def _lengths(quick: bool) -> list[DecodeProblem]:
    lengths = LENGTHS[:3] if quick else LENGTHS
    return [model_problem("llama3-8b", [n], layout, dtype, page_size)
            for dtype in DTYPES for n in lengths
            for layout, page_size in (("dense", 16), ("paged", 16), ("paged", 1))]


def _models(quick: bool = False) -> list[DecodeProblem]:
    dtypes = ("bfloat16",) if quick else ("bfloat16", "float16")
    return [model_problem(m, [s] * b, layout, dtype) for dtype in dtypes for m in MODELS
            for b, s in MODEL_CELLS for layout in ("dense", "paged")]


# Held-out shapes: a seeded draw over the axes users run, for rules and tuners to be measured on
# shapes they never saw (fit on one seed, measure on another): GQA groups 1-16, head dims 64-256,
# pages of 1-256 tokens, batches of 1-512, lengths that are no multiple of 16, ragged or uniform,
# bf16 or fp16, either layout.
HELDOUT_COUNT = 24
HELDOUT_HEAD_DIMS = tuple(range(64, 257, 16))  # what tensor-core kernels tile (multiples of 16)
HELDOUT_PAGES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
HELDOUT_KV_BYTES = 2 << 30  # at most this much K and V per problem (and per dense layout)


def heldout_problems(seed: int, count: int = HELDOUT_COUNT) -> list[DecodeProblem]:
    """``count`` problems drawn from ``seed`` (the same problems for a seed everywhere), each
    holding at most HELDOUT_KV_BYTES of K and V in its layout."""
    rng = random.Random(seed)
    problems = []
    for i in range(count):
        group = rng.randint(1, 16)
        num_kv_heads = rng.choice((1, 2, 4, 8))
        head_dim = rng.choice(HELDOUT_HEAD_DIMS)
        dtype = rng.choice(("bfloat16", "float16"))
        layout = rng.choice(("dense", "paged"))
        batch = round(math.exp(rng.uniform(0, math.log(512))))
        token_bytes = 2 * num_kv_heads * head_dim * 2  # K and V of one token, 16-bit
        longest = max(17, min(131071, HELDOUT_KV_BYTES // (token_bytes * batch) - 64))
        length = round(math.exp(rng.uniform(math.log(17), math.log(longest))))
        if rng.random() < 0.5:
            lens = [length] * batch
        else:
            lens = [min(longest, max(2, round(length * math.exp(rng.gauss(0, RAGGED_SIGMA)))))
                    for _ in range(batch)]
        lens = [n - 1 if n % 16 == 0 else n for n in lens]  # no multiple of 16
        problems.append(DecodeProblem(num_kv_heads * group, num_kv_heads, head_dim, tuple(lens),
                                      layout=layout, page_size=rng.choice(HELDOUT_PAGES),
                                      dtype=dtype,
                                      name=f"heldout{seed}.{i} {num_kv_heads * group}/{num_kv_heads}/{head_dim}"))
    return problems


def _cpu() -> list[DecodeProblem]:
    """Small problems the CPU interpreters finish in seconds, covering every shape class (sized
    for the slowest CPU mode, a simulator of a few seconds per call)."""
    return [
        model_problem("llama3-8b", [64, 40], "dense"),
        model_problem("llama3-8b", [64, 40], "paged"),
        model_problem("qwen2.5-1.5b", [37, 100, 17], "paged"),
        model_problem("qwen2.5-7b", [50], "dense"),
        model_problem("llama3.2-1b", [1, 70], "paged", page_size=1),
        model_problem("gemma2-9b", [33], "dense"),
        model_problem("phi3-mini", [17], "paged", dtype="float16"),
        model_problem("llama3-70b-tp8", [60], "dense", dtype="float32"),
        model_problem("llama3-8b", [45, 20], "paged").replace(kv_dtype=FP8, kv_scale="head"),
        model_problem("llama3-8b", [45, 20], "paged").replace(q_len=4, window=32, softcap=30.0),
    ]


WORKLOADS: dict[str, tuple[str, Callable[[bool], list[DecodeProblem]]]] = {
    "grid": ("Llama-3-8B bf16, batch {1,16,64,128} x seq_len {1k,2k,4k,8k,32k} up to 1M tokens, "
             "dense and paged (page 16)",
             lambda quick: _grid(QUICK_GRID if quick else GRID)),
    "ragged": ("Llama-3-8B bf16, log-normal ragged batches (16 x median 1k, 64 x median 2k, max 32k)",
               _ragged),
    "fp8": ("'grid' and 'ragged' with the cache in float8_e4m3fn, one scale per tensor (what every "
            "fp8-reading vendor kernel takes), beside the bf16 ones", _fp8),
    "models": ("every model shape at 1 x 32k and 16 x {1k, 4k, 16k}, dense and paged (page 16), "
               "bf16 and fp16 (--quick: bf16)", _models),
    "heldout": (f"{HELDOUT_COUNT} held-out shapes drawn from seed 0 (heldout:N draws from seed N): GQA "
                "groups 1-16, head dims 64-256, pages 1-256, batches 1-512, lengths no multiple of 16, "
                "ragged or uniform, bf16/fp16, either layout",
                lambda quick: heldout_problems(0, 6 if quick else HELDOUT_COUNT)),
    "batch1": ("Llama-3-8B bf16, batch 1 at 4k, 8k, 16k and 32k tokens, dense and paged: how "
               "flat single-sequence latency stays as the sequence grows (split-K's job)",
               lambda quick: _grid([(1, 4096), (1, 8192), (1, 16384), (1, 32768)])),
    "long": ("Llama-3-8B bf16, 1 x 128k tokens, dense and paged",
             lambda quick: _grid([(1, 131072)])),
    "sched": ("Llama-3-8B bf16, batches that stress split-K scheduling: 1 x 32k + 63 x 512, "
              "bimodal 512/16k, log-normal ragged batches of 8-256 sequences, 1 x 4k-128k; dense "
              "and paged", lambda quick: _sched()[:4] if quick else _sched()),
    "serving": ("Llama-3-8B bf16, serving-sized batches: 256 and 512 sequences of log-normal "
                "lengths (medians 2k and 1k, sigma 1.5, max 128k), 1 x 1M tokens, 96 sequences of 1M tokens in all; "
                "dense and paged (a dense skewed batch is batch x longest: UNAVAILABLE where it "
                "does not fit)", lambda quick: _serving()[-4:] if quick else _serving()),
    "window": ("a left window of 4096 tokens on Llama-3-8B at 1 x {32k, 128k} and 16 x 32k, and "
               "Gemma-2-9B's logits soft-capped at 50 at 16 x {4k, 16k}; dense and paged (against "
               "each problem without its window: the bytes it does not read)", _window),
    "spec-decode": ("speculative decoding's verification step: q_len 2, 4 and 8 query tokens a "
                    "sequence (and 1, the plain decode beside them), causal among themselves, on "
                    "Llama-3-8B and the MQA shape of Llama-3-70B over 8 GPUs, at 1 x 32k, 16 x 4k "
                    "and 128 x 2k; dense and paged", _spec_decode),
    "lengths": ("Llama-3-8B, batch 1 at 1, 4k, 64k, 256k and 1M tokens, dense and paged (pages "
                "of 16 and 1 tokens), bf16, fp16 and fp32: the tolerance at every length (run it "
                "with --no-timing)", _lengths),
    "cpu": ("small problems of every shape class, sized for the CPU interpreters",
            lambda quick: _cpu()[:4] if quick else _cpu()),
}
DEFAULT_GPU = ("grid", "ragged", "fp8")
DEFAULT_CPU = ("cpu",)


def named(names, quick: bool = False) -> list[DecodeProblem]:
    problems: list[DecodeProblem] = []
    for name in names:
        base, _, seed = name.partition(":")
        if base == "heldout" and seed:  # heldout:N, the held-out shapes of seed N
            if not seed.isdigit():
                raise ProblemError(f"--workloads: {name!r}: heldout:N needs a seed N >= 0")
            problems += heldout_problems(int(seed), 6 if quick else HELDOUT_COUNT)
            continue
        if name not in WORKLOADS:
            raise ProblemError(f"--workloads: unknown workload {name!r}; known: {sorted(WORKLOADS)} "
                               "and heldout:N")
        problems += WORKLOADS[name][1](quick)
    return problems


def load_file(path: str | Path) -> list[DecodeProblem]:
    """A JSON workload: ``{"problems": [ {...}, ... ]}`` or a bare list, each entry with the
    fields of ``DecodeProblem`` (num_q_heads, num_kv_heads, head_dim, seq_lens, layout,
    page_size, dtype; optional sm_scale, name)."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise ProblemError(f"--workload-file {path}: cannot read JSON ({e})") from None
    entries = data.get("problems") if isinstance(data, dict) else data
    if not isinstance(entries, list) or not entries:
        raise ProblemError(f"--workload-file {path}: expected a non-empty list of problems "
                           'or {"problems": [...]}')
    return [DecodeProblem.from_dict(e, where=f"{path}: problems[{i}]") for i, e in enumerate(entries)]


def with_dtype(problems: list[DecodeProblem], dtype: str | None) -> list[DecodeProblem]:
    if dtype is None:
        return problems
    if dtype not in DTYPES:
        raise ProblemError(f"--dtype={dtype!r}: must be one of {DTYPES}")
    return [p.replace(dtype=dtype) for p in problems]


def with_mask(problems: list[DecodeProblem], window: int | None, softcap: float | None) -> list[DecodeProblem]:
    """Every problem with a left window of ``window`` tokens and/or logits soft-capped at
    ``softcap`` (None: as it is)."""
    changes = {k: v for k, v in (("window", window), ("softcap", softcap)) if v is not None}
    try:
        return [p.replace(**changes) for p in problems] if changes else problems
    except ProblemError as e:
        raise ProblemError(f"--window/--softcap: {e}") from None


def with_q_len(problems: list[DecodeProblem], q_len: int | None) -> list[DecodeProblem]:
    """Every problem with ``q_len`` query tokens a sequence (None: as it is)."""
    try:
        return [p.replace(q_len=q_len) for p in problems] if q_len is not None else problems
    except ProblemError as e:
        raise ProblemError(f"--q-len: {e}") from None


def with_kv_dtype(problems: list[DecodeProblem], kv_dtype: str | None,
                  kv_scale: str | None = None) -> list[DecodeProblem]:
    """Every problem of a 16-bit query with its cache stored as ``kv_dtype`` (an fp8 dtype, or
    "none": the query's dtype) and scales of ``kv_scale`` granularity; None leaves them as they
    are, and float32 problems (no fp8 cache is read with a float32 query) stay as they are."""
    changes = {}
    if kv_dtype is not None:
        changes["kv_dtype"] = None if kv_dtype == "none" else kv_dtype
    if kv_scale is not None:
        changes["kv_scale"] = kv_scale
    if not changes:
        return problems
    try:
        return [p if p.dtype == "float32" and changes.get("kv_dtype") else p.replace(**changes)
                for p in problems]
    except ProblemError as e:
        raise ProblemError(f"--kv-dtype/--kv-scale: {e}") from None
