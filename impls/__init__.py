"""Implementations of decode attention, one folder per DSL or vendor library.

Importing this package first decides how DSLs that can run without a GPU should run: with no
CUDA GPU, Triton runs kernels in its interpreter (``TRITON_INTERPRET=1``) and Numba runs CUDA
kernels in its simulator (``NUMBA_ENABLE_CUDASIM=1``). Both read the variable once, at their own
import, so it is set here, before any backend module imports them. A value the user set wins
(``TRITON_INTERPRET=0`` keeps Triton compiling, e.g. to build sm_90 code on a CPU machine).
"""

import os
import sys

import torch

if not torch.cuda.is_available():
    for var, dsl in (("TRITON_INTERPRET", "triton"), ("NUMBA_ENABLE_CUDASIM", "numba")):
        if dsl in sys.modules and var not in os.environ:
            raise RuntimeError(f"{dsl} was imported before impls on a machine without a GPU; "
                               f"import impls first or set {var}=1")
        os.environ.setdefault(var, "1")
