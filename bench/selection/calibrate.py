"""Fitting the confidence model: plain-numpy logistic regression, AUROC, thresholds.

Procedure (what ``run.py --calibrate`` ships): every task gives two examples -- its question
against the full catalog (in scope, label 1) and against the catalog without its gold servers
(out of scope, label 0). The features are :func:`skilldeck.select._decide.unit_features` of the
whole question. The model is fitted on the tasks of half ``A`` (L2-regularised logistic regression
on standardised features, Newton's method), and its threshold is the highest value that still
keeps 90% of half A's in-scope questions. Half ``B`` is the held-out report; the reverse fit
(B -> A) is reported as well.

With an encoder the model reads more, correlated features (the fused views), so its L2 strength
is chosen from :data:`L2_GRID` by cross-validation **grouped by task** inside the fitting half (a
task's in-scope question and its out-of-scope twin always fall in the same fold, so the model is
never scored on the twin of a question it was fitted on); :func:`grouped_cv` also gives
out-of-fold confidences over all tasks, reported as one more AUROC.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = [
    "L2_GRID",
    "auroc",
    "backward_selection",
    "choose_l2",
    "false_accepts",
    "fit_logistic",
    "grouped_cv",
    "threshold_keeping",
]

L2_GRID = (1.0, 3.0, 10.0, 30.0, 100.0)


def fit_logistic(
    x: np.ndarray, y: np.ndarray, *, l2: float = 1.0, iters: int = 50, sample_weight: np.ndarray | None = None
) -> tuple[np.ndarray, float]:
    """Weights and bias (for the raw, unstandardised features) of an L2-regularised logistic model
    (``sample_weight``: each row's weight in the likelihood, 1 by default)."""
    sw = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    mu = x.mean(axis=0)
    sd = x.std(axis=0)
    sd = np.where(sd > 1e-9, sd, 1.0)
    z = (x - mu) / sd
    a = np.hstack([z, np.ones((len(z), 1))])
    w = np.zeros(a.shape[1])
    reg = np.full(a.shape[1], l2)
    reg[-1] = 0.0  # the bias is not penalised
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-np.clip(a @ w, -60, 60)))
        grad = a.T @ (sw * (p - y)) + reg * w
        hess = (a * (sw * p * (1 - p))[:, None]).T @ a + np.diag(reg) + 1e-9 * np.eye(a.shape[1])
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    weights = w[:-1] / sd
    bias = float(w[-1] - (w[:-1] * mu / sd).sum())
    return weights, bias


def auroc(positive: Sequence[float], negative: Sequence[float]) -> float:
    """Probability that a random in-scope question outscores a random out-of-scope one (ties count half)."""
    pos = np.asarray(positive, dtype=float)
    neg = np.asarray(negative, dtype=float)
    if not len(pos) or not len(neg):
        return float("nan")
    greater = (pos[:, None] > neg[None, :]).sum()
    ties = (pos[:, None] == neg[None, :]).sum()
    return float((greater + 0.5 * ties) / (len(pos) * len(neg)))


def threshold_keeping(in_scope: Sequence[float], share: float = 0.9) -> float:
    """The highest threshold that keeps at least ``share`` of ``in_scope`` (confidence >= threshold)."""
    values = np.sort(np.asarray(in_scope, dtype=float))
    drop = int(np.floor((1.0 - share) * len(values) + 1e-9))
    return float(values[min(drop, len(values) - 1)])


def false_accepts(p: np.ndarray, y: np.ndarray, share: float = 0.9) -> float:
    """Share of the negatives (``y == 0``) at or above the threshold that keeps ``share`` of the positives."""
    threshold = threshold_keeping(p[y == 1], share)
    return float(np.mean(p[y == 0] >= threshold))


def grouped_cv(
    x: np.ndarray,
    y: np.ndarray,
    groups: Sequence[str],
    *,
    l2: float,
    folds: int = 5,
    sample_weight: np.ndarray | None = None,
) -> np.ndarray:
    """Out-of-fold probabilities: rows are split into ``folds`` by a hash of their group, never across one."""
    import hashlib

    sw = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    fold = np.array([int(hashlib.sha256(g.encode()).hexdigest(), 16) % folds for g in groups])
    out = np.zeros(len(y))
    for k in range(folds):
        test = fold == k
        if not test.any() or test.all():
            continue
        w, b = fit_logistic(x[~test], y[~test], l2=l2, sample_weight=sw[~test])
        out[test] = 1.0 / (1.0 + np.exp(-np.clip(x[test] @ w + b, -60, 60)))
    return out


def choose_l2(
    x: np.ndarray,
    y: np.ndarray,
    groups: Sequence[str],
    grid: Sequence[float] = L2_GRID,
    *,
    objective: str = "auroc",
    sample_weight: np.ndarray | None = None,
) -> float:
    """The L2 strength of :data:`L2_GRID` with the best task-grouped cross-validated ``objective`` (ties: the
    stronger): ``auroc``, or ``false_accept`` (fewest out-of-fold false accepts at 90% of in-scope kept)."""
    if objective not in ("auroc", "false_accept"):
        raise ValueError(f"unknown objective {objective!r}: auroc or false_accept")
    best, best_score = grid[-1], -np.inf
    for l2 in sorted(grid, reverse=True):
        p = grouped_cv(x, y, groups, l2=l2, sample_weight=sample_weight)
        score = auroc(p[y == 1], p[y == 0]) if objective == "auroc" else -false_accepts(p, y)
        if score > best_score + 1e-9:
            best, best_score = l2, score
    return best


def backward_selection(x: np.ndarray, y: np.ndarray, groups: Sequence[str], minimum: int = 3) -> list[int]:
    """Columns kept by greedy backward elimination: drop the column whose removal gives the best
    task-grouped cross-validated AUROC (L2 chosen again each time) while that is no worse than before."""

    def score(cols: list[int]) -> float:
        sub = x[:, cols]
        p = grouped_cv(sub, y, groups, l2=choose_l2(sub, y, groups))
        return auroc(p[y == 1], p[y == 0])

    kept = list(range(x.shape[1]))
    best = score(kept)
    while len(kept) > minimum:
        trials = [(score([c for c in kept if c != drop]), drop) for drop in kept]
        value, drop = max(trials)
        if value < best:
            break
        best = value
        kept.remove(drop)
    return kept
