"""Controls for compute-sanitizer's racecheck, which reported hazards in the warp-specialized
kernels (impls/gluon/_ws.py) whose outputs all matched the oracle: does racecheck model the
synchronisation those kernels use at all? Run under `compute-sanitizer --tool racecheck`:

- ``mbarrier``: a minimal warp-specialized kernel that is correct by construction: a worker
  partition stores a tile into shared memory, its warps meet, one arrives on an mbarrier; the
  default partition waits on it, then reads the tile. Hazards here mean racecheck does not see
  Gluon's warp_specialize and mbarrier hand-off.
- ``wgmma``: the existing (not warp-specialized) Gluon one-pass kernel with the warpgroup MMA on
  a draft of the same kind (cp.async ring, bar.sync), the path every Gluon row has run on.
Prints one line a control; the sanitizer's hazards are printed between them."""
import sys

import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier

import impls  # noqa: F401  (first: CPU modes before any DSL import)
from conformance.checks import check
from impls import registry
from specs.inputs import default_device, make_inputs
from specs.problem import DecodeProblem

ROWS, COLS = 64, 64


@gluon.jit
def reader(tile, ready, out_ptr, R: gl.constexpr, C: gl.constexpr):
    mbarrier.wait(ready.index(0), 0)
    layout: gl.constexpr = gl.BlockedLayout([1, 4], [4, 8], [gl.num_warps(), 1], [1, 0])
    offs = (gl.arange(0, R, gl.SliceLayout(1, layout))[:, None] * C
            + gl.arange(0, C, gl.SliceLayout(0, layout))[None, :])
    gl.store(out_ptr + offs, tile.load(layout))


@gluon.jit
def writer(tile, ready, in_ptr, R: gl.constexpr, C: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1, 4], [4, 8], [gl.num_warps(), 1], [1, 0])
    offs = (gl.arange(0, R, gl.SliceLayout(1, layout))[:, None] * C
            + gl.arange(0, C, gl.SliceLayout(0, layout))[None, :])
    tile.store(gl.load(in_ptr + offs))
    gl.thread_barrier()  # every writer thread's stores done before the one arrive
    mbarrier.arrive(ready.index(0))


@gluon.jit
def handoff_kernel(in_ptr, out_ptr, R: gl.constexpr, C: gl.constexpr):
    tile = gl.allocate_shared_memory(gl.float32, [R, C],
                                     gl.SwizzledSharedLayout(1, 1, 1, [1, 0]))
    ready = gl.allocate_shared_memory(gl.int64, [1, 1], mbarrier.MBarrierLayout())
    mbarrier.init(ready.index(0), count=1)
    gl.warp_specialize([(reader, (tile, ready, out_ptr, R, C)),
                        (writer, (tile, ready, in_ptr, R, C))], [4], [64])


failed = 0
x = torch.randn(ROWS, COLS, device="cuda")
y = torch.zeros_like(x)
handoff_kernel[(1,)](x, y, ROWS, COLS, num_warps=4)
torch.cuda.synchronize()
ok = torch.equal(x, y)
failed += not ok
print("control mbarrier hand-off:", "equal" if ok else "DIFFERENT", flush=True)

problem = DecodeProblem(32, 2, 256, (300, 70), q_len=8, layout="paged", page_size=48)
checked = check(registry.get("gluon/one-pass"), make_inputs(problem, 0, default_device()),
                options={"config": {"wgmma": 1}})
failed += not checked.comparison.passed
print("control wgmma one-pass", problem.label(), checked.run.launch.config,
      checked.comparison.summary(), flush=True)
sys.exit(1 if failed else 0)
