"""complex64 members of fused runs as native code (codegen/fused_complex.cc: add, subtract, multiply,
negate, abs, select, compare eq/ne, and f32 compares, on pairs of f32 lanes) against XLA:CPU.

The runs here have 256 elements or more (native code's threshold) and tails of several lengths;
tests/cpp/codegen_fused_complex_test.cc checks the same members against Kiln's interpreter bit for
bit. Inputs: every pair of 12 special values (signed zeros, infinities, NaN, the largest finite
values, 1e-30, 3e19) and random values of every scale from 1e-38 to 1e38. Tolerances as
test_complex_arith.py: finite parts within rtol 4e-6 of the element's magnitude (or the smallest
normal: XLA:CPU flushes subnormal results), the same NaN and infinity positions; predicates and
escape counts exactly.
"""

from __future__ import annotations

import numpy as np
import pytest

import jax
import jax.numpy as jnp

from conftest import run_both
from test_complex_arith import assert_same_class_and_close, pairs_of_specials, random_complex

F32 = np.finfo(np.float32)


def step(z, c):
    """One escape-time step and the values around it, one fused run."""
    a = jnp.abs(z)
    inside = a <= 2.0
    nz = jnp.where(inside, z * z + c, z)
    return nz, a, inside, jnp.abs(nz) < 1.5, z * c - nz, -(z + c), z == c, z != c


def check(k, c):
    for kk, cc in zip(k, c):
        if kk.dtype == np.bool_:
            assert np.array_equal(kk, cc)
        else:
            assert_same_class_and_close(kk, cc)


def test_special_pairs():
    z, c = pairs_of_specials()  # 20736 elements
    check(*run_both(step, z, c))


@pytest.mark.parametrize("n", [256, 257, 263, 1029, 4099])
def test_random_every_scale(n):
    z, c = random_complex(n, 1), random_complex(n, 2)
    c[::5] = z[::5]  # equal pairs for == / !=
    check(*run_both(step, z, c))


@pytest.mark.parametrize("scale", [1e38, 1e30, 1e-19, 1e-30])
def test_abs_does_not_overflow_or_underflow(scale):
    """|re + i im| with parts whose squares overflow or underflow f32 (hypot semantics)."""
    rng = np.random.default_rng(3)
    z = np.empty(1000, np.complex64)
    z.real = (rng.uniform(0.5, 2.0, 1000) * scale).astype(np.float32)
    z.imag = (rng.uniform(-1.5, 1.5, 1000) * scale).astype(np.float32)
    ks, cs = run_both(lambda z: (jnp.abs(z * (1 + 0j)), jnp.abs(-z)), z)
    want = np.hypot(z.real.astype(np.float64), z.imag.astype(np.float64))
    for k, c in zip(ks, cs):
        assert np.all(np.isfinite(k)) and np.all(k > 0)
        assert_same_class_and_close(k, c)
        np.testing.assert_allclose(k, want, rtol=1e-6)


def test_signed_zeros_and_nan_compares():
    parts = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1.0], np.float32)
    re, im = np.meshgrid(parts, parts)
    z = np.empty(re.size, np.complex64)
    z.real, z.imag = re.ravel(), im.ravel()
    a, b = np.meshgrid(z, z)
    a, b = np.tile(a.ravel(), 2), np.tile(b.ravel(), 2)  # 2592 elements
    k, c = run_both(lambda a, b: (a == b, a != b, jnp.where(a == b, a * b, -a),
                                  jnp.abs(a) <= jnp.abs(b)), a, b)
    check(k, c)


@pytest.mark.parametrize("n", [256, 259, 1031])
def test_complex128_chain(n):
    """complex128 add, subtract, multiply, negate and abs in one f64 run (no predicates there):
    random values of scales 1e-150 to 1e150 and the special pairs, against XLA:CPU (rtol 1e-14 of
    the element's magnitude, the same NaN and infinity positions)."""
    with jax.enable_x64(True):
        rng = np.random.default_rng(n)
        z = (rng.standard_normal(n) * 10.0 ** rng.uniform(-150, 150, n)
             + 1j * rng.standard_normal(n) * 10.0 ** rng.uniform(-150, 150, n))
        w = (rng.standard_normal(n) + 1j * rng.standard_normal(n))
        sa, sb = pairs_of_specials()

        def chain(z, w):
            y = z * w - (-z + w)
            return y, jnp.abs(y) + jnp.abs(z), z * z + w
        for x, y in ((z, w), (sa.astype(np.complex128), sb.astype(np.complex128))):
            ks, cs = run_both(chain, x, y)
            for k, c in zip(ks, cs):
                assert k.dtype == c.dtype and k.dtype in (np.complex128, np.float64)
                kk, cc = np.asarray(k, np.complex128), np.asarray(c, np.complex128)
                with np.errstate(all="ignore"):
                    scale = np.abs(cc)
                for pk, pc in ((kk.real, cc.real), (kk.imag, cc.imag)):
                    assert np.array_equal(np.isnan(pk), np.isnan(pc))
                    assert np.array_equal(np.isinf(pk), np.isinf(pc))
                    fin = np.isfinite(pc) & np.isfinite(scale)
                    err = np.abs(pk[fin] - pc[fin])
                    assert np.all(err <= np.maximum(1e-14 * scale[fin],
                                                    np.finfo(np.float64).tiny))
