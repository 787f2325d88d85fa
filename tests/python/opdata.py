"""Deterministic test inputs for the op tests."""

from __future__ import annotations

import contextlib
import zlib

import ml_dtypes
import numpy as np

import jax

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
I8, I16, I32, I64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
U8, U16, U32, U64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
BOOL = np.dtype(np.bool_)
C64 = np.dtype(np.complex64)

X64_DTYPES = {F64, I64, U64, np.dtype(np.complex128)}


def needs_x64(*dtypes) -> bool:
    return any(np.dtype(d) in X64_DTYPES for d in dtypes)


@contextlib.contextmanager
def x64_if(*dtypes):
    """Enables jax x64 mode when any of `dtypes` is 64-bit (otherwise leaves it off)."""
    if needs_x64(*dtypes):
        with jax.enable_x64(True):
            yield
    else:
        yield


def _seed(*parts) -> int:
    return zlib.crc32(repr(parts).encode())


def rand(dtype, shape, domain: str = "any", seed=0) -> np.ndarray:
    """Random array of `dtype` and `shape` whose values lie in `domain`.

    domains: any, pos (0.1..4), unit (-0.9..0.9), ge1 (1.1..4), nonzero, small (ints -4..4 /
    floats -4..4 in steps of 0.25), shift (ints 0..40), near1 (0.5..1.5).
    """
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(_seed(dtype.name, tuple(np.atleast_1d(shape)), domain, seed))
    shape = tuple(shape) if not isinstance(shape, int) else (shape,)
    if dtype == BOOL:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if domain == "shift":
            lo, hi = 0, 41
        elif domain in ("small", "nonzero"):
            lo, hi = max(-4, int(info.min)), 5
        elif domain == "pos":
            lo, hi = 1, 50
        else:
            lo, hi = max(int(info.min), -100), min(int(info.max), 100) + 1
        v = rng.integers(lo, hi, size=shape)
        if domain == "nonzero":
            v = np.where(v == 0, 3, v)
        return v.astype(dtype)
    if dtype.kind == "c":
        re = rand(F32, shape, domain, seed)
        im = rand(F32, shape, domain, seed + 1)
        return (re + 1j * im).astype(dtype)
    if domain == "pos":
        v = rng.uniform(0.1, 4.0, shape)
    elif domain == "unit":
        v = rng.uniform(-0.9, 0.9, shape)
    elif domain == "ge1":
        v = rng.uniform(1.1, 4.0, shape)
    elif domain == "near1":
        v = rng.uniform(0.5, 1.5, shape)
    elif domain == "small":
        v = rng.integers(-16, 17, shape) / 4.0
    elif domain == "nonzero":
        v = rng.standard_normal(shape) * 2.0
        v = np.where(np.abs(v) < 0.1, 0.5, v)
    else:
        v = rng.standard_normal(shape) * 2.0
    return v.astype(dtype)


# Special floating-point values (no subnormals: XLA:CPU flushes them to zero).
SPECIAL_F32 = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.5, np.inf, -np.inf, np.nan,
                        1e-30, -1e30, 3.4e38, -3.4e38, 100.0, -100.0], np.float32)
