"""A backend that loses its Ray node once, loaded through DECODE_BENCH_PLUGINS by test_ray.py: its
first launch inside a Ray shard kills the process running the shard (its worker's parent) with
SIGKILL, as a node going down would; every other call computes what ``tests.plugin_backend``
does. The file named by DECODE_BENCH_LOSE_NODE_ONCE records that the node was lost."""

import os
import signal
import time
from pathlib import Path

from impls.registry import Backend, Capabilities, Impl
from tests import plugin_backend

BACKEND = Backend(name="lost-node", summary="kills its Ray worker once", requires=("torch",),
                  cpu_mode="torch")


def prepare(inputs, out, lse):
    mark = Path(os.environ["DECODE_BENCH_LOSE_NODE_ONCE"])
    if not mark.exists():
        mark.write_text(f"killed process {os.getppid()}\n")
        os.kill(os.getppid(), signal.SIGKILL)
        time.sleep(60)  # ended within a second by the harness worker's parent watch
    return plugin_backend.prepare_one_pass(inputs, out, lse)


IMPLS = [Impl(BACKEND, "one-pass", "tests.ray_lost_node", Capabilities(frozenset({"dense"})))]
