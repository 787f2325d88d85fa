"""Tiny dot_generals and boolean reductions inside loops, which loop code emits inline
(lower/small_ops.h, codegen/native_dots.cc): an explicit Runge-Kutta step's tableau products
(`b @ k` of a [7] by a [7, 2] stage matrix, the error estimate's, the stages' own `a[i] @ k`), a
`while_loop` that stops on `jnp.all` / `jnp.any` of predicates, small matrix products in a `scan`
(plain, transposed, batched, outer products), and the gradient through the Runge-Kutta loop
(products with transposed operands), in float32 and float64. Each runs on Kiln and on JAX's CPU
backend (tolerances.py: "composite"; XLA:CPU contracts multiply-adds differently), and again with
KILN_LOOP_JIT=0 (the flat programs interpreted): the native code must give the same bytes.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax import lax

from conftest import check_both, get_kiln_device
from native_code import differing, results_with
from opdata import F32, F64, rand, x64_if

DTYPES = pytest.mark.parametrize("dtype", [F32, F64], ids=lambda d: np.dtype(d).name)

# Dormand-Prince 5(4): stage coefficients and the two weight vectors.
_A = np.array([[0, 0, 0, 0, 0, 0, 0],
               [1 / 5, 0, 0, 0, 0, 0, 0],
               [3 / 40, 9 / 40, 0, 0, 0, 0, 0],
               [44 / 45, -56 / 15, 32 / 9, 0, 0, 0, 0],
               [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729, 0, 0, 0],
               [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656, 0, 0],
               [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0]])
_B = np.array([35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0])
_E = _B - np.array([5179 / 57600, 0, 7571 / 16695, 393 / 640, -92097 / 339200, 187 / 2100, 1 / 40])


def _field(y, mu):
    return jnp.stack([y[1], mu * (1.0 - y[0] ** 2) * y[1] - y[0]])


def _rk_step(y, dt, mu):
    a, b, e = (jnp.asarray(v, y.dtype) for v in (_A, _B, _E))
    k = jnp.zeros((7, 2), y.dtype)
    for i in range(7):
        k = k.at[i].set(_field(y + dt * (a[i] @ k), mu))
    return y + dt * (b @ k), dt * (e @ k)


def _adaptive(y0, mu, steps):
    # Steps until t passes 3 or `steps` are taken; the step size follows the error estimate; the
    # loop also stops when any state is not finite or every one is tiny.
    def cond(s):
        i, t, dt, y = s
        ok = jnp.all(jnp.isfinite(y)) & jnp.any(jnp.abs(y) > 1e-6)
        return (i < steps) & (t < 3.0) & ok

    def body(s):
        i, t, dt, y = s
        y1, err = _rk_step(y, dt, mu)
        accept = jnp.all(jnp.abs(err) <= 1e-4 + 1e-4 * jnp.abs(y1))
        y = jnp.where(accept, y1, y)
        t = jnp.where(accept, t + dt, t)
        dt = jnp.where(accept, dt * 1.2, dt * 0.5)
        return i + 1, t, dt, y
    dtype = y0.dtype
    return lax.while_loop(cond, body, (jnp.int32(0), jnp.asarray(0.0, dtype),
                                       jnp.asarray(0.05, dtype), y0))


def _matrices_in_scan(a, b, x, xs):
    def step(c, s):
        a, b, x = c
        p = a @ b                                     # [3, 4] x [4, 3]
        a = a + 0.125 * (p @ a) * s
        b = b - 0.125 * ((a.T @ a) @ b)               # transposed lhs, [4, 4] x [4, 3]
        z = jnp.einsum("bij,bik->bjk", x, x)          # batched, [2, 2, 2]
        x = x + 0.1 * jnp.einsum("bij,bjk->bik", x, z)
        outer = a[:, :1] @ b[:1, :]                   # k = 1
        flags = jnp.any(outer > 0, axis=0)            # rows of predicates
        return (a, b, x), (jnp.sum(outer), flags.astype(a.dtype).sum())
    return lax.scan(step, (a, b, x), xs)


def _rk_loss(mu, y0):
    def step(_, y):
        return _rk_step(y, 0.05, mu)[0]
    return jnp.sum(lax.fori_loop(0, 20, step, y0) ** 2)


@DTYPES
@pytest.mark.parametrize("steps", [0, 1, 40, 400])
def test_runge_kutta_while_loop(dtype, steps):
    with x64_if(dtype):
        check_both(_adaptive, np.array([2.0, 0.0], dtype), np.asarray(1.3, dtype),
                   np.int32(steps), kind="composite")


@DTYPES
def test_small_matrix_products_in_scan(dtype):
    with x64_if(dtype):
        xs = np.linspace(0.0, 1.0, 8).astype(dtype)
        check_both(_matrices_in_scan, rand(dtype, (3, 4)) * 0.5, rand(dtype, (4, 3)) * 0.5,
                   rand(dtype, (2, 3, 2)) * 0.5, xs, kind="composite")


@DTYPES
def test_gradient_through_runge_kutta_steps(dtype):
    with x64_if(dtype):
        check_both(jax.value_and_grad(_rk_loss, argnums=(0, 1)), np.asarray(1.1, dtype),
                   np.array([1.5, -0.5], dtype), kind="composite")


def test_edge_values_in_loop_dots():
    # Signed zeros, infinities and NaNs through the products and the reductions.
    def f(w, y):
        def step(_, c):
            y, n = c
            d = y @ w
            return jnp.concatenate([d, d[::-1], d, y[6:]]), n + jnp.any(jnp.isnan(d)).astype(
                jnp.int32)
        return lax.fori_loop(0, 3, step, (y, jnp.int32(0)))
    w = np.array([[0.0, -0.0], [np.inf, 1.0], [-1.0, np.nan], [2.0, 3.0], [-0.0, 0.0],
                  [1e30, -1e30], [0.5, 0.25]], np.float32)
    for y in (np.array([-0.0, 0, 0, 0, 0, 0, 0], np.float32),
              np.array([1, 0, 2, 1, 0, 0, 1], np.float32),
              np.array([1, 2, 0, -1, 1, 1e10, 1], np.float32)):
        check_both(f, w, y, kind="composite")


def _kiln_results() -> dict[str, np.ndarray]:
    kiln = get_kiln_device()
    out = {}

    def put(name, f, *args):
        leaves = jax.tree.leaves(jax.jit(f)(*jax.device_put(args, kiln)))
        out.update({f"{name}-{i}": np.asarray(v) for i, v in enumerate(leaves)})
    for dtype in (F32, F64):
        with x64_if(dtype):
            d = np.dtype(dtype).name
            for steps in (0, 1, 40, 400):
                put(f"rk-{d}-{steps}", _adaptive, np.array([2.0, 0.0], dtype),
                    np.asarray(1.3, dtype), np.int32(steps))
            put(f"mat-{d}", _matrices_in_scan, rand(dtype, (3, 4)) * 0.5,
                rand(dtype, (4, 3)) * 0.5, rand(dtype, (2, 3, 2)) * 0.5,
                np.linspace(0.0, 1.0, 8).astype(dtype))
            put(f"grad-{d}", jax.value_and_grad(_rk_loss, argnums=(0, 1)),
                np.asarray(1.1, dtype), np.array([1.5, -0.5], dtype))
    return out


@pytest.mark.requires_kiln
def test_native_small_dots_match_the_interpreter_bit_for_bit(tmp_path):
    interpreted = results_with(__file__, "KILN_LOOP_JIT", tmp_path)
    differ = differing(_kiln_results(), interpreted)
    assert not differ, differ[:20]


if __name__ == "__main__":  # the interpreted side of the test above, in a child process
    np.savez(sys.argv[1], **_kiln_results())
