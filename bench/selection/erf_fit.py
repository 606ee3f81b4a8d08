"""Fit the erf approximation the numpy MiniLM uses for GELU (``skilldeck.select._bert``), and print its error.

numpy has no ``erf``. The encoder writes ``erfc(z) = t P(t) exp(-z^2)`` for ``z >= 0``, with
``t = 1 / (1 + p z)`` and ``P`` a polynomial of degree ``n - 1`` (the form of Hastings' classic
approximations; the coefficients here are our own fit). For each ``p`` on a grid, ``P`` is fitted
by weighted least squares against ``math.erfc`` on ``z`` in [0, 9], reweighted a few times towards
the largest errors (Lawson's iteration, which approaches the minimax fit); the ``p`` with the
smallest largest error of ``erf`` wins. Run from the repository root::

    .venv/bin/python bench/selection/erf_fit.py            # n = 6: prints p, the coefficients, the error

and paste the result into ``ERF_P`` / ``ERF_COEFFICIENTS`` of ``src/skilldeck/select/bert.py``
(its test, ``tests/select/test_bert.py``, checks the error bound against ``math.erf``).
"""

from __future__ import annotations

import argparse
import math

import numpy as np


def fit(p: float, n: int, z: np.ndarray, g: np.ndarray, w: np.ndarray, rounds: int = 30) -> tuple[float, np.ndarray]:
    """The coefficients of ``P`` (low order first) for one ``p``, and the largest error of erf they give."""
    t = 1.0 / (1.0 + p * z)
    basis = np.stack([t**k for k in range(1, n + 1)], axis=1)  # t P(t) = sum a_k t^k
    weights = np.ones_like(z)
    best: tuple[float, np.ndarray] | None = None
    for _ in range(rounds):
        scale = w * weights
        coef, *_ = np.linalg.lstsq(basis * scale[:, None], g * scale, rcond=None)
        err = np.abs(w * (basis @ coef - g))
        if best is None or err.max() < best[0]:
            best = (float(err.max()), coef)
        weights = weights * np.sqrt(err / err.max() + 1e-3)
        weights /= weights.max()
    assert best is not None
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=6, help="terms of t P(t)")
    args = ap.parse_args(argv)
    z = np.linspace(0.0, 9.0, 90_001)
    erfc = np.array([math.erfc(v) for v in z])
    g = erfc * np.exp(z**2)  # what t P(t) stands for
    w = np.exp(-(z**2))  # an error in it is this much of an error in erf
    coarse = min((fit(p, args.n, z, g, w)[0], p) for p in np.linspace(0.2, 0.7, 51))
    err, p = min((fit(q, args.n, z, g, w)[0], q) for q in np.linspace(coarse[1] - 0.01, coarse[1] + 0.01, 21))
    _, coef = fit(p, args.n, z, g, w)
    check = np.linspace(0.0, 9.0, 900_001)
    t = 1.0 / (1.0 + p * check)
    approx = 1.0 - sum(c * t ** (k + 1) for k, c in enumerate(coef)) * np.exp(-(check**2))
    exact = np.array([math.erf(v) for v in check])
    print(f"ERF_P = {round(float(p), 6)!r}")
    print(f"ERF_COEFFICIENTS = {tuple(float(c) for c in coef)!r}")
    print(f"largest |erf error| in float64: {float(np.abs(approx - exact).max()):.2e} (fit grid: {err:.2e})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
