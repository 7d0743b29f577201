"""The registry: (backend, algorithm) units, the variant names users type, declarations it
refuses, per-layout capabilities, and the backend facts the harness reads from declarations."""

from __future__ import annotations

import itertools
import os
import re

import pytest

import impls  # noqa: F401  (first: CPU modes before any DSL import)
from conformance.strategies import fit
from impls import registry
from impls.registry import Backend, Capabilities, Impl
from specs.problem import DecodeProblem, ProblemError

TOY = Backend(name="toy", summary="", requires=("torch",), cpu_mode="torch")
BOTH = Capabilities(frozenset({"dense", "paged"}))


def test_variants_are_algorithms_on_layouts():
    one_pass, split_k = registry.get("triton/dense"), registry.get("triton/split-k")
    assert one_pass is registry.get("triton/paged") is registry.get("triton/one-pass")
    assert (one_pass.row_name("dense"), one_pass.row_name("paged")) == ("triton/dense", "triton/paged")
    assert split_k.row_name("dense") == split_k.row_name("paged") == "triton/split-k"
    assert registry.wanted(one_pass, "dense", ["dense"]) and not registry.wanted(one_pass, "paged", ["dense"])
    assert registry.wanted(split_k, "paged", ["dense", "split-k"])
    assert [i.algorithm for i in registry.select(["triton"], ["paged"])] == ["one-pass"]
    with pytest.raises(ProblemError, match="no implementation 'triton/sparse'"):
        registry.get("triton/sparse")


def test_each_registered_backend_has_one_impl_per_algorithm():
    names = [i.name for i in registry.all_impls()]
    assert len(names) == len(set(names))
    for backend in registry.backends():
        assert sorted(i.algorithm for i in registry.all_impls() if i.backend == backend) == \
            sorted(registry.ALGORITHMS), backend.name


@pytest.mark.parametrize("impl,message", [
    (Impl(TOY, "dense", "x", BOTH), "a dense variant is the one-pass algorithm on that layout"),
    (Impl(TOY, "one-pass", "x", Capabilities(frozenset({"ragged"}))), "must be a non-empty subset"),
    (Impl(TOY, "one-pass", "x", Capabilities(frozenset({"dense"}), no_kernel_for={"dense": "?"})),
     "no_kernel_for the others"),
    (Impl(TOY, "split-k", None), "'lacks' must say why"),
    (Impl(TOY, "one-pass", "x"), "needs its Capabilities"),
    (Impl(TOY, "one-pass", "x", Capabilities(frozenset({"dense"}), per_layout={"paged": {}})),
     r"per_layout\['paged'\] must name a served layout"),
    (Impl(TOY, "one-pass", "x", Capabilities(BOTH.layouts, per_layout={"paged": {"head_dim": 1}})),
     r"fields of Capabilities \(\['head_dim'\]\)"),
])
def test_declarations_the_registry_refuses(impl, message):
    with pytest.raises(ProblemError, match=message):
        registry.check_declaration(impl)


def test_a_layout_without_a_kernel_says_why():
    impl = Impl(TOY, "one-pass", "x", Capabilities(frozenset({"dense"}),
                                                    no_kernel_for={"paged": "no page tables here"}))
    assert impl.no_kernel("dense") is None
    assert impl.no_kernel("paged") == "no page tables here"
    assert impl.unsupported(DecodeProblem(4, 2, 64, (5,), layout="paged")) == "no page tables here"
    plain = Impl(TOY, "one-pass", "x", Capabilities(frozenset({"dense"})))
    assert plain.no_kernel("paged") == "paged layout (handles: dense)"


def test_per_layout_capabilities_apply_on_their_layout_only():
    impl = Impl(TOY, "one-pass", "x", Capabilities(
        frozenset({"dense", "paged"}), head_dim_multiple=8,
        per_layout={"paged": dict(head_dims=frozenset({64, 128}), note="paged: 64 or 128")}))
    dense, paged = (DecodeProblem(4, 2, 96, (5,), layout=lay) for lay in ("dense", "paged"))
    assert impl.unsupported(dense) is None
    assert impl.unsupported(paged) == "head_dim 96 (handles: 64, 128) (paged: 64 or 128)"
    assert fit(paged, impl).head_dim == 128 and fit(dense, impl).head_dim == 96
    assert fit(dense, impl, "paged").layout == "paged"


def test_the_harness_reads_backend_facts_from_declarations(monkeypatch):
    from harness import cli, provenance

    assert "triton" in provenance.packages()  # declared by the triton backend, installed here
    declared = {v for b in registry.backends() for v in b.jit_cache_env}
    assert {"TRITON_CACHE_DIR", "CUPY_CACHE_DIR"} <= declared
    for var in declared | {registry.DRIVER_CACHE}:
        monkeypatch.delenv(var, raising=False)
    note = cli._fresh_caches()
    for var in declared | {registry.DRIVER_CACHE}:
        assert os.path.isdir(os.environ[var]) and not os.listdir(os.environ[var]), var
    assert "no disk cache declared by: numba" in note


def test_a_split_count_beyond_the_declared_maximum_is_unsupported_before_launch():
    impl = Impl(TOY, "split-k", "tests.plugin_backend", Capabilities(BOTH.layouts, max_splits=4),
                entry="prepare_split_k", options=("num_splits",))
    from impls.registry import Unsupported
    from specs.inputs import make_inputs

    inputs = make_inputs(DecodeProblem(4, 2, 64, (40,)), 0)
    out, lse = inputs.new_outputs()
    impl.prepare(inputs, out, lse, num_splits=4).run()
    assert not out.isnan().any()
    out.fill_(float("nan"))
    with pytest.raises(Unsupported, match=r"num_splits=5 \(at most 4\)"):
        impl.prepare(inputs, out, lse, num_splits=5)
    assert out.isnan().all()


@pytest.mark.parametrize("backend", ["cupy", "numba"])
@pytest.mark.parametrize("config,message", [
    ({"TPR": 3}, "TPR must be a power of two"), ({"UNROLL": 0}, "UNROLL in"),
    ({"NUM_WARPS": 64}, "NUM_WARPS in"),
])
def test_launch_config_values_a_kernel_cannot_take_are_refused(backend, config, message):
    """Tuning overrides are checked before a kernel is built from them (TPR 3 would compile a
    wrong thread mapping, UNROLL 0 an empty loop step)."""
    if backend == "cupy":
        from impls.cupy._build import pick_launch_config
    else:
        pytest.importorskip("numba_cuda")
        from impls.numba._launch import pick_launch_config
    problem = DecodeProblem(32, 8, 128, (100,))
    loop = {"TENSOR_CORES": 0} if backend == "cupy" else {}  # CuPy: its CUDA-core loop's keys
    pick_launch_config(problem, {"TPR": 8, "UNROLL": 2, **loop})  # values it can take
    with pytest.raises(ProblemError, match=message):
        pick_launch_config(problem, {**config, **loop})


def test_cupy_loops_default_warps():
    """Each loop its own default CTA: 8 warps of rings on tensor cores, the CUDA-core loop's 4
    also when it is forced on a problem tensor cores would take."""
    from impls.cupy._build import pick_launch_config

    problem = DecodeProblem(32, 8, 128, (100,))
    assert pick_launch_config(problem)["NUM_WARPS"] == 8
    assert pick_launch_config(problem, {"TENSOR_CORES": 0})["NUM_WARPS"] == 4
    assert pick_launch_config(problem, {"STAGES": 4})["NUM_WARPS"] == 4  # 8 do not fit


@pytest.mark.parametrize("problem,config,message", [
    (DecodeProblem(32, 8, 128, (100,)), {"TPR": 8}, "TPR tune the CUDA-core loop"),
    (DecodeProblem(32, 8, 128, (100,)), {"TENSOR_CORES": 0, "STAGES": 3}, "STAGES tune the tensor"),
    (DecodeProblem(32, 8, 128, (100,), dtype="float32"), {"TENSOR_CORES": 1}, "16-bit dtype"),
    (DecodeProblem(32, 8, 72, (100,)), {"TENSOR_CORES": 1}, "head_dim % 16"),
    (DecodeProblem(32, 8, 128, (100,)), {"STAGES": 1}, "STAGES must be in"),
    (DecodeProblem(32, 8, 256, (100,)), {"NUM_WARPS": 8, "STAGES": 4}, "shared memory"),
])
def test_cupy_loop_configs_it_cannot_take_are_refused(problem, config, message):
    """CuPy's two loops: a key of the loop not chosen, tensor cores where they do not fit, a ring
    too shallow or too large for a CTA, each refused before anything is built."""
    from impls.cupy._build import pick_launch_config

    with pytest.raises(ProblemError, match=message):
        pick_launch_config(problem, config)


def test_old_runs_render_without_their_retired_fields():
    """Rows and provenance of runs made before the refactor (no config_summary, no bandwidth
    limit recorded) render with the declared config keys and no false 'no GPU' line."""
    from harness import results

    row = {"backend": "cupy", "config": {"num_splits": 4, "tokens_per_split": 256, "GROUP": 4, "TPR": 8}}
    assert results._config_summary(row) == "num_splits=4, TPR=8"
    assert results._config_summary({"backend": "gone", "config": {"a": 1}}) == "a=1"
    lines = results.provenance_lines({"gpu": "NVIDIA H200", "command": "x", "copy_bw_gbps": 4000})
    assert not any("without a GPU" in line for line in lines)
    # over several GPUs each measured its own bandwidth: the header says so, not "none recorded"
    gpus = [{"gpu": "NVIDIA H200", "gpu_index": str(i), "bandwidth_limit_gbps": 4686.0} for i in (0, 1)]
    lines = results.provenance_lines({"gpu": "NVIDIA H200", "command": "x", "executor": "ray",
                                      "gpus_used": 2, "gpus": gpus})
    assert any("measured in the run on each GPU" in line for line in lines)
    assert not any("no bandwidth limit" in line for line in lines)
    assert any("slot 1: NVIDIA H200 (index 1" in line and "4686 GB/s" in line for line in lines)


def test_a_plan_with_more_items_than_a_grid_dimension_is_unsupported():
    import types

    import torch

    from impls import plan as planner
    from impls.registry import Unsupported

    inputs = types.SimpleNamespace(problem=DecodeProblem(4, 2, 64, (70_000,) * 32),
                                   device=torch.device("cpu"))
    assert planner.for_launch(inputs, 2, 16, num_splits=None).num_items <= planner.MAX_ITEMS
    with pytest.raises(Unsupported, match="grid dimension"):
        planner.for_launch(inputs, 2, 16, num_splits=4096)  # 32-token items: 70016 of them


def test_every_one_pass_grid_puts_a_sequences_kv_heads_side_by_side_and_refuses_a_batch_beyond_it():
    """The one order (impls.plan.one_pass_grid): KV heads x row blocks on x, sequences on y, as
    many as a grid dimension holds; the Triton, Gluon and CuPy one-pass launchers take it."""
    import inspect

    import impls.cupy.one_pass
    import impls.gluon._ws
    import impls.gluon.one_pass
    import impls.triton.one_pass
    from impls import plan as planner
    from impls.registry import Unsupported

    p = DecodeProblem(8, 2, 64, (5, 7, 9))
    assert planner.one_pass_grid(p, 3) == (6, 3)
    wide = DecodeProblem(2, 1, 64, (8,) * (planner.MAX_ITEMS + 1))
    with pytest.raises(Unsupported, match="batch of 65536 sequences"):
        planner.one_pass_grid(wide, 1)
    for module in (impls.triton.one_pass, impls.gluon.one_pass, impls.gluon._ws, impls.cupy.one_pass):
        assert "one_pass_grid(" in inspect.getsource(module), module.__name__


def test_a_failing_plan_is_an_error_row_not_a_crash():
    """Host planning timed apart from the call: when it raises, the cell says so and the run
    goes on (evaluate never raises)."""
    from harness.runner import RunSpec, evaluate
    from harness.timing import CpuTimer
    from impls.registry import Launch
    from specs.inputs import make_inputs
    from specs.reference import reference

    def failing_plan():
        raise RuntimeError("planner ran out of pinned memory")

    def prepare(inputs, out, lse):
        ref = reference(inputs)
        return Launch(lambda: (ref.out.to(inputs.q.dtype), ref.lse.float()), plan=failing_plan)

    impl = Impl(TOY, "one-pass", __name__, Capabilities(frozenset({"dense"})), entry="_toy_prepare")
    globals()["_toy_prepare"] = prepare
    problem = DecodeProblem(4, 2, 64, (9,))
    inputs = make_inputs(problem, 0)
    spec = RunSpec([problem.to_dict()], [], 0, {}, True, True, "/dev/null", None)
    row = evaluate(0, impl, problem, inputs, reference(inputs), spec, CpuTimer(), {})
    assert row["status"] == "ERROR" and "pinned memory" in row["reason"]


def test_interpreter_backends_without_the_bf16_workaround_draw_no_bf16_on_the_cpu():
    import torch

    if torch.cuda.is_available():
        pytest.skip("the interpreter runs only without a GPU")
    plain = Backend(name="outside-triton", summary="", requires=("torch",), cpu_mode="interpreter")
    problem = DecodeProblem(8, 2, 64, (9,), dtype="bfloat16")
    assert "upstream issue 11584" in plain.mode_unsupported(problem)
    assert plain.mode_unsupported(problem.replace(dtype="float16")) is None
    declared = Backend(name="outside-triton-2", summary="", requires=("torch",), cpu_mode="interpreter",
                       interpreter_bf16_ok=True)
    assert declared.mode_unsupported(problem) is None
    impl = Impl(plain, "one-pass", "tests.plugin_backend", Capabilities(frozenset({"dense"})))
    assert fit(problem, impl).dtype == "float16"


@pytest.mark.parametrize("config,message", [
    ({"MERGE": "atomic"}, "MERGE='atomic': must be 'fused' or 'kernel'"),
    ({"GATHER": "row"}, "GATHER='row': must be 'page' or 'token'"),
])
def test_triton_config_values_it_cannot_take_are_refused(config, message):
    pytest.importorskip("triton")
    from impls.triton._common import pick_launch_config
    problem = DecodeProblem(32, 8, 128, (300,), layout="paged")
    with pytest.raises(ProblemError, match=re.escape(message)):
        pick_launch_config(problem, config)


def test_triton_rows_beyond_the_q_tile_take_two_warpgroups_where_kv_is_beyond_l2():
    """Query rows past the 16 KB q tile are more programs a KV head, each reading its K/V: from
    L2 where they fit there, so the rule keeps them; beyond it, at head dims 144-256 (a q tile
    of 32 rows, which spill on 4 warps) a program takes up to 128 rows on 8 warps (64 a
    warpgroup), its token tile narrowed to keep registers and shared memory (fp8: a converted
    tile more) within sm_90's. Head dim 128 keeps 64-row programs; 32-bit queries and a config's
    keys keep theirs; a config's warps size the rows."""
    pytest.importorskip("triton")
    from impls.triton._common import SMEM_BYTES, pick_launch_config

    def launch(hq, hkv, d, q_len, l2=50 * 2**20, **kw):
        c = pick_launch_config(DecodeProblem(hq, hkv, d, (4000,) * 64, q_len=q_len, **kw), l2_bytes=l2)
        return c["BLOCK_H"], c["num_warps"], c["BLOCK_N"]

    assert launch(20, 2, 240, 8) == (128, 8, 32)  # 80 rows, 1 GB of K/V: one program
    assert launch(12, 2, 240, 8) == (64, 8, 64)  # 48 rows: one program of 64
    assert launch(16, 1, 64, 8) == (128, 4, 32)  # 128 rows of head dim 64: the 4-warp budget
    assert launch(20, 2, 240, 8, l2=2**40) == (32, 4, 64)  # all in L2: three of 32
    assert launch(20, 2, 240, 8, kv_dtype="float8_e4m3fn")[:2] == (128, 8)
    assert launch(128, 8, 128, 8) == launch(8, 1, 128, 8) == (64, 4, 64)  # head dim 128: 64 rows
    assert launch(20, 2, 240, 8, dtype="float32")[:2] == (16, 4)  # the q tile of 32-bit rows
    c = pick_launch_config(DecodeProblem(20, 2, 240, (4000,) * 64, q_len=8), {"num_warps": 4})
    assert (c["BLOCK_H"], c["num_warps"], c["BLOCK_N"]) == (32, 4, 64)  # the rows 4 warps hold
    c = pick_launch_config(DecodeProblem(20, 2, 240, (4000,) * 64, q_len=8), {"BLOCK_N": 64})
    assert (c["BLOCK_H"], c["num_warps"], c["BLOCK_N"]) == (64, 8, 64)  # the rows a 64-token tile lets
    # block_h is a knob (impls.launch): the old rule's 32 rows on request, no more than the rows
    c = pick_launch_config(DecodeProblem(20, 2, 240, (4000,) * 64, q_len=8), {"BLOCK_H": 32, "num_warps": 4})
    assert (c["BLOCK_H"], c["num_warps"], c["BLOCK_N"]) == (32, 4, 64)
    for bad in (48, 8, 256):
        with pytest.raises(ProblemError, match=f"BLOCK_H={bad}: must be a power of two from 16"):
            pick_launch_config(DecodeProblem(20, 2, 240, (4000,) * 64, q_len=8), {"BLOCK_H": bad})
    with pytest.raises(ProblemError, match=r"BLOCK_H=32: .* to 16 \(the 4 query rows"):
        pick_launch_config(DecodeProblem(32, 8, 128, (300,)), {"BLOCK_H": 32})
    # the stages follow the grid of the rows asked for (paged, 200 x 2 x 3 programs: one less)
    many = pick_launch_config(DecodeProblem(20, 2, 240, (4000,) * 200, q_len=8, layout="paged"),
                              {"BLOCK_H": 32, "num_warps": 4})
    assert many["num_stages"] == 2
    with pytest.raises(ProblemError, match=r"262144 B of shared memory, more than a program has"):
        pick_launch_config(DecodeProblem(16, 1, 256, (4000,) * 4, q_len=8), {"BLOCK_H": 128, "BLOCK_N": 64})
    assert launch(64, 1, 256, 2)[:2] == (128, 8)  # a group of 64 at head dim 256, 2 tokens: 128 rows
    fp8 = pick_launch_config(DecodeProblem(20, 2, 240, (4000,) * 64, q_len=8, kv_dtype="float8_e4m3fn"))
    converted = fp8["BLOCK_N"] * 256 * 2
    assert fp8["num_stages"] * fp8["BLOCK_N"] * 256 * 2 + (fp8["BLOCK_H"] * 256 * 2 + converted) <= SMEM_BYTES


def test_triton_programs_of_short_sequences_share_an_sm_where_the_grid_has_waves():
    """Where a program's tokens would not fill its ring (stages x tile) and the grid gives an SM
    several programs (batch x KV heads x row blocks over the SMs, up to impls.plan.MAX_SHARERS),
    the tile narrows (to 16 tokens at least) until that many programs' shared memory fits an SM
    together: 4 programs of a batch of 500 sequences of 44 tokens at head dim 224. A ring that
    fills (long sequences), a grid within the SMs, a grid whose longest program is its tail, no
    SM count (the pure rule) and a tile asked for keep theirs."""
    pytest.importorskip("triton")
    from impls import plan as planner
    from impls.triton._common import pick_launch_config

    def tile(lens, sms=132, config=None, split=False, **kw):
        problem = DecodeProblem(120, 8, 224, lens, **kw)
        c = pick_launch_config(problem, config, sms=sms, split=split)
        return c["BLOCK_N"], c

    n, c = tile((44,) * 500)
    assert n == 16 and planner.sharers(500 * 8, 132) == 4  # 4000 programs: 30 waves, 4 share
    smem = c["num_stages"] * n * 2 * 2 * 256 + c["BLOCK_H"] * 2 * 256  # K/V stages + q tile
    assert 4 * (smem + planner.SmLimits().reserved_smem) <= planner.SmLimits().smem
    assert tile((44,) * 500, sms=None)[0] == tile((3000,) * 500)[0] == 64  # a full ring: alone
    assert tile((44,) * 16)[0] == 64  # 128 programs: one wave on 132 SMs
    assert tile((44,) * 24, sms=132)[0] == 32  # 192 programs: two share an SM
    assert tile((44,) * 500, config={"BLOCK_N": 64})[0] == 64
    assert tile((44,) * 500, layout="paged", page_size=2)[0] == 16
    # a window shortens what a program reads: long sequences read as short ones
    assert tile((3000,) * 500, window=40)[0] == 16
    # short programs by count (mean 80 tokens) but most of the work in ten of 3000: averaged
    # over the tokens, the ring fills
    assert tile((20,) * 490 + (3000,) * 10)[0] == 64
    # one sequence of 1500 tokens, more than an SM's share of the grid's (8 x 23,500 / 132 = 1424):
    # the grid's tail, alone at the end, keeps its ring; split-K's planner cuts such a tail to
    # 256 tokens at most, so its kernel shares
    assert tile((44,) * 500 + (1500,))[0] == 64
    assert tile((44,) * 500 + (1500,), split=True)[0] == 16
    assert tile((44,) * 500 + (1400,))[0] == 16  # within the share
    # programs of more rows (two warpgroups) are bound by registers: left alone
    wide = DecodeProblem(32, 4, 256, (100,) * 2000, q_len=8)
    assert pick_launch_config(wide, sms=132)["num_warps"] == 8
    assert pick_launch_config(wide, sms=132) == pick_launch_config(wide)


def test_one_pass_programs_of_few_bytes_share_an_sm_though_they_fill_the_ring():
    """A one-pass grid of waves of near-uniform programs, each reading fewer than
    SHORT_PROGRAM_BYTES of K/V, shares its SMs (each program's lone start outweighs the narrower
    tiles' cost) though its sequences fill the ring: 160 x 8 programs of 256 tokens at head dim
    224 (224 KiB each; the ring holds 192). 384 tokens (336 KiB), split-K (its items are the
    planner's cuts) and a ragged batch of a mean under the bytes (its long programs, which hold
    most of its work, stream slower shared) keep their rings, in Triton and in CuPy."""
    pytest.importorskip("triton")
    from impls import plan as planner
    from impls.common import program_tokens
    from impls.cupy._build import pick_launch_config as cupy_config
    from impls.triton._common import pick_launch_config

    short = DecodeProblem(32, 8, 224, (256,) * 160)
    assert program_tokens(short) > 192 and short.kv_bytes / 1280 < planner.SHORT_PROGRAM_BYTES
    assert planner.short_programs(short, 1280, 132, 192)
    assert not planner.short_programs(short, 1280, 132, 192, split=True)
    assert planner.short_programs(DecodeProblem(32, 8, 224, (250, 262) * 80), 1280, 132, 192)
    longer = DecodeProblem(32, 8, 224, (384,) * 160)  # 336 KiB a program
    assert not planner.short_programs(longer, 1280, 132, 192)
    lens = tuple(8 + (i * 37) % 251 for i in range(247)) + tuple(range(600, 1060, 23))
    ragged = DecodeProblem(88, 8, 224, lens)  # mean 184 tokens, 161 KiB; over the tokens 395
    assert ragged.kv_bytes / (ragged.batch * 8) < planner.SHORT_PROGRAM_BYTES
    assert not planner.short_programs(ragged, ragged.batch * 8, 132, 192)

    def tile(problem, **kw):
        return pick_launch_config(problem, sms=132, **kw)["BLOCK_N"]

    def ring(problem, **kw):
        c = cupy_config(problem, **kw)
        return c["NUM_WARPS"], c["STAGES"]
    assert tile(short) == 16 < tile(short, split=True) == tile(longer) == tile(ragged) == 64
    assert ring(short) == (2, 2) != ring(short, split=True) == ring(longer) == ring(ragged) == (4, 3)


def test_no_tile_is_wider_than_the_longest_attended_span():
    """impls.plan.widest_tile: a K/V tile wider than every sequence's attended span only adds
    masked tokens, so the rules of the Triton, Gluon and Helion kernels take the span rounded up to a
    power of two (at least 16, an MMA's k step) where that is narrower than their tile: 57
    sequences of 20 tokens take 32-token tiles, 8 tokens 16; a window narrows it as a short
    sequence does; long sequences keep the rules' tiles."""
    pytest.importorskip("triton")
    from impls import plan as planner
    from impls.gluon._common import pick_launch_config as gluon_config
    from impls.triton._common import pick_launch_config as triton_config

    short = DecodeProblem(2, 1, 128, (20,) * 57, layout="paged", dtype="float16")
    assert planner.widest_tile(short) == 32
    assert planner.widest_tile(DecodeProblem(2, 1, 128, (8, 3))) == 16
    assert planner.widest_tile(DecodeProblem(2, 1, 128, (8, 3)), narrowest=32) == 32
    assert planner.widest_tile(DecodeProblem(2, 1, 128, (64, 3))) == 64
    assert planner.widest_tile(DecodeProblem(2, 1, 128, (5000, 60), window=40)) == 64
    # q_len query tokens of a window: the first one's window starts q_len - 1 tokens earlier
    assert planner.widest_tile(DecodeProblem(2, 1, 128, (5000, 60), window=40, q_len=4)) == 64
    assert planner.widest_tile(DecodeProblem(2, 1, 128, (5000, 60), window=30, q_len=2)) == 32
    long = short.replace(seq_lens=(2000,) * 57)
    for split in (False, True):
        assert triton_config(short, sms=132, split=split)["BLOCK_N"] == 32
        assert triton_config(long, sms=132, split=split)["BLOCK_N"] == 128
        assert gluon_config(short, sharers=1, split=split)["BLOCK_N"] == 32
        assert gluon_config(long, sharers=1, split=split)["BLOCK_N"] == 128
    # a config's tile is taken as given
    assert triton_config(short, {"BLOCK_N": 128}, sms=132)["BLOCK_N"] == 128
    helion = pytest.importorskip("impls.helion._common")
    assert helion.pick_launch_config(short)["BLOCK_N"] == 32
    assert helion.pick_launch_config(long)["BLOCK_N"] == 128


def test_a_near_uniform_grid_whose_last_wave_runs_part_empty_shares_its_sms():
    """impls.plan.resident_grid: 400 programs of 953 tokens on 132 SMs, one an SM, run 3.03 waves,
    the fourth of 4 programs; with 4 an SM all are resident from the start. Whole waves (or within
    SHARED_RING_COST of them), a grid the SMs hold, one past MAX_SHARERS an SM and a ragged batch
    (its longest program the tail) keep their rings. Triton's one-pass kernel takes it where the
    head dim is one tile; split-K (the planner sizes its items) and two tiles keep theirs."""
    pytest.importorskip("triton")
    from impls import plan as planner
    from impls.triton._common import pick_launch_config

    uniform = DecodeProblem(16, 8, 128, (953,) * 50)
    assert planner.resident_grid(uniform, 400, 132)
    assert planner.resident_grid(uniform, 400, 132, 2)  # 1.52 waves of two an SM
    assert not planner.resident_grid(uniform, 400, 132, 4)  # resident already
    assert not planner.resident_grid(uniform, 264, 132)  # two whole waves
    assert not planner.resident_grid(uniform, 515, 132)  # 3.9 waves: 2.5 % of an SM's time idle
    assert planner.resident_grid(uniform, 239, 132)  # 1.81 waves: 2 / 1.81 = 1.105
    assert not planner.resident_grid(uniform, 245, 132)  # 1.86 waves: 2 / 1.86 = 1.078
    assert not planner.resident_grid(uniform, 132, 132)
    assert not planner.resident_grid(uniform, 4 * 132 + 1, 132)  # past MAX_SHARERS an SM
    ragged = DecodeProblem(16, 8, 128, (953,) * 49 + (3000,))
    assert not planner.resident_grid(ragged, 400, 132)

    def tile(problem, **kw):
        return pick_launch_config(problem, **kw)["BLOCK_N"]
    assert tile(uniform, sms=132) == 32 < tile(uniform) == 128
    assert tile(uniform, sms=132, split=True) == tile(uniform, split=True)
    two_tiles = DecodeProblem(16, 8, 160, (953,) * 50)  # 128 + 32 dims
    assert pick_launch_config(two_tiles)["D_HI"] and tile(two_tiles, sms=132) == tile(two_tiles)
    # head dim 64: three programs' rings fit an SM, so 320 programs are resident already
    # (1100 tokens: 275 KiB a program, past SHORT_PROGRAM_BYTES, so only residency decides)
    small = DecodeProblem(16, 8, 64, (1100,) * 40)
    assert tile(small, sms=132) == tile(small) == 128
    assert tile(DecodeProblem(16, 8, 64, (1100,) * 60), sms=132) < 128  # 480: 1.2 waves of 3


def test_gluon_one_pass_leaves_tma_for_a_grid_it_makes_resident():
    """Gluon's dense one-pass takes TMA's ring (one program an SM) where sequences fill it, and
    cp.async with several programs an SM (tma_config None) where they do not or where the grid
    is near-uniform and its last wave would run part-empty (impls.plan.resident_grid)."""
    pytest.importorskip("triton")
    from impls.gluon.one_pass import tma_config

    uniform = DecodeProblem(16, 8, 128, (953,) * 50)  # 400 programs
    assert tma_config(uniform, None, 132) is None  # 3.03 waves
    assert tma_config(uniform, None, 400)["DENSE_TMA"] == 1  # one wave
    assert tma_config(DecodeProblem(16, 8, 128, (953,) * 66), None, 132) is not None  # 4 waves
    assert tma_config(DecodeProblem(16, 8, 128, (100,) * 16), None, 132) is None  # short
    assert tma_config(uniform.replace(layout="paged", page_size=16), None, 400) is None
    assert tma_config(uniform, {"DENSE_TMA": 0}, 400) is None


def test_triton_tiles_are_powers_of_two_on_every_shape_both_ways_of_the_head_dim():
    """tl.arange takes only powers of two: every tile the rule picks is one, with the head dim in
    one tile or two (a q tile of 16 KB over 144 = 128 + 16 dims would be 56 rows)."""
    pytest.importorskip("triton")
    from impls.triton._common import MIN_BLOCK_H, pick_launch_config

    def power_of_two(n):
        return n > 0 and n & (n - 1) == 0
    for d in range(1, 257):
        for group, q_len in ((1, 1), (3, 8), (8, 1), (13, 6), (16, 16)):
            for dtype in ("float16", "float32"):
                for dim_split, lens in itertools.product((0, 1), ((4000,) * 64, (100,))):
                    # K/V beyond L2 (the two-warpgroup rows) and within it (the q tile's rows)
                    problem = DecodeProblem(group * 2, 2, d, lens, q_len=q_len, dtype=dtype)
                    c = pick_launch_config(problem, {"DIM_SPLIT": dim_split})
                    rows = max(MIN_BLOCK_H, group * q_len)
                    assert power_of_two(c["BLOCK_H"]) and MIN_BLOCK_H <= c["BLOCK_H"] < 2 * rows, (d, c)
                    assert power_of_two(c["BLOCK_N"]) and power_of_two(c["D_LO"]), (d, c)
                    assert c["D_HI"] == 0 or power_of_two(c["D_HI"]), (d, c)
                    assert c["D_LO"] + c["D_HI"] >= d, (d, c)


def test_triton_splits_the_head_dim_where_the_padded_tile_is_256_or_the_rows_fill_a_tile():
    """dim_split by rule: a head dim padded to 256 goes in two tiles at any rows (the padded tile
    halves a stage's tokens and doubles its shared memory); one padded to 128 or less only where
    a KV head's rows fill a 16-row MMA tile; a config says otherwise; 240 saves nothing split."""
    pytest.importorskip("triton")
    from impls.triton._common import pick_launch_config

    def tiles(hq, hkv, d, q_len=1, config=None):
        c = pick_launch_config(DecodeProblem(hq, hkv, d, (3000,) * 8, q_len=q_len), config)
        return c["D_LO"], c["D_HI"]
    assert tiles(8, 8, 144) == (128, 16)  # one row, padded to 256: split
    assert tiles(16, 8, 192, q_len=8) == (128, 64)
    assert tiles(32, 32, 96) == (128, 0)  # one row, padded to 128: one tile
    assert tiles(48, 4, 96) == (128, 0)  # 12 rows
    assert tiles(32, 4, 96, q_len=2) == (64, 32)  # 16 rows fill the MMA tile
    assert tiles(20, 4, 80, q_len=6) == (64, 16)
    assert tiles(20, 2, 240, q_len=8) == (256, 0)  # 128 + 128: no saving
    assert tiles(8, 8, 144, config={"DIM_SPLIT": 0}) == (256, 0)
    assert tiles(32, 32, 96, config={"DIM_SPLIT": 1}) == (64, 32)
    assert tiles(8, 2, 8) == (16, 0)  # under the MMA's k step of 16: padded to it


def test_gluon_takes_the_same_dim_split_rule_and_sizes_its_tiles_by_both():
    """Gluon splits the head dim by the rule Triton's tiles follow (impls.common.dim_split_rule),
    reports the second tile (D_HI) and sizes its K/V tiles by the dims both tiles hold."""
    pytest.importorskip("triton.experimental.gluon")
    from impls.gluon._common import pick_launch_config

    def cfg(hq, hkv, d, q_len=1, config=None):
        return pick_launch_config(DecodeProblem(hq, hkv, d, (3000,) * 8, q_len=q_len), config)
    assert (cfg(8, 8, 144)["HEAD_DIM_PAD"], cfg(8, 8, 144)["D_HI"]) == (128, 16)
    assert (cfg(32, 32, 96)["HEAD_DIM_PAD"], cfg(32, 32, 96)["D_HI"]) == (128, 0)
    assert cfg(32, 4, 96, q_len=2)["D_HI"] == 32
    assert cfg(20, 2, 240, q_len=8)["D_HI"] == 0
    assert cfg(8, 8, 144, config={"DIM_SPLIT": 0})["D_HI"] == 0
    assert "DIM_SPLIT" not in cfg(8, 8, 144)  # a tunable, not a kernel parameter
    # 144 in 128 + 16 dims: a 64 KB slot holds 2 x 144-dim rows, more tokens than 2 x 256
    assert cfg(8, 8, 144)["BLOCK_N"] >= cfg(8, 8, 144, config={"DIM_SPLIT": 0})["BLOCK_N"]
    with pytest.raises(ProblemError, match="DIM_SPLIT"):
        cfg(8, 8, 144, config={"DIM_SPLIT": 2})


def test_gluon_warpgroup_mma_takes_a_warpgroup_of_rows_and_16_bit_operands():
    """``WGMMA=1`` (by config): 64 rows a program on 4 warps, 128 on 8; the tile narrows as the
    head dim grows (a thread holds (dims + tile) / 2 accumulator floats); fp8 caches, fp32 and
    fewer than a warpgroup's warps are refused by name."""
    pytest.importorskip("triton.experimental.gluon")
    from impls.gluon._common import WGMMA_THREAD_FLOATS, pick_launch_config

    def cfg(d, config, **kw):
        return pick_launch_config(DecodeProblem(32, 4, d, (3000,) * 8, q_len=8, **kw),
                                  {"WGMMA": 1, **config})
    assert cfg(128, {})["BLOCK_H"] == 64 and cfg(128, {"num_warps": 8})["BLOCK_H"] == 128
    assert cfg(128, {})["WGMMA"] == 1
    assert pick_launch_config(DecodeProblem(32, 4, 128, (3000,)))["WGMMA"] == 0
    # the rule: more rows a KV head than one 16-row mma_v2 tile, 16-bit, K/V of 4 MiB or more
    drafts = DecodeProblem(32, 4, 128, (3000,) * 8, q_len=8)  # 64 rows, 49 MB
    assert pick_launch_config(drafts)["WGMMA"] == 1 and pick_launch_config(drafts)["BLOCK_H"] == 64
    for off in (DecodeProblem(32, 4, 128, (3000,) * 8, q_len=2),  # 16 rows: one mma_v2 tile
                DecodeProblem(32, 4, 128, (200,) * 8, q_len=8),  # 3.3 MB of K/V: launch-bound
                DecodeProblem(32, 4, 128, (3000,) * 8, q_len=8, kv_dtype="float8_e4m3fn")):
        assert pick_launch_config(off)["WGMMA"] == 0, off
    assert pick_launch_config(drafts, {"num_warps": 2})["WGMMA"] == 0  # not a whole warpgroup
    assert pick_launch_config(drafts, {"WGMMA": 0})["WGMMA"] == 0
    for d in (64, 128, 144, 256):
        c = cfg(d, {})
        assert (c["HEAD_DIM_PAD"] + c["D_HI"] + c["BLOCK_N"]) / 2 <= WGMMA_THREAD_FLOATS
    assert cfg(256, {})["BLOCK_N"] < cfg(64, {})["BLOCK_N"]
    for bad, kw in (({}, {"kv_dtype": "float8_e4m3fn"}), ({}, {"dtype": "float32"}),
                    ({"num_warps": 2}, {})):
        with pytest.raises(ProblemError, match="WGMMA=1"):
            cfg(128, bad, **kw)
    with pytest.raises(ProblemError, match="WGMMA"):
        cfg(128, {"WGMMA": 2})
    with pytest.raises(ProblemError, match="DENSE_TMA"):
        cfg(128, {"DENSE_TMA": 2})


def test_gluon_configs_past_a_programs_shared_memory_are_refused_before_a_build():
    """Rings (and WGMMA's query rows) beyond sm_90's 227 KiB a program: an explicit tile is
    refused by name before any build (conformance found 3 stages of 64 tokens at head dim 256 on
    128 WGMMA rows compiled to 262,168 B and failed at load); a depth asked for without a tile
    narrows the tile instead."""
    pytest.importorskip("triton.experimental.gluon")
    from impls.common import SMEM_BYTES
    from impls.gluon._common import pick_launch_config
    problem = DecodeProblem(32, 4, 256, (3000,) * 8, q_len=8)
    with pytest.raises(ProblemError, match="shared memory"):
        pick_launch_config(problem, {"WGMMA": 1, "num_warps": 8, "NUM_STAGES": 3, "BLOCK_N": 64})
    with pytest.raises(ProblemError, match="shared memory"):
        pick_launch_config(problem, {"NUM_STAGES": 4, "BLOCK_N": 128})
    for config in ({"WGMMA": 1, "num_warps": 8, "NUM_STAGES": 3}, {"NUM_STAGES": 4}):
        c = pick_launch_config(problem, config)
        ring = c["NUM_STAGES"] * c["BLOCK_N"] * 2 * 2 * 256
        assert ring + (c["BLOCK_H"] * 2 * 256 if c["WGMMA"] else 0) <= SMEM_BYTES, c


def test_cupy_merge_values_it_cannot_take_are_refused():
    """CuPy's MERGE is checked before the plan or any kernel is built; -D values never carry it."""
    from impls.cupy._build import pick_launch_config, split_merge

    assert split_merge({"MERGE": "fused", "STAGES": 2}) == ({"STAGES": 2}, "fused")
    with pytest.raises(ProblemError, match=re.escape("MERGE='atomic': must be one of")):
        split_merge({"MERGE": "atomic"})
    with pytest.raises(ProblemError, match="MERGE chooses how split-K merges"):
        pick_launch_config(DecodeProblem(32, 8, 128, (300,)), {"MERGE": "fused"})


def test_cupy_ring_shape_follows_the_grid():
    """The tensor-core ring by CTAs per SM: 8 warps up to two a SM (2 stages paged, 3 dense),
    2 warps x 2 stages while those all fit at once and the lengths are near uniform, or where
    the sequences would not fill the deeper ring and none is the grid's tail, 8 x 3 beyond; a
    config's keys win."""
    from impls.cupy._build import pick_launch_config

    def shape(batch, layout="dense", config=None, num_sms=132):
        d = pick_launch_config(DecodeProblem(32, 8, 128, (1000,) * batch, layout=layout), config,
                               num_sms)
        return d["NUM_WARPS"], d["STAGES"]

    assert shape(1) == shape(16) == shape(33) == (8, 3)
    assert shape(1, "paged") == shape(16, "paged") == (8, 2)
    assert shape(34) == shape(64, "paged") == shape(99) == (2, 2)  # 6 of 37 KB a SM
    assert shape(100) == shape(128, "paged") == (8, 3)
    assert shape(64, num_sms=264) == (8, 3)  # the GPU's SMs count
    ragged = DecodeProblem(32, 8, 128, (18000,) + (3000,) * 63)  # its long sequence is the tail
    assert pick_launch_config(ragged)["NUM_WARPS"] == 8
    assert shape(64, config={"NUM_WARPS": 8, "STAGES": 3}) == (8, 3)
    assert shape(64, config={"STAGES": 3}) == (2, 3)
    # a ragged batch of more CTAs than fit at once, its sequences (mean 150 tokens) shorter than
    # the deep ring (8 slices x 16 x 3 stages): the small CTAs all the same; long ones keep 8 x 3
    short = DecodeProblem(32, 8, 128, (100, 200) * 200)
    long_ = DecodeProblem(32, 8, 128, (1000, 2000) * 200)
    assert pick_launch_config(short)["NUM_WARPS"] == 2 and pick_launch_config(short)["STAGES"] == 2
    assert (pick_launch_config(long_)["NUM_WARPS"], pick_launch_config(long_)["STAGES"]) == (8, 3)
    windowed = DecodeProblem(32, 8, 128, (1000, 2000) * 200, window=100)  # reads 100 a sequence
    assert pick_launch_config(windowed)["NUM_WARPS"] == 2
    # short ones but two of 700 tokens, more than an SM's share of the grid's (19,400 / 132): the
    # tail keeps the deep ring; split-K's kernel too while the share is under the 256 tokens the
    # planner cuts a tail to, and shares past it (37,400 / 132)
    tail = DecodeProblem(14, 1, 128, (60,) * 300 + (700,) * 2)
    assert pick_launch_config(tail)["NUM_WARPS"] == pick_launch_config(tail, split=True)["NUM_WARPS"] == 8
    more = DecodeProblem(14, 1, 128, (60,) * 600 + (700,) * 2)
    assert pick_launch_config(more)["NUM_WARPS"] == 8
    assert pick_launch_config(more, split=True)["NUM_WARPS"] == 2
    # at head dims where 8 warps x 3 stages do not fit but x 2 do: 8 x 2, not 4 x 3; past them
    # (208 up) the most warps that fit 3 stages
    for d, shape in ((144, (8, 2)), (176, (8, 2)), (192, (8, 2)), (208, (4, 3)), (256, (4, 3))):
        for lens in ((12000,) * 24, (3000,) * 200):
            d_ = pick_launch_config(DecodeProblem(44, 4, d, lens))
            assert (d_["NUM_WARPS"], d_["STAGES"]) == shape, (d, len(lens))


def test_cupy_tensor_core_rows_are_one_block_per_kv_head_up_to_64():
    """The tensor-core CTA holds the KV head's query rows in 1, 2 or 4 row tiles of 16 (a warp
    per tile in each token slice), so each K/V tile is read once for up to 64 rows; more rows
    take several CTAs. A config's BLOCK_H is checked: a tile count the warps divide, no padding
    beyond the rows."""
    from impls.cupy._build import pick_launch_config, step_tokens

    def launch(hq, hkv, q_len, config=None, batch=16):
        return pick_launch_config(DecodeProblem(hq, hkv, 128, (4000,) * batch, q_len=q_len),
                                  config)

    assert [launch(32, 8, q)["BLOCK_H"] for q in (1, 4, 5, 8, 16)] == [16, 16, 32, 32, 64]
    assert launch(64, 1, 2, batch=128)["BLOCK_H"] == 64  # 128 rows: two CTAs of 64
    wide = launch(8, 1, 8, batch=128)
    assert wide["BLOCK_H"] == 64 and wide["NUM_WARPS"] % 4 == 0
    assert step_tokens(wide) == 16 * wide["NUM_WARPS"] // 4
    assert launch(32, 8, 8, batch=128)["NUM_WARPS"] >= 2  # 2-warp shape: 2 per row tile
    assert launch(32, 8, 8, {"BLOCK_H": 16})["BLOCK_H"] == 16  # the old shape, on request
    with pytest.raises(ProblemError, match="BLOCK_H=48: the tensor-core loop takes 16, 32, 64"):
        launch(8, 1, 8, {"BLOCK_H": 48})
    with pytest.raises(ProblemError, match="NUM_WARPS must be a multiple of 4"):
        launch(8, 1, 8, {"BLOCK_H": 64, "NUM_WARPS": 2})
    with pytest.raises(ProblemError, match="BLOCK_H=64: .* fit in 16"):
        launch(32, 8, 1, {"BLOCK_H": 64})
    with pytest.raises(ProblemError, match="BLOCK_H, STAGES tune the tensor-core loop"):
        launch(32, 8, 1, {"TENSOR_CORES": 0, "BLOCK_H": 16, "STAGES": 2})


def test_cupy_row_tiles_get_ctas_of_their_own_where_rereads_are_free_or_sms_idle():
    """The fewest row tiles a CTA (each K/V tile read once for the rows), except: one tile a CTA
    where the K/V fit in L2 (a sibling CTA's read is an L2 hit); without split-K, halved while
    the grid leaves more than half the SMs idle (split-K's items fill them)."""
    from impls.cupy._build import mma_block_h, pick_launch_config, rows_block

    def block(hq, hkv, q_len, batch, seq, split, num_sms=132, l2=50 << 20):
        p = DecodeProblem(hq, hkv, 128, (seq,) * batch, q_len=q_len)
        return mma_block_h(p, num_sms, l2, split)

    mqa = (8, 1, 8)  # 64 rows a KV head
    assert block(*mqa, 16, 4096, True) == block(*mqa, 16, 4096, False) == 16  # 32 MB of K/V
    assert block(*mqa, 16, 4096, True, l2=16 << 20) == 64  # an L2 it does not fit
    assert block(*mqa, 16, 4096, False, l2=16 << 20) == 16  # 16 CTAs of 64 rows: halved twice
    assert block(*mqa, 128, 2048, False) == block(*mqa, 128, 2048, True) == 64  # 128 CTAs
    assert block(*mqa, 128, 2048, False, num_sms=264) == 32  # a GPU of twice the SMs
    assert block(28, 4, 8, 16, 4096, False) == 32 and block(28, 4, 8, 16, 4096, True) == 64
    assert block(32, 8, 8, 1, 32768, False) == 16 and block(32, 8, 8, 1, 32768, True) == 32
    p = DecodeProblem(32, 8, 128, (32768,), q_len=8)
    assert rows_block(p) == 32
    assert pick_launch_config(p, split=True)["BLOCK_H"] == 32
    assert pick_launch_config(p)["BLOCK_H"] == 16
    assert pick_launch_config(p, {"BLOCK_H": 32})["BLOCK_H"] == 32  # a config's wins


def test_cupy_split_cuts_to_the_fewest_steps_whose_items_fit_the_sms():
    """CuPy's floor on the split chunk, past 128 dims where a sequence is longer than the
    planner's 256: the fewest whole loop steps under it whose items fit the SMs at one CTA each,
    256 where none does. Else one step only where half the SMs would idle."""
    import numpy as np

    from impls import plan as planner
    from impls.cupy.split_k import shortest_item

    def floor(lens, step, ctas, sms, head_dim=192):
        return shortest_item(np.array(lens), step, ctas, sms, head_dim)

    assert floor([1024], 128, 8, 132) == 128  # 8 items x 8 KV heads
    assert floor([2048], 128, 8, 132) == 128  # 128 CTAs: one each still
    assert floor([2048], 128, 8, 127) == planner.MIN_CHUNK
    assert floor([1024, 1024], 128, 8, 132) == 128
    assert floor([4096], 128, 8, 132) == planner.MIN_CHUNK  # 256 CTAs at 128
    # a step of 64: 64 tokens is 24 x 8 CTAs, too many; 128 is 12 x 8
    assert floor([1500], 64, 8, 132) == 128
    assert floor([1500], 64, 8, 192) == 64
    assert floor([300, 300, 300], 64, 4, 132) == 64  # 15 items x 4
    # a batch of whole sequences at 256 is cut under it only where half the SMs would idle
    assert floor([172] * 11, 64, 4, 132) == planner.MIN_CHUNK  # 33 x 4 CTAs
    assert floor([172] * 5, 64, 4, 132) == 64  # 15 x 4
    # ... and so is any batch at 128 dims or fewer
    assert floor([1500], 64, 8, 132, head_dim=128) == planner.MIN_CHUNK  # 24 x 8 CTAs at 64
    assert floor([1500], 64, 4, 132, head_dim=64) == planner.MIN_CHUNK  # 96 CTAs: over half
    assert floor([1500], 64, 2, 132, head_dim=64) == 64  # 48 CTAs: half the SMs idle
    assert floor([1500], 64, 4, 132, head_dim=129) == 64
    assert planner.plan([1024], 8, 132, 128, shortest=128).chunk == 128


@pytest.mark.parametrize("name", ["triton/dense", "triton/paged", "triton/split-k", "numba/dense",
                                  "numba/split-k"])
def test_a_launch_reports_every_knob_it_takes(name):
    """Launch.config names a value for each knob of the backend's space that applies to the cell,
    in the vocabulary (impls.launch): a rule's choice is then a configuration the tuner can start
    its walk from and compare with its pick (harness.tuning, scripts/tuning_gaps.py), the head
    dim's tiles and a paged tile's addressing included, which no kernel parameter names. The
    DSLs that run on the CPU; the others' reports are built the same way."""
    from specs.inputs import make_inputs

    impl = registry.get(name)
    if impl.backend.mode() == "unavailable":
        pytest.skip(impl.backend.mode())
    layout = "paged" if name.endswith("paged") else "dense"
    problem = DecodeProblem(6, 2, 48, (40, 17), dtype="float16", layout=layout, page_size=16)
    inputs = make_inputs(problem, 0)
    launch = impl.prepare(inputs, *inputs.new_outputs())
    variant = impl.variant(layout)
    applies = {k.name for k in impl.backend.space.knobs if k.applies(variant, layout)
               and all(launch.config.get(n) == v for n, v in k.when.items())}
    assert applies <= set(launch.config), sorted(applies - set(launch.config))
    # the report is a configuration the backend takes back, to the same launch
    knobs = {k: launch.config[k] for k in applies}
    again = impl.prepare(inputs, *inputs.new_outputs(), config=knobs)
    assert {k: again.config[k] for k in applies} == knobs


def test_cupy_split_k_shares_an_sm_where_its_ring_would_leave_4_warps_alone(monkeypatch):
    """impls.cupy._build.alone_sharers: above head dim 192 (16-bit) 8 warps' rings do not fit
    even 2 deep, so the rule's CTA of 4 warps holds an SM alone; split-K then shares the SM on
    2-warp x 2-stage rings (3 an SM) where its plan gives more CTAs than SMs and the grid holds
    enough tokens an SM for items of MIN_CHUNK slowed 3 times (impls.plan.shared_tail_free).
    Not at head dim 128 (8 warps fit), not for a grid within the SMs or with too few tokens, and
    never over a config's NUM_WARPS or STAGES (split_k.prepare, kernels not built)."""
    from impls import plan as planner
    import types

    import torch

    from impls.cupy import _build, split_k
    from specs.inputs import make_inputs

    uniform = DecodeProblem(56, 4, 208, (324,) * 490)  # 1960 CTAs of 324 tokens
    assert _build.shared_residency(uniform, 16) == 3
    assert _build.alone_sharers(uniform, 1960, 1960, 132, 16, split=True) == 3
    c = _build.pick_launch_config(uniform, split=True, sharers=3)
    assert (c["NUM_WARPS"], c["STAGES"]) == (2, 2)
    assert (_build.pick_launch_config(uniform, split=True)["NUM_WARPS"],
            _build.pick_launch_config(uniform)["NUM_WARPS"]) == (4, 4)  # one-pass keeps its ring
    assert _build.alone_sharers(uniform, 132, 1960, 132, 16, split=True) == 1  # within the SMs
    assert _build.alone_sharers(DecodeProblem(56, 4, 128, (324,) * 490), 1960, 1960, 132, 16,
                                split=True) == 1  # 8 warps fit
    # 500 tokens an SM: items of 256 slowed 3 times would outlast it, alone they would not
    tight = DecodeProblem(14, 1, 240, (500,) * 132)
    assert not planner.shared_tail_free(tight, 132, 132, 3, split=True)
    assert planner.shared_tail_free(tight, 132, 132, 1, split=True)
    assert _build.alone_sharers(tight, 200, 132, 132, 16, split=True) == 1
    # one-pass: the longest span itself, so a ragged batch's long sequence is refused
    assert planner.shared_tail_free(uniform, 1960, 132, 3)
    assert not planner.shared_tail_free(DecodeProblem(56, 4, 208, (4000,) + (324,) * 489), 1960, 132, 3)

    # the launcher, on the CPU (kernels not built; occupancy by the estimate): 140 sequences of
    # 760 tokens at head dim 208 plan 140 CTAs, 806 tokens an SM
    monkeypatch.setattr(split_k, "get_kernel", lambda *args: types.SimpleNamespace())
    monkeypatch.setattr(split_k, "view", lambda tensor: tensor)
    monkeypatch.setattr(_build, "view", lambda tensor: tensor)
    monkeypatch.setattr(planner, "sm_count", lambda device: 132)  # not the CPU's nominal 4

    def ring(problem, config=None):
        inputs = make_inputs(problem, device="cpu")
        out, lse = torch.empty_like(inputs.q), torch.empty(inputs.q.shape[:-1])
        c = split_k.prepare(inputs, out, lse, config=config).config
        return c["NUM_WARPS"], c["STAGES"]
    problem = DecodeProblem(8, 1, 208, (760,) * 140)
    assert ring(problem) == (2, 2)
    assert ring(problem, {"NUM_WARPS": 4}) == (4, 3) and ring(problem, {"STAGES": 3}) == (4, 3)
    assert ring(DecodeProblem(8, 1, 208, (500,) * 140)) == (4, 3)  # 530 tokens an SM: too few
