"""One tolerance rule for every backend, grounded in the dtype and in the sequence's length.

An output element of a sequence of L tokens passes when

    |out - ref| <= 2 * u * (W + |ref|) + FLOOR * W + eta(L) / (1 - eta(L)) * (W + |ref|)
                   + 2 * UNDERFLOW * (1 + Z),
                   W = sum_t p_t |v_t[d]|,   Z = sum over subnormal-probability tokens of |v_t[d]| / l

and its LSE (float32 from every backend) when

    |lse - ref_lse| <= LSE_FLOOR * (1 + |ref_lse|) - log(1 - eta(L))

with ``ref`` the float64 oracle, ``p_t`` its softmax weights and ``u`` the unit roundoff of the
input dtype (2^-8 bf16, 2^-11 fp16, 2^-24 fp32).

Where each term comes from. The spec has the scores q.K^T and the softmax in float32 (what
every production decode kernel does). A kernel then

1. rounds the probabilities to the input dtype before the P.V product (error <= u * W) and the
   output to it (<= u * |ref|); the factor 2 leaves room for rounding the normaliser too, or
   for rounding twice: ``2 * u * (W + |ref|)``.
2. makes errors that do not grow with L: each score is a float32 dot product of head_dim terms
   scaled once, each probability a fast exp2 (PTX ``ex2.approx``: relative error ~2^-22), the
   LSE a fast log2 of the normaliser plus the running maximum. These stay the measured floors
   of the earlier rule, FLOOR = 2^-16 relative to W for the output and LSE_FLOOR = 2^-17
   relative to 1 + |lse| for the LSE (measured errors ~1e-6 on every backend up to 4k tokens).
3. sums L terms in float32 twice (the normaliser l = sum_t p_t and the numerator
   sum_t p_t v_t), in an order of its own: sequentially, tile by tile, per thread then across
   threads, per split then in a merge. Any such order is a tree with L leaves, so every term
   passes through at most L - 1 additions, each rounding by at most u32 = 2^-24 relative to
   the partial sum it lands in (Higham, "Accuracy and Stability of Numerical Algorithms",
   Section 4.2: |error| <= (L - 1) * u32 * sum_t |term_t| for recursive summation in any order,
   to first order). The same tree has online-softmax rescalings in it: whenever a running
   maximum grows, a partial sum is multiplied by alpha = exp2(m_old - m_new), one more rounding
   (u32) and alpha's own approximation (EXP_ERR = 2^-22 relative). A tile kernel rescales only
   when its running maximum grows (alpha = exp2(0) = 1 is exact otherwise), and on the spec's
   inputs (independent draws) the running maximum of n values grows about ln n times (the
   harmonic number); RESCALES(L) = 2 ln L + 8 allows twice that, plus up to two levels of
   split-K merges (each one more weight exp(lse_i - lse), the same two errors). Every term of
   both sums thus carries a relative error of at most

       eta(L) = (L - 1) * u32 + (2 ln L + 10) * (2 * u32 + EXP_ERR)

   so the numerator errs by <= eta * W * l and the normaliser by <= eta * l; their quotient,
   the output, by <= eta / (1 - eta) * (W + |out|), and the log of the normaliser by
   <= -log(1 - eta). eta grows linearly with L, as the summation error does: ~2^-15 at 256
   tokens, 2^-12 at 4k, 2^-8 at 64k, 1/16 at 1M.

A kernel that rounds the scores to bf16 fails this bound until L reaches a few 100k tokens,
where its error hides under eta; the negative controls' error ratios at 4k to 1M tokens are in
results/ (``scripts/long_context.py``). Bugs at a sequence's ends are caught by the inputs
instead (poison past every end, ``specs.inputs``), at any length.

The last term is fp16's (UNDERFLOW is ~1e-40 in bf16 and fp32): a probability below fp16's
smallest normal (2^-14, relative to the maximum; a spiky softmax has hundreds of them) rounds with
an absolute error up to UNDERFLOW = 2^-25, not a relative one; ``Z`` sums |v_t[d]| over those
tokens, divided by the normaliser l (``specs.reference``). An output below 2^-14 is itself
rounded absolutely, by up to UNDERFLOW: the ``1``. Without it, a correct fp16 kernel fails a
spiky draw whose output is subnormal (tests/test_spec.py emulates one).

A kernel may declare that it sums the softmax normaliser from probabilities already rounded to
the input dtype (a tensor-core kernel that sums P with an MMA in bf16/fp16, consistent with the
P.V product it normalises). Each term then carries a relative error <= u, or an absolute
one <= UNDERFLOW when it is subnormal in the dtype (fp16 below 2^-14); the normaliser is >= 1
(the largest term is 1), so its log moves by <= u + L * UNDERFLOW for L tokens: the LSE bound
gains that much (2^-8 in bf16) for that kernel only, the output bound is unchanged, and the
harness reports the declaration beside the row.

An fp8 cache (``kv_dtype``) adds no term. Its values stand for value x scale, and the spec's
scales have 4-bit significands (``specs.inputs``), so every such product is exact in float32 and
in the 16-bit query dtype alike: a kernel that dequantises K and V before its products, one that
folds K's scale into the softmax scale and V's into the output, and the float64 oracle all see
the same values. What a kernel must round after dequantising is what it rounds on a 16-bit
cache: the probabilities and the output in the query dtype (u of the query's dtype), and the
float32 sums. Reading a scale of the wrong head or none at all moves every score by the ratio of
two scales (1/2 to 2 and more), far outside this rule (tests/test_fp8.py).

A window (``window``) attends each sequence's last w tokens: L above is the number attended,
and a kernel's reading of any other token shows through the poison there (``specs.inputs``).
Query tokens of one sequence (``q_len`` > 1) attend spans of their own, none longer than the
sequence's ``attended_lens`` entry: that L bounds each row's sum. A token seen by a later query
token but not by an earlier one is real data, so no poison marks a causal mask off by one: only
the oracle's value does (each token moves the output by its probability, far above this bound
in the suite's short sequences).

Soft-capping (``softcap``) replaces each scaled score s by c * tanh(s / c). Its derivative is
1 - tanh^2 <= 1, so the score's own errors pass through it no larger. Evaluating tanh adds an
error of its own: the production decode kernels with soft-capping use PTX's
``tanh.approx.f32``, whose relative error is up to TANH_ERR = 2^-11; an exact-rounding tanh or
one through exp2 errs far less. A capped score c * tanh(s / c) thus errs by up to TANH_ERR times
its own magnitude beyond the scaled score, at most TANH_ERR * A for a row whose capped scores
are all within A in magnitude (the oracle's ``s_absmax``, <= c), and a probability
exp(s - max) by that much relative, the numerator's terms and the normaliser's alike: the output
by TANH_ERR * A * (W + |out|) and the LSE by TANH_ERR * A (A is a few units on the suite's
inputs: about 0.3 %; a cap applied to the unscaled score, a wrong cap or none at all move scores
by far more, tests/test_mask.py). A cap far above every score is then no cap within this rule,
and the rule no looser than without one (conformance property 11).

A kernel that declares it returns no LSE (``Impl.returns_lse``) is judged on ``out`` alone: its
LSE figures are None.

NaN or inf anywhere fails. Reports are bounded: counts, then the first few mismatches.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from specs.problem import DecodeProblem
from specs.reference import Reference

UNIT_ROUNDOFF = {"float16": 2.0**-11, "bfloat16": 2.0**-8, "float32": 2.0**-24}
FLOOR = 2.0**-16
LSE_FLOOR = 2.0**-17
# half the spacing of the dtype's subnormals: the absolute rounding error of a tiny probability
UNDERFLOW = {"float16": 2.0**-25, "bfloat16": 2.0**-134, "float32": 2.0**-150}
MAX_REPORTED = 5  # mismatches listed per tensor
U32 = 2.0**-24  # float32's unit roundoff: every kernel sums in float32
EXP_ERR = 2.0**-22  # relative error of a GPU's fast exp2 (PTX ex2.approx.f32)
TANH_ERR = 2.0**-11  # relative error of PTX's tanh.approx.f32


def softcap_error(softcap: float | None, s_absmax: torch.Tensor | None) -> torch.Tensor | float:
    """The absolute error of a soft-capped score ``c * tanh(s / c)`` a float32 kernel makes
    beyond the scaled score's own (the derivation above), per query row and head:
    ``TANH_ERR * min(A, c)`` with A the row's largest capped |score|; 0 without a cap."""
    if softcap is None:
        return 0.0
    if s_absmax is None:  # a reference made without it: the cap bounds every capped score
        return softcap * TANH_ERR
    return TANH_ERR * s_absmax.clamp(max=softcap)


def rescales(length):
    """The rescalings (and split-K merge levels) a term passes through on the spec's inputs:
    twice the ~ln L times a running maximum of L independent draws grows, plus 8, plus two
    merge levels (the derivation above). ``length`` a float tensor or a number."""
    return 2 * torch.log(torch.as_tensor(length, dtype=torch.float64)) + 10


def sum_error(length) -> torch.Tensor:
    """eta(L): the relative error bound of a float32 sum of L softmax terms in any order, with
    online rescaling (the derivation above); float64 tensor shaped like ``length``."""
    L = torch.as_tensor(length, dtype=torch.float64)
    return (L - 1) * U32 + rescales(L) * (2 * U32 + EXP_ERR)


@dataclass
class Comparison:
    passed: bool
    out_max_err: float  # max |out - ref|
    out_err_ratio: float  # max over elements of |out - ref| / tolerance (<= 1 passes)
    lse_max_err: float | None  # None: the kernel returns no LSE (out alone is judged)
    lse_err_ratio: float | None
    n_nonfinite: int  # NaN or inf in out and lse
    n_bad: int  # finite elements over their tolerance
    details: list[str] = field(default_factory=list)

    def summary(self) -> str:
        head = f"out max err {self.out_max_err:.3g} ({self.out_err_ratio:.2f}x tol), " + (
            f"lse max err {self.lse_max_err:.3g} ({self.lse_err_ratio:.2f}x tol)"
            if self.lse_err_ratio is not None else "no lse (declared: out only)")
        if self.passed:
            return head
        counts = f"{self.n_bad} element(s) over tolerance, {self.n_nonfinite} NaN/inf"
        return "; ".join([head, counts] + self.details)


def _describe(name: str, got: torch.Tensor, want: torch.Tensor, bad: torch.Tensor) -> list[str]:
    idx = bad.nonzero()[:MAX_REPORTED].tolist()
    lines = [f"{name}{tuple(i)}: got {float(got[tuple(i)]):.6g}, expected {float(want[tuple(i)]):.6g}"
             for i in idx]
    total = int(bad.sum())
    if total > len(idx):
        lines.append(f"... {total - len(idx)} more in {name}")
    return lines


def compare(problem: DecodeProblem, out: torch.Tensor, lse: torch.Tensor | None, ref: Reference,
            expected: tuple[torch.Tensor, torch.Tensor | None] | None = None,
            lse_rounded_sum: bool = False) -> Comparison:
    """Apply the rule above to one implementation's ``out [B * q_len, Hq, D]`` and
    ``lse [B * q_len, Hq]``.

    ``expected`` (another run's out and lse) replaces the oracle's values while keeping its
    tolerance: two runs that must agree (paged vs dense, split counts) are held to the same rule.
    ``lse_rounded_sum``: the kernel declared a normaliser summed from dtype-rounded
    probabilities (the LSE bound gains u + L * UNDERFLOW, see above). ``lse`` None (or the
    expected run's): out alone is judged.
    """
    o = out.double()
    want_o, want_l = (ref.out, ref.lse) if expected is None else \
        tuple(e.double() if e is not None else None for e in expected)
    judge_lse = lse is not None and want_l is not None
    # out only: an empty LSE, so the rule below runs unchanged over nothing
    l = lse.double() if judge_lse else ref.lse[:0]
    if not judge_lse:
        want_l = l
    o_err = (o - want_o).abs()
    l_err = (l - want_l).abs()

    u = UNIT_ROUNDOFF[problem.dtype]
    lens = torch.tensor(problem.attended_lens, dtype=torch.float64, device=ref.out.device)
    lens = lens.repeat_interleave(problem.q_len)[:, None]  # per query row, its sequence's
    eta = sum_error(lens)  # [rows, 1]: the float32 sums of each row's at most L attended terms
    # the capped scores' absolute error, [rows, Hq] (0: no cap)
    cap = softcap_error(problem.softcap, ref.s_absmax)
    cap_o = cap[..., None] if isinstance(cap, torch.Tensor) else cap
    o_tol = 2 * u * (ref.v_weight + ref.out.abs()) + FLOOR * ref.v_weight \
        + (eta / (1 - eta))[..., None] * (ref.v_weight + ref.out.abs()) \
        + 2 * UNDERFLOW[problem.dtype] * (1 + ref.v_subnormal) \
        + cap_o * (ref.v_weight + ref.out.abs())
    l_tol = LSE_FLOOR * (1 + (ref.lse if judge_lse else l).abs()) + (cap if judge_lse else 0.0)
    if judge_lse:
        l_tol = l_tol - torch.log1p(-eta)
    if lse_rounded_sum and judge_lse:
        l_tol = l_tol + u + lens * UNDERFLOW[problem.dtype]

    o_nonfinite = ~torch.isfinite(o)
    l_nonfinite = ~torch.isfinite(l)
    o_bad = (o_err > o_tol) & ~o_nonfinite
    l_bad = (l_err > l_tol) & ~l_nonfinite
    n_nonfinite = int(o_nonfinite.sum()) + int(l_nonfinite.sum())
    n_bad = int(o_bad.sum()) + int(l_bad.sum())

    def finite_max(x: torch.Tensor) -> float:
        x = torch.where(torch.isfinite(x), x, torch.zeros_like(x))
        return float(x.max()) if x.numel() else 0.0

    details: list[str] = []
    if n_nonfinite:
        details += _describe("out", o, want_o, o_nonfinite) + _describe("lse", l, want_l, l_nonfinite)
    if n_bad:
        details += _describe("out", o, want_o, o_bad) + _describe("lse", l, want_l, l_bad)
    return Comparison(
        passed=n_nonfinite == 0 and n_bad == 0,
        out_max_err=finite_max(o_err),
        out_err_ratio=finite_max(o_err / o_tol.clamp_min(1e-300)),
        lse_max_err=finite_max(l_err) if judge_lse else None,
        lse_err_ratio=finite_max(l_err / l_tol) if judge_lse else None,
        n_nonfinite=n_nonfinite,
        n_bad=n_bad,
        details=details,
    )
