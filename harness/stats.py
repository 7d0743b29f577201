"""Statistics of repeated timings: the median, its bootstrap confidence interval, when to stop
repeating, and ties.

A timed figure is the median of repeated calls; its 95 % confidence interval comes from a
percentile bootstrap of the median (BOOTSTRAP_RESAMPLES resamples, a fixed seed so the same
samples always give the same interval). Repetition goes on, in batches, until the interval's
half-width is within a target fraction of the median (``harness.timing`` sets it per mode), or
a cap on repetitions or measured time is reached; the row records which. Two figures whose
intervals overlap are tied: the tables rank a row by how many rows on the same problem are
faster beyond doubt (their interval lies wholly below its own), so tied rows share a rank.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

import numpy as np

CONFIDENCE = 0.95
BOOTSTRAP_RESAMPLES = 2000
MIN_REPS = 20


@dataclass(frozen=True)
class Estimate:
    """The median of ``reps`` samples and its confidence interval (same unit as the samples)."""

    median: float
    ci_lo: float
    ci_hi: float
    reps: int
    p20: float
    p80: float

    @property
    def rel_half_width(self) -> float:
        return (self.ci_hi - self.ci_lo) / 2 / self.median if self.median else float("inf")


def median_ci(samples, resamples: int = BOOTSTRAP_RESAMPLES, confidence: float = CONFIDENCE,
              seed: int = 0) -> tuple[float, float]:
    """Percentile-bootstrap interval of the median."""
    x = np.asarray(samples, dtype=np.float64)
    if len(x) < 2:
        return float(x[0]), float(x[0])
    rng = np.random.default_rng(seed)
    medians = np.median(x[rng.integers(0, len(x), size=(resamples, len(x)))], axis=1)
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(medians, [alpha, 1 - alpha])
    return float(lo), float(hi)


def estimate(samples) -> Estimate:
    s = sorted(samples)
    lo, hi = median_ci(s)
    q = np.quantile(np.asarray(s), [0.2, 0.8]) if len(s) > 1 else (s[0], s[0])
    return Estimate(float(statistics.median(s)), lo, hi, len(s), float(q[0]), float(q[1]))


def precise_enough(samples, target: float) -> bool:
    """Enough repetitions: at least MIN_REPS and the median's interval within ``target`` (a
    fraction of the median)."""
    return len(samples) >= MIN_REPS and estimate(samples).rel_half_width <= target


def below(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Interval ``a`` lies wholly below ``b``: a is faster beyond doubt."""
    return a[1] < b[0]


def ranks(intervals: list[tuple[float, float]]) -> list[int]:
    """1 + the number of intervals wholly below each one: rows that cannot be told apart share
    a rank (a tie), and a row ranks behind only what is faster beyond its interval."""
    return [1 + sum(below(other, mine) for other in intervals) for mine in intervals]
