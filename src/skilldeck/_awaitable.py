"""Callbacks that may be plain functions or coroutine functions: one way to take their result."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable
from typing import TypeVar, cast

__all__ = ["maybe_await"]

T = TypeVar("T")


async def maybe_await(value: T | Awaitable[T]) -> T:
    """``value`` itself, or what it gives when awaited if it is awaitable."""
    if inspect.isawaitable(value):
        return cast(T, await value)
    return value
