"""The PTX that widens fp8 to bf16 (``impls.common.fp8_to_bf16_ptx``, used by the Triton, Gluon
and CuPy kernels on a GPU), run on the CPU by a small interpreter of the instructions it uses,
against torch's conversion: every finite byte of both formats, in every lane of the word."""

import re

import pytest
import torch

from impls.common import fp8_to_bf16_ptx

MASK32 = 0xFFFFFFFF


def _prmt(a: int, b: int, selector: int) -> int:
    """PTX prmt.b32 (default mode): result byte i is byte (nibble i & 7) of {b, a}, or that
    byte's sign replicated when the nibble's bit 3 is set."""
    source = (b << 32 | a).to_bytes(8, "little")
    out = 0
    for i in range(4):
        nibble = selector >> (4 * i) & 0xF
        byte = source[nibble & 7]
        if nibble & 8:
            byte = 0xFF if byte & 0x80 else 0
        out |= byte << (8 * i)
    return out


def _bf16x2_fma(a: int, b: int, c: int) -> int:
    """fma.rn.bf16x2 on two lanes, in float64 then rounded to bf16 (exact here: the products
    are powers of two times bf16 values, in range)."""
    def lanes(x):
        return torch.tensor([x & 0xFFFF, x >> 16], dtype=torch.int32).to(torch.int16) \
            .view(torch.bfloat16).double()
    r = (lanes(a) * lanes(b) + lanes(c)).to(torch.bfloat16).view(torch.int16).to(torch.int32)
    lo, hi = (int(v) & 0xFFFF for v in r)
    return hi << 16 | lo


def _run(ptx: str, word: int) -> tuple[int, int]:
    """Execute the widening's PTX on one input word: its two output registers."""
    regs = {"$2": word}

    def val(token):
        token = token.strip()
        return int(token, 16) if token.startswith("0x") else int(token) if token.isdigit() \
            else regs[token]

    for line in ptx.splitlines():
        line = line.strip().rstrip(";")
        if not line or line in "{}" or line.startswith(".reg"):
            continue
        op, args = line.split(None, 1)
        d, *srcs = [a.strip() for a in args.split(",")]
        x = [val(s) for s in srcs]
        if op == "mov.b32":
            regs[d] = x[0]
        elif op == "prmt.b32":
            regs[d] = _prmt(x[0], x[1], x[2])
        elif op == "shl.b32":
            regs[d] = x[0] << x[1] & MASK32
        elif op == "and.b32":
            regs[d] = x[0] & x[1]
        elif op == "fma.rn.bf16x2":
            regs[d] = _bf16x2_fma(*x)
        else:
            raise AssertionError(f"an instruction the interpreter lacks: {op}")
    return regs["$0"], regs["$1"]


@pytest.mark.parametrize("dtype, bits", [(torch.float8_e4m3fn, 3), (torch.float8_e5m2, 2)])
def test_the_widening_is_exact_on_every_finite_byte(dtype, bits):
    ptx = fp8_to_bf16_ptx(bits)
    assert set(re.findall(r"^\s*([a-z][\w.]*)", ptx, re.M)) <= \
        {"mov.b32", "prmt.b32", "shl.b32", "and.b32", "fma.rn.bf16x2"}
    values = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(dtype)
    finite = torch.isfinite(values.float())
    for lane in range(4):  # byte b in lane `lane`, other lanes holding other bytes
        for b in range(256):
            if not finite[b]:
                continue
            word = bytes([(b + 37 * (i - lane)) % 256 if i != lane else b for i in range(4)])
            lo, hi = _run(ptx, int.from_bytes(word, "little"))
            got = (lo, hi)[lane // 2] >> (16 * (lane % 2)) & 0xFFFF
            want = values[b].to(torch.bfloat16).view(torch.int16).item() & 0xFFFF
            assert got == want, (hex(b), lane, hex(got), hex(want))


def test_cuda_operands_are_percent_signs():
    assert "%2" in fp8_to_bf16_ptx(3, "%") and "$" not in fp8_to_bf16_ptx(3, "%")
