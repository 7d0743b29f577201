"""Saved cases (``run --save-cases DIR``) and their replay (``python -m harness replay DIR``).

One folder per problem, ``DIR/<problem label>-<hash of its spec>/``, holding folders of ``.npy``
arrays and a ``meta.json``:

* ``inputs/``, written once per problem whatever the number of implementations: ``q [B, Hq,
  D]``, and of the logical cache only the rows each sequence owns, ``k, v [sum(seq_lens), Hkv,
  D]`` (sequence b's rows after those of 0..b-1), in the input dtype (bfloat16 as its raw bits,
  ``int16``), ``seq_lens``; ``meta.json``: format, problem spec, seed, dtype;
* ``<backend>_<variant>/`` per implementation: ``out`` (raw bits as above), ``lse`` (float32,
  natural log; absent when the kernel declared none); ``meta.json``: format, row name, the run's
  status and error figures, the LSE declaration the tolerance depends on.

Arrays are plain ``.npy`` (a header, then the bytes as the array holds them: random values do not
compress, and a zip's CRC and copies cost more than the disk), each folder written under a
temporary name and renamed once complete, so a stopped run leaves whole folders or none.
``replay`` recomputes the float64 reference from ``inputs/`` and judges each saved output with
the suite's tolerance rule, without the implementations.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import torch

from specs.inputs import TORCH_DTYPES, DecodeInputs
from specs.problem import DecodeProblem, ProblemError
from specs.reference import reference
from specs.tolerance import compare

FORMAT = "decode-bench-cases/2"
INPUTS = "inputs"  # the problem's folder of inputs; each implementation's has its row name
META = "meta.json"


def _file_name(text: str) -> str:
    """``text`` with every run of characters a file name should not hold as one '_'."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)


def problem_folder(root: Path, problem: DecodeProblem) -> Path:
    spec = json.dumps(problem.to_dict(), sort_keys=True)
    label = _file_name(problem.label())[:80]
    return root / f"{label}-{hashlib.sha1(spec.encode()).hexdigest()[:10]}"


def _bits(t: torch.Tensor) -> torch.Tensor:
    """The tensor as numpy can hold it: bfloat16 as its raw int16 bits (no copy)."""
    t = t.detach().contiguous()
    return t.view(torch.int16) if t.dtype == torch.bfloat16 else t


STAGING_BYTES = 64 << 20  # the pinned host buffer device arrays go through on their way to disk


@functools.cache
def _staging() -> torch.Tensor:
    return torch.empty(STAGING_BYTES, dtype=torch.uint8, pin_memory=True)


def _save_array(path: Path, t: torch.Tensor) -> int:
    """``t`` as a .npy file: numpy's header, then its bytes. A device tensor is copied through a
    pinned buffer chunk by chunk: a pageable copy of a whole cache was slower than the disk
    (results/nvidia-h100/2026-11-23-outside-kernels/README.md)."""
    dtype = torch.empty(0, dtype=t.dtype).numpy().dtype
    header = {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": tuple(t.shape)}
    data = t.reshape(-1).view(torch.uint8)
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(f, header)
        if data.device.type == "cpu":
            f.write(data.numpy().data)
        else:
            staging = _staging()
            for start in range(0, data.numel(), STAGING_BYTES):
                chunk = data[start:start + STAGING_BYTES]
                staging[:chunk.numel()].copy_(chunk)  # synchronous: the buffer is reused next
                f.write(staging[:chunk.numel()].numpy().data)
        return f.tell()


def _from_bits(a: np.ndarray, dtype: str) -> torch.Tensor:
    t = torch.from_numpy(np.ascontiguousarray(a))
    return t.view(torch.bfloat16) if dtype == "bfloat16" else t


def _write(folder: Path, arrays: dict[str, torch.Tensor], meta: dict) -> int:
    """``arrays`` (one .npy each) and ``meta.json`` as one folder, written under a temporary
    name and renamed into place once complete (an older one of the same name replaced); returns
    the bytes written."""
    tmp = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir(parents=True)
        written = 0
        for name, array in arrays.items():
            written += _save_array(tmp / f"{name}.npy", array)
        (tmp / META).write_text(json.dumps({"format": FORMAT, **meta}))
        if folder.exists():
            shutil.rmtree(folder)
        os.replace(tmp, folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # interrupted: no half-written folder anywhere
    return written


def _meta(folder: Path) -> dict:
    """The ``meta.json`` of a saved folder, or a ProblemError saying why it cannot be read."""
    try:
        meta = json.loads((folder / META).read_text())
    except (OSError, ValueError) as e:
        raise ProblemError(f"{folder}: no readable {META} ({e}); re-run with --save-cases") from None
    if meta.get("format") != FORMAT:
        raise ProblemError(f"{folder}: format {meta.get('format')!r}, this harness reads {FORMAT!r}; "
                           "re-run with --save-cases to replay it")
    return meta


def save(root: Path, row_name: str, inputs: DecodeInputs, out: torch.Tensor,
         lse: torch.Tensor | None, run: dict) -> int:
    """Save one implementation's result (and the problem's inputs, once); returns bytes written."""
    p = inputs.problem
    folder = problem_folder(root, p)
    folder.mkdir(parents=True, exist_ok=True)
    written = 0
    # the device too: CPU and CUDA generators draw other values from one seed
    meta = {"spec": p.to_dict(), "seed": inputs.seed, "dtype": p.dtype, "device": inputs.device.type}
    try:
        have = _meta(folder / INPUTS) if (folder / INPUTS).exists() else None
    except ProblemError:
        have = None  # an older or broken folder: replaced
    if not have or {k: have.get(k) for k in meta} != meta:
        for stale in folder.iterdir():  # other implementations' results on the old inputs
            if stale.is_dir() and stale.name != INPUTS:
                shutil.rmtree(stale, ignore_errors=True)
        owned = [(inputs.k_logical[b, :n], inputs.v_logical[b, :n]) for b, n in enumerate(p.seq_lens)]
        written += _write(folder / INPUTS, {
            "q": _bits(inputs.q), "k": _bits(torch.cat([k for k, _ in owned])),
            "v": _bits(torch.cat([v for _, v in owned])),
            "seq_lens": torch.tensor(p.seq_lens, dtype=torch.int64)}, meta)
    arrays = {"out": _bits(out)}
    if lse is not None:
        arrays["lse"] = lse.detach().float()
    name = _file_name(row_name.replace("/", "_"))
    written += _write(folder / name, arrays, {"impl": row_name, "seed": inputs.seed, **run})
    return written


def load_inputs(folder: Path, device: torch.device) -> DecodeInputs:
    """A saved problem's inputs as the reference reads them (the logical cache; rows past each
    length are zero: the reference never reads them)."""
    meta = _meta(folder / INPUTS)
    p = DecodeProblem.from_dict(meta["spec"], where=str(folder / INPUTS))
    q, k, v = (_from_bits(np.load(folder / INPUTS / f"{n}.npy"), p.dtype).to(device) for n in ("q", "k", "v"))
    k_logical = torch.zeros((p.batch, p.max_seq_len, p.num_kv_heads, p.head_dim),
                            dtype=TORCH_DTYPES[p.dtype], device=device)
    v_logical = torch.zeros_like(k_logical)
    start = 0
    for b, n in enumerate(p.seq_lens):
        k_logical[b, :n], v_logical[b, :n] = k[start:start + n], v[start:start + n]
        start += n
    seq_lens = torch.tensor(p.seq_lens, dtype=torch.int32, device=device)
    return DecodeInputs(p, q, k_logical, v_logical, seq_lens, None, k_logical, v_logical, meta["seed"])


def replay(root: Path) -> tuple[list[dict], int]:
    """Re-judge every saved output under ``root`` against a fresh reference: one dict per
    output (problem, impl, the run's status, the replay's, error figures), and how many
    disagree with the run."""
    if not root.is_dir():
        raise ProblemError(f"{root}: not a folder of saved cases (run --save-cases {root})")
    old = sorted(root.glob("*.npz")) + sorted(root.glob("*/*.npz"))
    if old:
        raise ProblemError(f"{old[0]}: a case file of an older format (.npz, before {FORMAT}); "
                           "re-run with --save-cases to replay it")
    folders = sorted(f for f in root.iterdir() if (f / INPUTS).is_dir())
    if not folders:
        raise ProblemError(f"{root}: no saved cases (no */{INPUTS}/)")
    device = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    found, disagree = [], 0
    for folder in folders:
        inputs = load_inputs(folder, device)
        ref = reference(inputs)
        p = inputs.problem
        for path in sorted(f for f in folder.iterdir() if f.is_dir() and not f.name.startswith(".")):
            if path.name == INPUTS:
                continue
            meta = _meta(path)
            if meta.get("seed") != inputs.seed:
                raise ProblemError(f"{path}: saved with seed {meta.get('seed')}, its inputs with seed "
                                   f"{inputs.seed}: not one run's case; save again into an empty folder")
            out = _from_bits(np.load(path / "out.npy"), p.dtype).to(device)
            lse = torch.from_numpy(np.load(path / "lse.npy")).to(device) if (path / "lse.npy").exists() else None
            c = compare(p, out, lse, ref, lse_rounded_sum=meta.get("lse_rounded_sum", False))
            status = "PASS" if c.passed else "FAIL"
            disagree += status != meta.get("status")
            found.append({"problem": p.label(), "impl": meta["impl"], "run": meta.get("status"),
                          "replay": status, "out_err_ratio": c.out_err_ratio,
                          "lse_err_ratio": c.lse_err_ratio})
        del inputs, ref
    return found, disagree
