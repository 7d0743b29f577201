"""The split-invariance draw the first GPU run failed on (gluon/split-k, fp16, MHA, D=256):
each run against the oracle, and the failing element with its tolerance weight W."""
import impls  # noqa: F401
from conformance.checks import run_impl
from impls import registry
from specs.inputs import make_inputs
from specs.problem import DecodeProblem
from specs.reference import reference
from specs.tolerance import compare

p = DecodeProblem(54, 54, 256, (1, 1, 3969, 217, 1, 1, 1, 1), layout="dense", dtype="float16")
inputs = make_inputs(p, 1829)
ref = reference(inputs)
at = (3, 5, 183)
print("ref", float(ref.out[at]), "W", float(ref.v_weight[at]))
for name in ("gluon/split-k", "triton/split-k"):
    for splits in (1, 3972):
        run = run_impl(registry.get(name), inputs, {"num_splits": splits})
        c = compare(p, run.out, run.lse, ref)
        print(name, splits, "got", float(run.out[at]), "vs ref:", c.summary()[:160])
