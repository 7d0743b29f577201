"""Every config of Gluon's space at the shared-memory edge (head dim 256, 128 draft rows): each
conforms or is refused before a build."""
import time

from conformance.checks import assert_conforms
from impls import registry
from specs.inputs import make_inputs
from specs.problem import DecodeProblem, ProblemError
from specs.reference import reference

start = time.time()
for layout in ("dense", "paged"):
    problem = DecodeProblem(32, 2, 256, (900, 70), layout=layout, q_len=8)
    inputs = make_inputs(problem, seed=1, device="cuda")
    ref = reference(inputs)
    for impl in registry.all_impls():
        if impl.backend.name != "gluon" or impl.unsupported(problem):
            continue
        ok = refused = 0
        failed = []
        for config in impl.backend.space.configs(impl.variant(layout), layout):
            try:
                assert_conforms(impl, inputs, ref, {"config": config})
                ok += 1
            except ProblemError as e:
                if "does not match" in str(e):
                    failed.append((config, str(e)[:200]))
                else:
                    refused += 1
            except Exception as e:  # noqa: BLE001
                failed.append((config, f"{type(e).__name__}: {str(e)[:200]}"))
        print(f"{impl.name} {layout}: {ok} conform, {refused} refused, {len(failed)} failed "
              f"({time.time() - start:.0f} s)", flush=True)
        for f in failed[:5]:
            print("   ", f, flush=True)
# output on one H100 at 0b8fa04 (PYTHONPATH=. python3 results/nvidia-h100/2026-11-26-gluon-wgmma/all_configs.py)
# gluon/one-pass dense: 76 conform, 68 refused, 0 failed (38 s)
# gluon/split-k dense: 76 conform, 68 refused, 0 failed (79 s)
# gluon/one-pass paged: 38 conform, 34 refused, 0 failed (100 s)
# gluon/split-k paged: 38 conform, 34 refused, 0 failed (119 s)
