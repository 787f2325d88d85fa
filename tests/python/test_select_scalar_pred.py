"""`select` with a scalar predicate choosing between whole arrays (`lax.select_n(p, b, a)` with a
scalar `p`; diffrax's `where(accept, y_new, y)` on a small state), against XLA:CPU bit for bit.

Up to 16 elements such a select is a map whose predicate is read as a scalar
(kernels/elementwise.cc), so fusion joins it to its neighbours and loop code emits it inline;
larger arrays are copied whole. Each case runs at sizes on both sides of that limit, in every
dtype, alone, fused with arithmetic around it, inside a `fori_loop` whose predicate depends on
the carry, and with the result written over a donated operand.
"""

from __future__ import annotations

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax import lax

from conftest import check_both

DTYPES = [np.float32, np.float64, np.int32, np.int8, np.uint8, np.int64, np.bool_,
          jnp.bfloat16, np.float16, np.complex64, np.complex128]
SIZES = [1, 2, 7, 16, 17, 100]
ATOL = {"float32": 1e-5, "float64": 1e-13, "bfloat16": 0.1, "complex64": 1e-5}


def values(dtype, n, seed):
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.random(n) < 0.5
    if np.issubdtype(np.dtype(dtype), np.complexfloating):
        return (rng.normal(size=n) + 1j * rng.normal(size=n)).astype(dtype)
    if np.issubdtype(np.dtype(dtype), np.integer):
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -100), min(info.max, 100), n).astype(dtype)
    return rng.normal(size=n).astype(dtype)


def x64(dtype):
    return jax.enable_x64(np.dtype(dtype).itemsize == 8 or dtype in (np.complex128,))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("pick", [False, True])
def test_alone(dtype, n, pick):
    with x64(dtype):
        a, b = values(dtype, n, 1), values(dtype, n, 2)
        check_both(lambda p, a, b: lax.select_n(p, a, b), np.bool_(pick), a, b, exact=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, jnp.bfloat16, np.complex64],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", SIZES)
def test_fused_with_arithmetic(dtype, n):
    def f(t, a, b):
        p = t > 0  # computed in the program, then read as a scalar by the select
        return lax.select_n(p, a * 2, b + a) * 3 - b

    with x64(dtype):
        a, b = values(dtype, n, 3), values(dtype, n, 4)
        for t in (np.float32(-1.0), np.float32(1.0)):
            # XLA:CPU contracts `* 3 - b` into an FMA, and the difference of two values of up to
            # about 10 may cancel: an absolute tolerance of a few units in the last place of 10.
            check_both(f, t, a, b, atol=ATOL.get(np.dtype(dtype).name))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint8, np.complex64],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", [2, 3, 16, 17])
def test_in_a_loop_on_the_carry(dtype, n):
    # An accept/reject step: the new state is kept when its first element grew, else the old one
    # stays; the predicate changes from iteration to iteration.
    def f(y0, step):
        def body(i, y):
            proposal = y + step * (i % 3 - 1).astype(y.dtype)
            accept = jnp.real(proposal[0]) > jnp.real(y[0])
            return lax.select_n(accept, y, proposal)
        return lax.fori_loop(0, 30, body, y0)

    with x64(dtype):
        y0, step = values(dtype, n, 5), values(dtype, n, 6)
        check_both(f, y0, step, exact=True)


@pytest.mark.parametrize("n", [5, 40])
def test_over_a_donated_operand(n):
    def f(p, a, b):
        return lax.select_n(p, a, b)

    a, b = values(np.float32, n, 7), values(np.float32, n, 8)
    for pick in (False, True):
        check_both(f, np.bool_(pick), a, b, exact=True, jit_kwargs={"donate_argnums": (1,)})
