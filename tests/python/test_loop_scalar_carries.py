"""Loops over scalars and tiny vectors in float64, float32 and int32, as users write them, against
JAX's CPU backend: arrays built from computed scalars (`jnp.array([...])`) read back as vectors in
the next step (the native loop code composes them from the registers that computed the elements,
codegen/native_emitter.cc, and copies f64 elements as f64: codegen/native_moves.cc), a scalar
Newton iteration with `sin`/`cos`, a `while_loop` over an int32 counter and float32[3] carries
whose condition reads the carry; zero-trip loops, loops that exit at once, and f64 edge values
(NaN, infinities, signed zeros, subnormals, the largest finite value).

Tolerances: XLA:CPU may contract `a * b + c` into an FMA and uses its own `sin`/`cos`, so floats
agree to a few ulps per step (rtol 1e-12 for f64 over these short loops, 1e-5 for f32); NaN
where XLA:CPU has NaN; counters and predicates exactly.
"""

from __future__ import annotations

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax import lax

from conftest import assert_close, run_both


def _rhs(y):
    return jnp.array([10.0 * (y[1] - y[0]), y[0] * (28.0 - y[2]) - y[1],
                      y[0] * y[1] - 8.0 / 3.0 * y[2]])


def lorenz_rk4(y0, steps):
    def step(y, _):
        h = 0.002
        k1 = _rhs(y)
        k2 = _rhs(y + 0.5 * h * k1)
        k3 = _rhs(y + 0.5 * h * k2)
        k4 = _rhs(y + h * k3)
        y = y + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
        return y, y[0]
    return lax.scan(step, y0, None, length=steps)


def pairs_and_quads(v, steps):
    """Arrays of 2 and 4 f64 (16 and 32 bytes) and 4 and 8 f32 built from computed scalars."""
    def body(i, c):
        a, b = c
        a2 = jnp.array([a[0] * a[1] - 0.5, a[1] + a[0] * 0.25])
        a4 = jnp.array([a2[0], a2[1] * 2.0, a[0] - a2[1], b[3] * 0.5])
        b = a4.astype(v.dtype) * 0.75 + jnp.stack([b[3], b[2], b[1], b[0]])
        b8 = jnp.concatenate([b, b * b]) - jnp.array([b[k] * 0.5 for k in range(4)] * 2)
        return a2 * 0.5 + a4[:2] * 0.25, b8[:4] - b8[4:] * 0.125
    return lax.fori_loop(0, steps, body, (v[:2], v[:4]))


F64_EDGES = [np.nan, np.inf, -np.inf, 0.0, -0.0, 5e-324, -1e-310, np.finfo(np.float64).max,
             -1.0, 1e300, -2.5, 1e-300]


def _tolerance(dtype):
    return (1e-12, 1e-300) if np.dtype(dtype) == np.float64 else (1e-5, 1e-30)


@pytest.mark.requires_kiln
@pytest.mark.parametrize("steps", [0, 1, 2, 37])
def test_lorenz_rk4_f64(steps):
    with jax.enable_x64(True):
        y0 = np.array([1.0, 1.0, 1.0])
        kiln, cpu = run_both(lambda y: lorenz_rk4(y, steps), y0)
    assert_close(kiln, cpu, *_tolerance(np.float64))


@pytest.mark.requires_kiln
@pytest.mark.parametrize("start", range(0, len(F64_EDGES), 3))
def test_lorenz_rk4_f64_edge_values(start):
    with jax.enable_x64(True):
        y0 = np.array((F64_EDGES * 2)[start:start + 3])
        kiln, cpu = run_both(lambda y: lorenz_rk4(y, 3), y0)
    # No ulp bound past overflow: where values are infinite or NaN they must be where XLA:CPU has
    # them; finite values within the tolerance.
    assert_close(kiln, cpu, *_tolerance(np.float64))


@pytest.mark.requires_kiln
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("steps", [0, 1, 5])
def test_arrays_of_computed_scalars(dtype, steps):
    with jax.enable_x64(True):
        v = np.array([0.3, -1.25, 2.0, 0.5, -0.75, 1.5], dtype)
        kiln, cpu = run_both(lambda x: pairs_and_quads(x, steps), v)
    assert_close(kiln, cpu, *_tolerance(dtype))


@pytest.mark.requires_kiln
@pytest.mark.parametrize("m,e", [(1.3, 0.7), (0.0, 0.5), (np.pi, 0.9), (-2.0, 0.0), (100.0, 0.3),
                                 (np.nan, 0.5), (1.0, np.inf)])
@pytest.mark.parametrize("steps", [0, 1, 40])
def test_kepler_newton_fori_f64(m, e, steps):
    def solve(m, e):
        def newton(i, ea):
            f = ea - e * jnp.sin(ea) - m
            return ea - f / (1.0 - e * jnp.cos(ea))
        return lax.fori_loop(0, steps, newton, m)

    with jax.enable_x64(True):
        kiln, cpu = run_both(solve, np.float64(m), np.float64(e))
    assert_close(kiln, cpu, *_tolerance(np.float64))


def projectile(x0, v0, limit):
    def cond(s):
        i, x, _ = s
        return jnp.logical_and(i < limit, x[2] >= 0.0)

    def body(s):
        i, x, v = s
        dt = jnp.float32(1e-3)
        a = jnp.array([0.0, 0.0, -9.81], jnp.float32) - 0.02 * jnp.linalg.norm(v) * v
        v = v + dt * a
        return i + 1, x + dt * v, v
    return lax.while_loop(cond, body, (jnp.int32(0), x0, v0))


@pytest.mark.requires_kiln
@pytest.mark.parametrize("z0,limit", [(0.0, 20000), (-1.0, 20000), (0.0, 0), (0.0, 1),
                                      (0.0, 500)])
def test_projectile_while_int32_counter_f32_carries(z0, limit):
    """Lands after about 4,700 steps; starts below ground (exits at once); a limit of 0 (zero
    trips), 1 and 500 (stops on the counter)."""
    x0 = np.array([0.0, 0.0, z0], np.float32)
    v0 = np.array([30.0, 5.0, 40.0], np.float32)
    (ik, xk, vk), (ic, xc, vc) = run_both(lambda x, v: projectile(x, v, limit), x0, v0)
    # The landing step is decided by the sign of a float; an FMA's last bit could move it by one,
    # never more.
    assert ik.dtype == np.int32 and abs(int(ik) - int(ic)) <= (1 if limit == 20000 else 0)
    if int(ik) == int(ic):
        assert_close((xk, vk), (xc, vc), 1e-4, 1e-5)
    if z0 < 0:
        assert int(ik) == 0
        np.testing.assert_array_equal(xk, x0)
