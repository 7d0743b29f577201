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

# the check reads what test_draws counted in this process: run after the parallel tests, in one
# process (scripts/test.sh)
pytestmark = pytest.mark.exclusive
DRAWN = collections.Counter()
KERNELS = [i for i in registry.all_impls() if i.module is not None]
# a backend that declares the cap, and one that does not and runs here
CAPPED = next((i for i in KERNELS if i.backend.cpu_limit and i.backend.cpu_limit.max_examples), None)
FREE = next((i for i in KERNELS if i.backend.cpu_limit is None and i.availability() is None), None)
CASES = [i for i in (CAPPED, FREE) if i is not None]


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
    if profile_name() == "ci" and CAPPED is not None and CAPPED.availability() is None:
        assert ci_limit(CAPPED).max_examples < profile  # the cap was tried here
