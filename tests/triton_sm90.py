"""Compile every Triton (or Gluon) kernel of a backend for sm_90 (Hopper) on a machine with no GPU.

Run as ``TRITON_INTERPRET=0 python -m tests.triton_sm90 [triton|gluon|spills BACKEND|wgmma|ws]``
(test_triton_sm90.py does), or ``... residency BACKEND ALGORITHM FILE.json ...``
(``residency_report``). The real launchers run on CPU tensors with ``JITFunction.run`` swapped
for a recorder, so the argument types and compile-time constants are exactly what a GPU launch
passes; each distinct kernel specialisation is then compiled by Triton's own compiler for
``GPUTarget("cuda", 90, 32)``. Prints one line per kernel: name, constants, the PTX's use of
tensor-core ``mma``, of ``cp.async`` (asynchronous copies) and of TMA (``cp.async.bulk.tensor``).
"""

import importlib
import os
import re
import subprocess
import sys
import tempfile
import types

if os.environ.get("TRITON_INTERPRET") != "0":
    sys.exit("run with TRITON_INTERPRET=0 (compile, do not interpret)")

import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource, make_backend  # noqa: E402
from triton.experimental.gluon._runtime import GluonASTSource  # noqa: E402
from triton.runtime.jit import JITFunction, create_function_from_signature  # noqa: E402

import impls  # noqa: E402,F401
from impls import registry  # noqa: E402
from impls.common import SMEM_BYTES  # noqa: E402
from impls.gluon._ws import LOADER_REGS  # noqa: E402
from specs.inputs import make_inputs  # noqa: E402
from specs.problem import DecodeProblem  # noqa: E402
from tests.sm90_tools import triton_tool  # noqa: E402

HOPPER = GPUTarget("cuda", 90, 32)
# Gluon's defaults, a deeper ring, and every variant's dense tiles by TMA and by cp.async
GLUON_CONFIGS = (None, {"NUM_STAGES": 3}, {"DENSE_TMA": 1}, {"DENSE_TMA": 0})
# the rule's configs (the head dim in one tile or two, by rule), the merge fused, two dim tiles forced
TRITON_CONFIGS = (None, {"MERGE": "fused"}, {"DIM_SPLIT": 1})
CP_ASYNC = re.compile(r"cp\.async\.c[ag]")  # cp.async.ca/.cg, not TMA's cp.async.bulk
captured = []


class _StandIn:
    """What a ``warmup`` returns to a launcher that sizes its plan by the compiled binary: without
    a GPU the binary's registers are unknown, so the CUDA limit (255) stands in for them; its
    warps are the launch's."""
    n_regs = 255
    n_spills = 0

    def __init__(self, num_warps: int):
        self.metadata = types.SimpleNamespace(shared=SMEM_BYTES, num_warps=num_warps)

    def _init_handles(self):
        pass


def _record(self, *args, grid, warmup, **kwargs):
    captured.append((self, args, kwargs))
    return _StandIn(kwargs.get("num_warps", 4)) if warmup else None


def ptxas_usage(ptx: str) -> tuple[int, int]:
    """(registers a thread, bytes of register spill stores), from Triton's own ptxas for sm_90a
    (what a launch loads)."""
    ptxas = triton_tool("ptxas")
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "k.ptx")
        with open(src, "w") as f:
            f.write(ptx)
        log = subprocess.run([ptxas, "-v", "--gpu-name=sm_90a", src, "-o", os.path.join(tmp, "k.o")],
                             capture_output=True, text=True, check=True).stderr
    return (int(re.search(r"Used (\d+) registers", log)[1]),
            sum(int(n) for n in re.findall(r"(\d+) bytes spill stores", log)))


def warp_specialized(ptx: str) -> str:
    """A warp-specialized kernel's register split (the setmaxnreg counts, a partition's each) and
    whether each copy group marked ready is fenced: between every ``cp.async.wait_group`` and the
    next ``mbarrier.arrive``, a ``fence.proxy.async`` (cp.async writes through the generic proxy,
    the warpgroup MMA reads through the async one); and the warpgroup MMAs' waits (how many
    products each leaves in flight: above 0, a product overlaps what follows it)."""
    regs = sorted({int(n) for n in re.findall(r"setmaxnreg\.\w+\.sync\.aligned\.u32\s+(\d+)", ptx)})
    waits = sorted({int(n) for n in re.findall(r"wgmma\.wait_group\.sync\.aligned\s+(\d+)", ptx)})
    fenced = True
    for waited in re.split(r"cp\.async\.wait_group", ptx)[1:]:
        before_arrive = waited.split("mbarrier.arrive", 1)[0]
        fenced &= "fence.proxy.async" in before_arrive
    return f"setmaxnreg={regs} fenced={fenced} mma_waits={waits}"


def loader_registers(cubin: bytes, loader_regs: int) -> int:
    """Registers the code after a warp-specialized kernel's ``setmaxnreg`` down to
    ``loader_regs`` touches (its highest R index + 1, from nvdisasm's SASS): ptxas allocates for
    the whole kernel, so a partition that touches more than it gave back is undefined. The code
    is followed from there along its branches (ptxas moves retry loops past the EXIT) up to the
    partition's end (the next allocation, or an EXIT)."""
    nvdisasm = triton_tool("nvdisasm")
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "k.cubin")
        with open(src, "wb") as f:
            f.write(cubin)
        sass = subprocess.run([nvdisasm, "-c", src], capture_output=True, text=True,
                              check=True).stdout.splitlines()
    labels = {m[1]: i for i, l in enumerate(sass) if (m := re.match(r"(\.L_x_\d+):", l))}
    todo = [next(i for i, l in enumerate(sass) if f"DEALLOC.CTAPOOL {loader_regs:#x} " in l + " ")]
    seen, regs = set(), set()
    while todo:
        i = todo.pop()
        while i < len(sass) and i not in seen:
            seen.add(i)
            line = sass[i]
            if "TRY_ALLOC" in line or re.search(r"\bEXIT\b", line):
                break
            regs.update(int(r) for r in re.findall(r"\bR(\d+)\b", line))
            if target := re.search(r"\bBRA\s+(?:!?U?P\w+,\s*)?`\((\.L_x_\d+)\)", line):
                todo.append(labels[target[1]])
                if re.match(r"\s*/\*\w+\*/\s+BRA\b", line):  # unconditional: this path ends
                    break
            i += 1
    return 1 + max(regs)


def prepared(impl, inputs, config):
    """``impl``'s launch on ``inputs`` with ``config`` (kernel names), from its module's own
    ``prepare``: Gluon has no CPU mode."""
    out, lse = inputs.new_outputs()
    prepare = getattr(importlib.import_module(impl.module), impl.entry)
    return prepare(inputs, out, lse, **({"config": config} if config else {}))


def distinct_compiles(launches):
    """(fn, kwargs, compile) of each distinct specialisation among recorded launches
    ``fn[grid](*args, **kwargs)``, in order; ``compile()`` builds it for sm_90a: (kernel,
    signature, constexprs by name)."""
    target_backend = make_backend(HOPPER)
    done = set()
    for fn, args, kwargs in launches:
        # what JITFunction.run does before compiling: the same types, constants and the
        # divisibility attributes (16-byte aligned pointers and strides) a GPU launch gets
        binder = create_function_from_signature(fn.signature, fn.params, target_backend)
        bound, specialization, options = binder(*args, **kwargs)
        options, signature, constexprs, attrs = fn._pack_args(target_backend, kwargs, bound,
                                                              specialization, options)
        key = (fn.__name__, str(specialization), str(sorted(kwargs.items())))
        if key in done:
            continue
        done.add(key)

        def compile_(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs,
                     options=options):
            source = (GluonASTSource if fn.is_gluon() else ASTSource)(fn, signature, constexprs, attrs)
            kernel = triton.compile(source, target=HOPPER, options=options.__dict__)
            return kernel, signature, {fn.params[path[0]].name: v for path, v in constexprs.items()}
        yield fn, kwargs, compile_


def residency_report() -> None:
    """``residency BACKEND ALGORITHM FILE.json ...``: for each problem of the workload files, the
    attention kernel of BACKEND's ALGORITHM (``split-k``, ``one-pass``) at its rule's config,
    compiled for sm_90a: ptxas's registers, Triton's shared memory and the programs an SM they
    leave (impls.plan.residency): which problems' kernels hold one, picked on the CPU before a
    run. A launcher that reads its compiled kernel's residency sees the recorder's stand-in (one
    an SM): every kernel it builds is listed (Triton's split-K: its ring's narrowing steps)."""
    from impls import plan as planner
    from specs import workloads
    backend, algorithm, *files = sys.argv[2:]
    JITFunction.run = _record
    impl = next(i for i in registry.all_impls() if i.backend.name == backend and i.algorithm == algorithm)
    for file in files:
        for problem in workloads.load_file(file):
            captured.clear()
            prepared(impl, make_inputs(problem, seed=0, device="cpu"), None).run()
            for fn, kwargs, compile_ in distinct_compiles(captured):
                if "combine" in fn.__name__:
                    continue
                kernel, _, named = compile_()
                regs, _ = ptxas_usage(kernel.asm["ptx"])
                held = planner.residency(regs, kernel.metadata.shared, kwargs["num_warps"])
                shown = {k: v for k, v in {**named, **kwargs}.items() if k in RING_PARAMS}
                print(f"{problem.label()}: {fn.__name__} {shown} registers {regs} "
                      f"shared {kernel.metadata.shared} programs an SM {held}", flush=True)


RING_PARAMS = ("BLOCK_N", "BLOCK_H", "D_HI", "num_warps", "num_stages", "maxnreg")  # its columns


def compile_all(problems, backend: str = "triton", configs=(None,), algorithms=None,
                spills: bool = False) -> list[str]:
    JITFunction.run = _record
    captured.clear()
    for problem in problems:
        inputs = make_inputs(problem, seed=0, device="cpu")
        for impl in registry.all_impls():
            if impl.backend.name == backend and impl.unsupported(problem) is None \
                    and (algorithms is None or impl.algorithm in algorithms):
                for config in configs:
                    try:
                        launch = prepared(impl, inputs, config)
                    except registry.Unsupported:  # a config this problem cannot take
                        continue
                    launch.run()
    report = []
    for fn, kwargs, compile_ in distinct_compiles(captured):
        kernel, signature, named = compile_()
        ptx = kernel.asm["ptx"]
        launch = {k: kwargs[k] for k in ("num_warps", "num_stages") if k in kwargs}
        dtype = next(t for t in signature.values() if t.startswith("*") and t != "*i32")
        report.append(f"{fn.__name__} {dtype} {named} {launch} shared={kernel.metadata.shared} "
                      f"mma={'mma' in ptx} cp.async={bool(CP_ASYNC.search(ptx))} "
                      f"tma={'cp.async.bulk.tensor' in ptx} wgmma={'wgmma.mma_async' in ptx} "
                      f"acq_rel={'atom.global.gpu.acq_rel' in ptx} "
                      f"f16_to_bf16={'cvt.bf16.f16' in ptx}"
                      + (f" {warp_specialized(ptx)} loader_registers="
                         f"{loader_registers(kernel.asm['cubin'], LOADER_REGS.value)}"
                         if "setmaxnreg" in ptx else "")
                      + (f" spills={ptxas_usage(ptx)[1]}" if spills else ""))
        assert kernel.metadata.shared <= SMEM_BYTES, f"{fn.__name__} needs {kernel.metadata.shared} B"
    return report


def spill_check() -> None:
    """The launch rules' own configs on an H100's 132 SMs (the grid's waves set the tile), for
    query rows from 16 to 128 a KV head: one line per kernel with the bytes it spills."""
    from impls import common
    common.sm_count = lambda device: 132
    problems = [DecodeProblem(8, 1, 128, (2048,) * 128, layout=layout, q_len=q)  # MQA, 8 to 64 rows
                for q in (2, 4, 8) for layout in ("dense", "paged")]
    problems += [DecodeProblem(32, 8, 128, (4096,) * 16, layout="paged", q_len=8),  # GQA-4 x 8
                 DecodeProblem(32, 1, 128, (4096,) * 4),  # a group of 32
                 DecodeProblem(16, 1, 64, (4096,) * 16, q_len=8),  # 128 rows of head dim 64
                 # 32 rows on 0.5 MB of K/V (Gluon: mma_v2's rows, not the warpgroup MMA's)
                 DecodeProblem(8, 1, 128, (256,) * 4, q_len=4)]
    # Triton: rows past the q tile with the K/V beyond L2 (two warpgroups), kept small here by
    # an L2 that holds none of them: 48 rows at head dim 240 (a 64-row tile), 80 (a 128-row
    # tile), fp8 and paged too, and 112 rows at head dim 192 (two tiles of dims, 64-token tiles)
    # (Gluon's two-warpgroup rule is split-K's, below; its paged one-pass tile of 16 rows at
    # head dims 208-240 spills 4 B, bf16 and fp8: not mended, so those are not compiled here)
    common.L2_BYTES = 0
    problems += [] if sys.argv[2] != "triton" else [DecodeProblem(20, 2, 240, (300, 70), layout="paged", q_len=8),
                 DecodeProblem(20, 2, 240, (300, 70), layout="paged", q_len=8,
                               kv_dtype="float8_e4m3fn"),
                 DecodeProblem(28, 2, 192, (300, 70), q_len=8),
                 DecodeProblem(12, 2, 240, (300, 70), q_len=8),
                 # batches of short sequences in several waves: four programs share an SM, their
                 # tiles narrowed to 16 tokens (head dim 256 paged, 192 dense, fp8 at 256)
                 DecodeProblem(16, 4, 256, (60,) * 300, layout="paged", page_size=4),
                 DecodeProblem(64, 8, 192, (50,) * 400),
                 DecodeProblem(8, 1, 256, (90,) * 600, kv_dtype="float8_e4m3fn")]
    for line in compile_all(problems, sys.argv[2], algorithms=("one-pass",), spills=True):
        print(line)
    if sys.argv[2] == "gluon":  # split-K's two warpgroups where one holds 16 rows (head dim 240)
        wide = [DecodeProblem(20, 2, 240, (300, 70), layout=layout, q_len=8) for layout in ("dense", "paged")]
        # the tile kernel's (on paged caches split-K's warp-specialized rule would take them)
        for line in compile_all(wide, "gluon", configs=({"WARP_SPEC": 0},), algorithms=("split-k",),
                                spills=True):
            print(line)


def wgmma_check() -> None:
    """Gluon's warpgroup-MMA kernels (``WGMMA=1``, asked for by config) on drafts of 32-64 rows a
    KV head: head dims 128, 144 (two tiles, a window, soft-capping) and 256, on one and two
    warpgroups, dense tiles by TMA and by cp.async, paged; one line per kernel with its spills."""
    problems = [DecodeProblem(32, 4, 128, (3000, 700), layout=layout, q_len=8) for layout in ("dense", "paged")]
    problems += [DecodeProblem(16, 2, 144, (900, 70), layout=layout, q_len=4, window=300, softcap=20.0)
                 for layout in ("dense", "paged")]
    problems += [DecodeProblem(16, 2, 256, (900, 70), q_len=8)]
    configs = ({"WGMMA": 1}, {"WGMMA": 1, "num_warps": 8}, {"WGMMA": 1, "DENSE_TMA": 1})
    for line in compile_all(problems, "gluon", configs, spills=True):
        print(line)
    # the shared-memory edge: a deeper ring on 128 rows at head dim 256, its tile narrowed to fit
    # (compile_all asserts what the compiler allocates is within a program's)
    edge = [DecodeProblem(16, 2, 256, (900, 70), layout=layout, q_len=8) for layout in ("dense", "paged")]
    for line in compile_all(edge, "gluon", ({"WGMMA": 1, "num_warps": 8, "NUM_STAGES": 3},)):
        print("edge", line)


def ws_check() -> None:
    """Gluon's warp-specialized kernels (``impls.gluon._ws``, asked for by config), one-pass and
    split-K (long sequences: split on a CPU's nominal 4 SMs, the combine launched), on drafts of
    more than 64 rows a KV head: head dims 256 (dense and paged), 144 (two tiles, with a window
    and a soft cap), 208 on pages of 48 tokens (table lookups a row) and 240 on 160 rows (two row
    blocks), and 32-token tiles at head dim 144 (64 by rule); one line per kernel with its
    register split, fences and spills."""
    problems = [DecodeProblem(32, 2, 256, (9000, 70), layout=layout, q_len=8) for layout in ("dense", "paged")]
    problems += [DecodeProblem(32, 2, 144, (9000, 70), layout=layout, q_len=4, window=3000, softcap=20.0)
                 for layout in ("dense", "paged")]
    problems += [DecodeProblem(40, 2, 208, (9000, 70), layout="paged", page_size=48, q_len=8),
                 DecodeProblem(40, 2, 240, (9000, 70), q_len=8, dtype="float16")]
    # dense tiles by cp.async and by TMA (the default; paged tiles are always gathered), 64 tokens
    # where they fit by the tile rule (_ws.wide_tile_fits: head dim 144 dense)
    for line in compile_all(problems, "gluon", ({"WARP_SPEC": 1, "DENSE_TMA": 0}, {"WARP_SPEC": 1}),
                            spills=True):
        print(line)
    # 32-token tiles (asked for) at head dim 144 dense, in the 3-slot ring
    narrow = {"WARP_SPEC": 1, "BLOCK_N": 32}
    for line in compile_all(problems[2:3], "gluon", ({**narrow, "DENSE_TMA": 0}, narrow), spills=True):
        print(line)


def cap_check() -> None:
    """The launchers over a register-bound stand-in (186 registers a thread, 20 KB: 2 programs of
    4 warps a SM by registers where shared memory holds more), on a grid of many waves of the
    CPU's nominal 4 SMs: one line per launch, its ``min_blocks``, the register cap it launched
    with, and whether every kernel it launched is one a warmup compiled (and the cap was checked
    on): the same constants and ``maxnreg``."""
    calls = []

    def record(self, *args, grid, warmup, **kwargs):
        constants = {k: v for k, v in kwargs.items() if not hasattr(v, "data_ptr")}
        calls.append((self.__name__, warmup, constants))
        if warmup:
            return types.SimpleNamespace(n_regs=min(186, kwargs.get("maxnreg") or 186), n_spills=0,
                                         metadata=types.SimpleNamespace(shared=20 * 1024),
                                         _init_handles=lambda: None)
    JITFunction.run = record
    inputs = make_inputs(DecodeProblem(32, 8, 128, (300,) * 64), seed=0, device="cpu")
    for backend, configs in (("triton", (None, {"MERGE": "fused"})), ("gluon", (None,))):
        for impl in registry.all_impls():
            if impl.backend.name != backend:
                continue
            for config in configs:
                calls.clear()
                launch = prepared(impl, inputs, config)
                launch.run()
                warm = [c for name, w, c in calls if w]
                ran = [c for name, w, c in calls if not w and name != "combine_kernel"]
                print(impl.name, "fused" if config else "rule", f"min_blocks={launch.config['MIN_BLOCKS']}",
                      f"maxnreg={ran[0].get('maxnreg')}", f"checked={all(c in warm for c in ran)}")


def main() -> None:
    if sys.argv[1:2] == ["residency"]:
        return residency_report()
    if sys.argv[1:2] == ["cap"]:
        return cap_check()
    if sys.argv[1:2] == ["spills"]:
        return spill_check()
    if sys.argv[1:2] == ["wgmma"]:
        return wgmma_check()
    if sys.argv[1:2] == ["ws"]:
        return ws_check()
    problems = [DecodeProblem(32, 8, 128, (300, 70), layout=layout, dtype=dtype)
                for dtype in ("bfloat16", "float16", "float32") for layout in ("dense", "paged")]
    problems += [DecodeProblem(16, 4, head_dim, (300,), layout=layout)
                 for head_dim in (64, 96, 256) for layout in ("dense", "paged")]
    # a head dim in two tiles by rule (144 = 128 + 16: dense TMA boxes and gathers of both)
    problems += [DecodeProblem(16, 4, 144, (300,), layout=layout) for layout in ("dense", "paged")]
    # a head dim under the MMA's k step of 16 (Triton pads it to 16; Gluon declares 16 at least)
    problems += [DecodeProblem(8, 2, 8, (300, 70), layout=layout) for layout in ("dense", "paged")]
    # a page size that neither divides the tile nor is divided by it: the per-row table lookups
    problems += [DecodeProblem(32, 8, 128, (300, 70), layout="paged", page_size=12)]
    # one long sequence on one KV head: split on the nominal 4 SMs of a CPU, the combine launched
    problems += [DecodeProblem(8, 1, 128, (8192,), layout=layout) for layout in ("dense", "paged")]
    # ... with one or two query rows: the combine cuts the head dim too (blocks of 32 and 64)
    problems += [DecodeProblem(1, 1, 128, (8192,)), DecodeProblem(2, 1, 80, (8192,), layout="paged")]
    # fp8 caches (where the backend reads them): e4m3 per head, e5m2 per tensor
    problems += [DecodeProblem(32, 8, 128, (300, 70), layout=layout, kv_dtype=kv, kv_scale=scale)
                 for layout in ("dense", "paged")
                 for kv, scale in (("float8_e4m3fn", "head"), ("float8_e5m2", "tensor"))]
    # a window and soft-capped logits (where the backend takes them)
    problems += [DecodeProblem(32, 8, 128, (300, 70), layout=layout, window=100, softcap=30.0)
                 for layout in ("dense", "paged")]
    # multi-token queries (where the backend takes them): a draft of 4 in a window, and 8 on an
    # MQA group of 32 (256 rows: several row blocks a KV head)
    problems += [DecodeProblem(32, 8, 128, (300, 70), layout=layout, q_len=4, window=100)
                 for layout in ("dense", "paged")]
    problems += [DecodeProblem(32, 1, 128, (8192,), layout="paged", q_len=8)]
    backend = sys.argv[1] if len(sys.argv) > 1 else "triton"
    for line in compile_all(problems, backend, GLUON_CONFIGS if backend == "gluon" else TRITON_CONFIGS):
        print(line)


if __name__ == "__main__":
    main()
