"""What the CPU-side sm_90 checks share (no GPU needed): the NVIDIA binaries Triton ships, and
nvcc's cubin of a CUDA source as NVRTC is given it."""

import os
import subprocess
from pathlib import Path


def triton_tool(name: str) -> str:
    """One of the NVIDIA binaries Triton ships (ptxas, nvdisasm, cuobjdump): the versions its
    compiles use."""
    import triton  # (only here: nvcc_cubin's users need no Triton)

    return os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", name)


def nvcc_cubin(source: str, defines: dict, cubin: Path) -> subprocess.CompletedProcess:
    """``source`` (a whole CUDA file's text, as ``_build.source`` composes it for NVRTC) compiled
    by nvcc for sm_90 with ``-D`` ``defines`` into ``cubin``, fast math as NVRTC builds it; ptxas's
    report (registers, spills, stack frames) in the result's stderr."""
    code = cubin.with_suffix(".cu")
    code.write_text(source)
    return subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", "-use_fast_math", "-cubin",
                           "-Xptxas", "-v", "-o", str(cubin),
                           *(f"-D{k}={v}" for k, v in defines.items()), str(code)],
                          capture_output=True, text=True, timeout=300)
