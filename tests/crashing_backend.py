"""A backend whose kernel kills its process, loaded through DECODE_BENCH_PLUGINS by
test_harness.py to show that one backend's crash costs no other backend's results."""

import os

from impls.registry import Backend, Capabilities, Impl, Launch

BACKEND = Backend(name="crashy", summary="aborts its process on launch", requires=("torch",),
                  cpu_mode="cpu")


def prepare(inputs, out, lse):
    """Kills the process on sequences of 9 tokens; computes nothing (a FAIL) otherwise."""
    if inputs.problem.seq_lens[0] == 9:
        return Launch(lambda: os.abort())
    return Launch(lambda: None)


IMPLS = [Impl(BACKEND, "one-pass", "tests.crashing_backend", Capabilities(frozenset({"dense"})))]
