"""How this backend imports numba-cuda, and the switches between the GPU and the CUDA simulator.

numpy compatibility: numba-cuda 0.30 registers an overload for ``numpy.row_stack`` at import;
numpy 2.5 removed that function (a plain alias of ``numpy.vstack`` since numpy 1.x, deprecated
in 2.0), so ``import numba.cuda`` fails with "module 'numpy' has no attribute 'row_stack'".
``ensure_numpy_aliases()`` restores the alias before numba is imported. It only adds a name
numpy no longer has, with the meaning it used to have; nothing else in numpy changes.
(tests/test_numba_compat.py checks the import with the attribute removed.)

Simulator: with ``NUMBA_ENABLE_CUDASIM=1`` (``impls/__init__.py`` sets it when there is no GPU)
``numba.cuda`` runs kernels in Python threads on numpy arrays. It lacks warp shuffles, LLVM
intrinsics and the GPU-only ``jit`` options; ``kernel_function`` drops those options there,
``_kernels.py`` swaps the shuffle for a shared-memory exchange and the fp16 intrinsic for integer
arithmetic (documented there), and ``device_function`` leaves
device functions as plain Python functions: the simulator's device-function wrapper only swaps
``numba.cuda`` for its fake module in the function's globals, which the kernel, defined in the
same module, has already done, and it costs a lock and a context manager per call (per element
here). One simulator defect is worked around (only in the simulator): ``cuda.shared.array``
is made race-free (``_lock_simulator_shared_arrays``).
"""

from __future__ import annotations

import sys
import threading

import numpy


def ensure_numpy_aliases() -> None:
    if not hasattr(numpy, "row_stack"):
        numpy.row_stack = numpy.vstack


ensure_numpy_aliases()

from numba import cuda  # noqa: E402  (after the alias)
from numba.cuda.core import config as _config  # noqa: E402

SIMULATOR: bool = bool(_config.ENABLE_CUDASIM)

# No fastmath: numba-cuda's fastmath also flushes subnormals to zero (ftz), which the exact
# fp16/bf16 conversions in _kernels.py rely on not happening; and the online softmax compares
# against -inf. The kernels are bound by memory, not by exp2/division.


def device_function(fn):
    """A ``@cuda.jit`` device function, inlined into its caller on the GPU (so the per-thread
    arrays it touches stay in registers); in the simulator the plain function (see above: it
    must live in the module of the kernel that calls it)."""
    if SIMULATOR:
        return fn
    return cuda.jit(device=True, forceinline=True)(fn)


def kernel_function(threads: int, min_blocks: int = 0):
    """``@cuda.jit`` for a kernel launched with ``threads`` threads per block (and, if
    ``min_blocks``, registers capped so that many blocks fit on an SM)."""
    def decorate(fn):
        if SIMULATOR:
            return cuda.jit(fn)
        return cuda.jit(fn, launch_bounds=(threads, min_blocks) if min_blocks else threads)
    return decorate


def _lock_simulator_shared_arrays() -> None:
    """numba-cuda 0.30's simulator creates a block's ``cuda.shared.array`` at the first call
    from each call site (get, then set, on a dict, with no lock), so two simulated threads that
    reach a site together can each get an array of their own and never see each other's
    writes (seen here as a merge reading unwritten memory: "math domain error" in log2).
    The replacement allocates each site's array once per launch (the simulator keeps one
    shared-memory object per launch and runs its blocks one after another) under a lock."""
    from numba.core.types import Type
    from numba.cuda.simulator import kernelapi
    from numba.np.numpy_support import as_dtype

    shared = kernelapi.FakeCUDAShared
    if getattr(shared, "_site_lock", None) is not None:
        return
    dynamic_or_aligned = shared.array
    lock = threading.Lock()

    def array(self, shape, dtype, alignment=None):
        if shape == 0 or alignment is not None:  # not per call site: the simulator's own path
            return dynamic_or_aligned(self, shape, dtype, alignment)
        caller = sys._getframe(1)
        site = (caller.f_code.co_filename, caller.f_lineno)
        with lock:
            arrays = self.__dict__.setdefault("_site_arrays", {})
            if site not in arrays:
                arrays[site] = numpy.empty(shape, as_dtype(dtype) if isinstance(dtype, Type)
                                           else numpy.dtype(dtype))
            return arrays[site]

    shared.array = array
    shared._site_lock = lock


if SIMULATOR:
    _lock_simulator_shared_arrays()


def probe() -> None:
    """Backend probe: the import above worked; on a GPU, numba sees one too."""
    from impls.registry import Unavailable

    if not SIMULATOR and not cuda.is_available():
        raise Unavailable("numba-cuda finds no usable CUDA driver/GPU")
