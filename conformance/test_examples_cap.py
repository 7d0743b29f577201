"""The ci profile's cap on a slow CPU mode's drawn examples (``cpu_mode_examples`` in
conftest.py) reaches hypothesis: a case of a backend that declares ``cpu_limit.max_examples``
draws that many, a case of one that does not the profile's count. (Hypothesis reads a test's
settings when it is called: were that to change, the cap would stop applying and this fails.)"""

import collections
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.strategies import ci_limit, profile_name
from impls import registry

DRAWN = collections.Counter()
CASES = [registry.get("numba/dense"), registry.get("triton/dense")]


@pytest.mark.parametrize("impl", CASES, ids=[i.name for i in CASES])
@given(x=st.integers())
def test_draws(impl, x):
    DRAWN[impl.name] += 1


def test_a_slow_cpu_mode_draws_its_declared_count_and_the_others_the_profiles():
    if not DRAWN:
        pytest.skip("run with test_draws (the same file, before this test)")
    profile = settings.default.max_examples
    for impl in CASES:
        limit = ci_limit(impl)
        capped = limit is not None and limit.max_examples is not None \
            and not os.environ.get("DECODE_BENCH_EXAMPLES")
        assert DRAWN[impl.name] == (min(profile, limit.max_examples) if capped else profile), impl.name
    if profile_name() == "ci" and CASES[0].availability() is None:  # the cap was tried here
        assert ci_limit(CASES[0]).max_examples < profile
