"""The decode-attention problem, defined once: axes, layouts, inputs, the float64 oracle,
the tolerance rule and the named workloads. No kernel, no timing."""

from specs.inputs import DecodeInputs, build_inputs, make_inputs, make_logical, validate_inputs
from specs.problem import DTYPES, LAYOUTS, DecodeProblem, ProblemError
from specs.reference import Reference, reference
from specs.tolerance import Comparison, compare

__all__ = [
    "DTYPES", "LAYOUTS", "Comparison", "DecodeInputs", "DecodeProblem", "ProblemError",
    "Reference", "build_inputs", "compare", "make_inputs", "make_logical", "reference",
    "validate_inputs",
]
