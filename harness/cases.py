"""Saved cases (``run --save-cases DIR``) and their replay (``python -m harness replay DIR``).

One folder per problem, ``DIR/<problem label>-<hash of its spec>/``, holding folders of ``.npy``
arrays and a ``meta.json``:

* ``inputs/``, written once per problem whatever the number of implementations: ``q [B, Hq,
  D]``, and of the logical cache only the rows each sequence owns, ``k, v [sum(seq_lens), Hkv,
  D]`` (sequence b's rows after those of 0..b-1), in the input dtype (bfloat16 as its raw bits,
  ``int16``; an fp8 cache in its storage dtype as ``uint8`` bits, with ``k_scale``/``v_scale``),
  ``seq_lens``; ``meta.json``: format, problem spec, seed, dtype;
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
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import torch

from specs.inputs import DecodeInputs
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


# dtypes numpy has no type for, saved as their raw bits
RAW_BITS = {"bfloat16": (torch.int16, np.int16), "float8_e4m3fn": (torch.uint8, np.uint8),
            "float8_e5m2": (torch.uint8, np.uint8)}


def _bits(t: torch.Tensor) -> torch.Tensor:
    """The tensor as numpy can hold it: bfloat16 and fp8 as their raw bits (no copy)."""
    t = t.detach().contiguous()
    raw = RAW_BITS.get(str(t.dtype).removeprefix("torch."))
    return t.view(raw[0]) if raw else t


STAGING_BYTES = 64 << 20  # the pinned host buffer device arrays go through on their way to disk
ROWS_PER_PIECE = 1 << 24  # values of K or V gathered at once while saving (32 MB in bf16)


@functools.cache
def _staging() -> torch.Tensor:
    return torch.empty(STAGING_BYTES, dtype=torch.uint8, pin_memory=True)


@dataclass
class Rows:
    """An array written piece by piece (each piece made when it is written): ``shape`` in all,
    ``parts()`` yielding tensors whose rows follow one another."""

    shape: tuple[int, ...]
    dtype: torch.dtype
    parts: Callable[[], Iterator[torch.Tensor]]


def _save_array(path: Path, t: torch.Tensor | Rows) -> int:
    """``t`` as a .npy file: numpy's header, then its bytes. A device tensor is copied through a
    pinned buffer chunk by chunk: a pageable copy of a whole cache was slower than the disk
    (results/nvidia-h100/2026-11-23-outside-kernels/README.md)."""
    rows = t if isinstance(t, Rows) else Rows(tuple(t.shape), t.dtype, lambda: iter([t]))
    dtype = _bits(torch.empty(0, dtype=rows.dtype)).numpy().dtype
    header = {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": rows.shape}
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(f, header)
        for part in rows.parts():
            data = _bits(part).reshape(-1).view(torch.uint8)
            if data.device.type == "cpu":
                f.write(data.numpy().data)
                continue
            staging = _staging()
            for start in range(0, data.numel(), STAGING_BYTES):
                chunk = data[start:start + STAGING_BYTES]
                staging[:chunk.numel()].copy_(chunk)  # synchronous: the buffer is reused next
                f.write(staging[:chunk.numel()].numpy().data)
        return f.tell()


def _from_bits(a: np.ndarray, dtype: str) -> torch.Tensor:
    t = torch.from_numpy(np.ascontiguousarray(a))
    return t.view(getattr(torch, dtype)) if dtype in RAW_BITS else t


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


class CaseRefused(ProblemError):
    """A saved case that is not what this harness wrote: named file, broken rule."""


INPUTS_META = ("format", "spec", "seed", "dtype", "device")  # fields each meta.json must hold
OUTPUT_META = ("format", "impl", "seed", "status")


def _meta(folder: Path, required: tuple[str, ...] = ()) -> dict:
    """The ``meta.json`` of a saved folder, or a CaseRefused saying why it cannot be used."""
    path = folder / META
    try:
        meta = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise CaseRefused(f"{path}: no readable {META} ({e}); re-run with --save-cases") from None
    if not isinstance(meta, dict):
        raise CaseRefused(f"{path}: must hold a JSON object")
    if meta.get("format") != FORMAT:
        raise CaseRefused(f"{path}: format {meta.get('format')!r}, this harness reads {FORMAT!r}; "
                          "re-run with --save-cases to replay it")
    missing = [k for k in required if k not in meta]
    if missing:
        raise CaseRefused(f"{path}: missing field(s) {missing} (a saved case's {META} holds {list(required)})")
    return meta


def _load_array(path: Path, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """A saved ``.npy`` that holds exactly ``shape`` of ``dtype`` (bfloat16, fp8: raw bits),
    C order, its header's size to the byte, or a CaseRefused naming the file and the rule it
    breaks. The header is read first and the data as raw numbers: nothing is unpickled."""
    want = np.dtype(RAW_BITS[dtype][1] if dtype in RAW_BITS else dtype)
    try:
        with open(path, "rb") as f:
            version = np.lib.format.read_magic(f)
            read = {(1, 0): np.lib.format.read_array_header_1_0,
                    (2, 0): np.lib.format.read_array_header_2_0}.get(version)
            if read is None:
                raise ValueError(f"npy format version {version}")
            got_shape, fortran, got = read(f)
            offset = f.tell()
    except FileNotFoundError:
        raise CaseRefused(f"{path}: missing") from None
    except (OSError, ValueError, EOFError, SyntaxError) as e:  # not an .npy (a zip, text, ...)
        raise CaseRefused(f"{path}: not a plain .npy array ({type(e).__name__}: {e})") from None
    if got.hasobject:
        raise CaseRefused(f"{path}: an object array (pickled Python objects): cases hold numbers only")
    if fortran:
        raise CaseRefused(f"{path}: Fortran order: cases are written in C order")
    if got != want or tuple(got_shape) != tuple(shape):
        raise CaseRefused(f"{path}: holds {got} {tuple(got_shape)}; its meta.json says "
                          f"{want} {tuple(shape)}")
    size = path.stat().st_size
    expected = offset + int(np.prod(shape, dtype=np.int64)) * want.itemsize
    if size != expected:
        raise CaseRefused(f"{path}: {size} bytes, its header says {expected} "
                          f"({'truncated' if size < expected else 'trailing bytes'})")
    return np.fromfile(path, dtype=want, offset=offset).reshape(shape)


def _owned_rows(inputs: DecodeInputs, which: int) -> Rows:
    """K (``which`` 0) or V (1) rows each sequence owns, sequence after sequence, read through
    the layout a chunk at a time (a paged gather of a whole long sequence would double it)."""
    p = inputs.problem
    step = max(1, ROWS_PER_PIECE // (p.num_kv_heads * p.head_dim))

    def parts():
        for b, n in enumerate(p.seq_lens):
            for start in range(0, n, step):
                yield inputs.rows(b, start, min(n, start + step))[which]

    return Rows((p.total_tokens, p.num_kv_heads, p.head_dim), inputs.k.dtype, parts)


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
        scales = {"k_scale": inputs.k_scale, "v_scale": inputs.v_scale} if p.cache.quantised else {}
        written += _write(folder / INPUTS, {
            "q": inputs.q, "k": _owned_rows(inputs, 0), "v": _owned_rows(inputs, 1),
            "seq_lens": torch.tensor(p.seq_lens, dtype=torch.int64), **scales}, meta)
    arrays = {"out": out}
    if lse is not None:
        arrays["lse"] = lse.detach().float()
    name = _file_name(row_name.replace("/", "_"))
    written += _write(folder / name, arrays, {"impl": row_name, "seed": inputs.seed, **run})
    return written


def load_inputs(folder: Path, device: torch.device) -> DecodeInputs:
    """A saved problem's inputs as the reference reads them: each sequence's rows one after the
    other (``DecodeInputs.starts``), never batch x longest. Every array is checked against the
    problem in meta.json first (CaseRefused names the file and the rule)."""
    meta = _meta(folder / INPUTS, INPUTS_META)
    try:
        p = DecodeProblem.from_dict(meta["spec"], where=str(folder / INPUTS / META))
    except ProblemError as e:
        raise CaseRefused(str(e)) from None
    if meta["dtype"] != p.dtype:
        raise CaseRefused(f"{folder / INPUTS / META}: dtype {meta['dtype']!r} differs from its "
                          f"spec's {p.dtype!r}")
    kv = (p.total_tokens, p.num_kv_heads, p.head_dim)
    kv_dtype = p.cache.storage_dtype(p.query)
    arrays = {name: _load_array(folder / INPUTS / f"{name}.npy", shape, dtype)
              for name, shape, dtype in (("q", (p.q_rows, p.num_q_heads, p.head_dim), p.dtype),
                                         ("k", kv, kv_dtype), ("v", kv, kv_dtype))}
    scales = {}
    if p.cache.quantised:
        n = p.cache.scales_per_tensor(p.query)
        scales = {name: torch.from_numpy(_load_array(folder / INPUTS / f"{name}.npy", (n,),
                                                     "float32")).to(device)
                  for name in ("k_scale", "v_scale")}
        for name, t in scales.items():
            if not bool((torch.isfinite(t) & (t > 0)).all()):
                raise CaseRefused(f"{folder / INPUTS / name}.npy: a scale that is not finite and > 0")
    lens = _load_array(folder / INPUTS / "seq_lens.npy", (p.batch,), "int64")
    if lens.tolist() != list(p.seq_lens):
        raise CaseRefused(f"{folder / INPUTS / 'seq_lens.npy'}: differs from the spec's seq_lens")
    q = _from_bits(arrays["q"], p.dtype).to(device)
    k, v = (_from_bits(arrays[n], kv_dtype).to(device) for n in ("k", "v"))
    starts = [0]
    for n in p.seq_lens[:-1]:
        starts.append(starts[-1] + n)
    seq_lens = torch.tensor(p.seq_lens, dtype=torch.int32, device=device)
    return DecodeInputs(p, q, k, v, seq_lens, None, meta["seed"], starts=starts, **scales)


def _replay_output(path: Path, inputs: DecodeInputs, ref) -> dict:
    """One saved output judged again; CaseRefused when it is not a case of these inputs."""
    p = inputs.problem
    meta = _meta(path, OUTPUT_META)
    if meta["seed"] != inputs.seed:
        raise CaseRefused(f"{path / META}: saved with seed {meta['seed']}, its inputs with seed "
                          f"{inputs.seed}: not one run's case; save again into an empty folder")
    device = inputs.device
    out = _from_bits(_load_array(path / "out.npy", (p.q_rows, p.num_q_heads, p.head_dim), p.dtype),
                     p.dtype).to(device)
    lse = None
    if (path / "lse.npy").exists() or meta.get("lse_err_ratio") is not None:  # saved: must be there
        lse = torch.from_numpy(_load_array(path / "lse.npy", (p.q_rows, p.num_q_heads), "float32")).to(device)
    c = compare(p, out, lse, ref, lse_rounded_sum=bool(meta.get("lse_rounded_sum", False)))
    return {"problem": p.label(), "impl": meta["impl"], "run": meta["status"],
            "replay": "PASS" if c.passed else "FAIL", "out_err_ratio": c.out_err_ratio,
            "lse_err_ratio": c.lse_err_ratio}


def replay(root: Path) -> tuple[list[dict], int, list[str]]:
    """Re-judge every saved output under ``root`` against a fresh reference: one dict per
    output (problem, impl, the run's status, the replay's, error figures), how many disagree
    with the run, and why each refused case (corrupt, tampered, of another run) was refused;
    a refused case costs only itself."""
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
    found, disagree, refused = [], 0, []
    for folder in folders:
        try:
            inputs = load_inputs(folder, device)
        except CaseRefused as e:
            refused.append(str(e))
            continue
        ref = reference(inputs)
        for path in sorted(f for f in folder.iterdir() if f.is_dir() and not f.name.startswith(".")):
            if path.name == INPUTS:
                continue
            try:
                row = _replay_output(path, inputs, ref)
            except CaseRefused as e:
                refused.append(str(e))
                continue
            disagree += row["replay"] != row["run"]
            found.append(row)
        del inputs, ref
    return found, disagree, refused
