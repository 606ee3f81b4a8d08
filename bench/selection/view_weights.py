"""Learned view weights for the fused ranking (an ablation row; the product sums the views equally).

For each task of one half, each of the five views (:data:`~skilldeck.select._rank.VIEWS`) is z-scored
across the servers as the ranker does; the weights maximise a listwise likelihood: per requirement
of the task, the softmax over that requirement's servers and every server the task does not need,
of the weighted z sum, should put its mass on the requirement's servers. An L2 penalty pulls the
weights towards the shipped equal weights (1 each), its strength chosen from :data:`L2_GRID` by
cross-validation grouped by task inside the fitting half (out-of-fold mean reciprocal rank). Plain
numpy gradient descent with backtracking: five parameters.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["L2_GRID", "TaskViews", "choose_l2", "fit", "reciprocal_rank"]

L2_GRID = (0.3, 1.0, 3.0, 10.0)


@dataclass(frozen=True)
class TaskViews:
    """One task's view z-scores (servers x views) and the server indices of each of its requirements."""

    task_id: str
    z: np.ndarray
    requirements: tuple[np.ndarray, ...]
    gold: np.ndarray
    """Every server any requirement names (none of them is a negative for another requirement)."""


def _loss_grad(tasks: Sequence[TaskViews], w: np.ndarray, l2: float) -> tuple[float, np.ndarray]:
    loss, grad = 0.0, np.zeros_like(w)
    for t in tasks:
        negatives = np.setdiff1d(np.arange(len(t.z)), t.gold)
        for req in t.requirements:
            x = t.z[np.concatenate([req, negatives])]
            s = x @ w
            top = s.max()
            all_lse = top + np.log(np.exp(s - top).sum())
            req_lse = top + np.log(np.exp(s[: len(req)] - top).sum())
            loss += (all_lse - req_lse) / len(t.requirements)
            p = np.exp(s - all_lse)
            q = np.zeros(len(s))
            q[: len(req)] = np.exp(s[: len(req)] - req_lse)
            grad += x.T @ (p - q) / len(t.requirements)
    loss += 0.5 * l2 * float(((w - 1.0) ** 2).sum())
    return loss, grad + l2 * (w - 1.0)


def fit(tasks: Sequence[TaskViews], l2: float, *, iters: int = 2000) -> np.ndarray:
    """The view weights (starting from, and pulled towards, equal weights)."""
    w = np.ones(tasks[0].z.shape[1])
    loss, grad = _loss_grad(tasks, w, l2)
    rate = 0.1
    for _ in range(iters):
        trial = w - rate * grad
        trial_loss, trial_grad = _loss_grad(tasks, trial, l2)
        if trial_loss < loss:
            w, loss, grad = trial, trial_loss, trial_grad
            rate *= 1.2
        else:
            rate *= 0.5
        if rate < 1e-10 or np.abs(grad).max() < 1e-6:
            break
    return w


def reciprocal_rank(tasks: Sequence[TaskViews], w: np.ndarray) -> float:
    """Mean over tasks of the mean over requirements of 1 / (rank of its best-placed server)."""
    out = []
    for t in tasks:
        order = np.argsort(-(t.z @ w), kind="stable")
        position = np.empty(len(order), dtype=int)
        position[order] = np.arange(len(order))
        out.append(np.mean([1.0 / (1 + position[req].min()) for req in t.requirements]))
    return float(np.mean(out))


def choose_l2(tasks: Sequence[TaskViews], grid: Sequence[float] = L2_GRID, folds: int = 5) -> float:
    """The L2 of ``grid`` with the best out-of-fold reciprocal rank, folds grouped by task (ties: the stronger)."""
    fold = [int(hashlib.sha256(t.task_id.encode()).hexdigest(), 16) % folds for t in tasks]
    best, best_score = grid[-1], -1.0
    for l2 in sorted(grid, reverse=True):
        scores = []
        for k in range(folds):
            train = [t for t, f in zip(tasks, fold, strict=True) if f != k]
            test = [t for t, f in zip(tasks, fold, strict=True) if f == k]
            if train and test:
                scores.extend([reciprocal_rank(test, fit(train, l2))] * len(test))
        score = float(np.mean(scores))
        if score > best_score + 1e-9:
            best, best_score = l2, score
    return best
