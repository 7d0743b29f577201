"""Imported by ``ahead-second``'s worker (tests/ahead_backends.py), and by the harness as it checks
the backends named: records when, and the importing process's parent."""

import os
import time

with open(os.environ["DECODE_BENCH_AHEAD_MARK"], "a") as f:
    f.write(f"{os.getppid()} {time.time()}\n")
