"""Hypothesis profiles and the implementation parametrization of the conformance suite.

Profiles (``DECODE_BENCH_PROFILE``, default: gpu when a CUDA GPU is present, else ci):
  ci   2-core CPU, kernels in CPU interpreters: few, small examples, derandomized so CI is stable;
  gpu  many and larger examples, random each run (the database replays past failures first).
``deadline=None``: kernels compile on first use. ``DECODE_BENCH_EXAMPLES=N`` overrides the
number of drawn examples per test (the pinned ones always run); without it, a backend whose CPU
mode declares ``cpu_limit.max_examples`` draws at most that many in the ci profile.
"""

import os

import impls  # noqa: F401  (first: picks the CPU interpreters before any DSL import)
import pytest
from hypothesis import HealthCheck, settings

from conformance.strategies import ci_limit, profile_name
from impls.registry import Impl

# report_multiple_bugs=False: a failure surfaces as its own exception (ConformanceFailure), which
# is what the negative controls' strict xfail expects; the first bug found is the one to fix.
COMMON = dict(deadline=None, print_blob=True, report_multiple_bugs=False,
              suppress_health_check=[HealthCheck.too_slow])
# ci: 10 drawn examples a test (after the pinned ones): the suite's properties x every backend's
# CPU mode (interpreters, simulators) keep a 2-core CI within its time
settings.register_profile("ci", max_examples=10, derandomize=True, **COMMON)
settings.register_profile("gpu", max_examples=20, **COMMON)
settings.load_profile(profile_name())
if os.environ.get("DECODE_BENCH_EXAMPLES"):  # e.g. a quick smoke pass: DECODE_BENCH_EXAMPLES=5
    settings.register_profile("override", parent=settings.default,
                              max_examples=int(os.environ["DECODE_BENCH_EXAMPLES"]))
    settings.load_profile("override")


@pytest.fixture(autouse=True)
def cpu_mode_examples(request):
    """A backend whose CPU mode declares ``cpu_limit.max_examples`` draws at most that many
    examples a property in the ci profile (``DECODE_BENCH_EXAMPLES``, where set, decides
    instead): hypothesis reads a test's settings when it is called, so they are narrowed for
    this case and put back after it."""
    impl = getattr(request.node, "callspec", None) and request.node.callspec.params.get("impl")
    limit = ci_limit(impl) if isinstance(impl, Impl) else None
    test = getattr(request.function, "__func__", request.function)  # a method's function
    own = getattr(test, "_hypothesis_internal_use_settings", None)
    if limit is None or limit.max_examples is None or own is None \
            or os.environ.get("DECODE_BENCH_EXAMPLES"):
        yield
        return
    test._hypothesis_internal_use_settings = settings(
        own, max_examples=min(own.max_examples, limit.max_examples))
    try:
        yield
    finally:
        test._hypothesis_internal_use_settings = own
