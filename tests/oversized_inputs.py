"""A plugin with no backend of its own: loaded through DECODE_BENCH_PLUGINS by test_harness.py,
it makes the harness's input draw run out of GPU memory on a 3-token problem, as a problem too
large for the machine does (the 256-sequence batch on an 80 GB H100)."""

import torch

from harness import runner

_make_inputs = runner.make_inputs


def _out_of_memory(problem, seed, device):
    if problem.seq_lens == (3,):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 41.57 GiB.")
    return _make_inputs(problem, seed, device)


runner.make_inputs = _out_of_memory
IMPLS = []
