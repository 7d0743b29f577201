"""Two backends for the test of workers started with the run (tests/test_harness.py), loaded through
DECODE_BENCH_PLUGINS: ``ahead-first`` takes DECODE_BENCH_AHEAD_SLEEP seconds per call to prepare,
then computes what ``tests.plugin_backend`` does; ``ahead-second`` requires the module
``tests.ahead_marker``, whose import appends the importing process's parent and the time to the file
named by DECODE_BENCH_AHEAD_MARK (where ``ahead-first`` writes when each prepare ends)."""

import os
import time

from impls.registry import Backend, Capabilities, Impl
from tests import plugin_backend

FIRST = Backend(name="ahead-first", summary="slow to prepare", requires=("torch",), cpu_mode="torch")
SECOND = Backend(name="ahead-second", summary="records its import", requires=("tests.ahead_marker",),
                 cpu_mode="torch")


def prepare_slow(inputs, out, lse):
    time.sleep(float(os.environ.get("DECODE_BENCH_AHEAD_SLEEP", "0")))
    with open(os.environ["DECODE_BENCH_AHEAD_MARK"], "a") as f:
        f.write(f"first {time.time()}\n")
    return plugin_backend.prepare_one_pass(inputs, out, lse)


IMPLS = [Impl(FIRST, "one-pass", "tests.ahead_backends", Capabilities(frozenset({"dense"})),
              entry="prepare_slow"),
         Impl(SECOND, "one-pass", "tests.plugin_backend", Capabilities(frozenset({"dense"})),
              entry="prepare_one_pass")]
