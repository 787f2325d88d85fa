"""Complex divide, real, imag, complex, conj and real-to-complex converts in fused runs' native code
(codegen/fused_complex.cc, fused_complex_divide.cc: complex64 beside f32 members, complex128 beside
f64 ones) against XLA:CPU.

Each program is one fused run of 256 elements or more (native code's threshold) with tails of
several lengths; tests/cpp/codegen_fused_complex_parts_test.cc checks the same members against
Kiln's interpreter bit for bit. Inputs: every pair of 12 special values (signed zeros,
infinities, NaN, the largest finite values, the smallest normal, 1e-30, 3e19) as dividend and
divisor, and random values of every scale. Tolerances as test_complex_arith.py: finite parts
within rtol 4e-6 (complex128: 1e-14) of the element's magnitude or the smallest normal, the same
NaN and infinity positions. Left out as there: quotients whose divisor's part ratio is subnormal
(XLA:CPU flushes it to zero, Kiln keeps it).
"""

from __future__ import annotations

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax import lax

from conftest import run_both
from test_complex_arith import assert_same_class_and_close, pairs_of_specials, random_complex

F32 = np.finfo(np.float32)


def quotient_parts(a, b, x):
    """One fused run: a divide, its parts, its conjugate, and complex values made from reals."""
    q = a / b
    re, im = jnp.real(q), jnp.imag(q)
    return (q, jnp.conj(q), re - im, lax.complex(im, re * 0.5), q + x.astype(q.dtype),
            (a * b) / (q + 1))


def keep_normal_ratios(a, b):
    with np.errstate(all="ignore"):
        lo = np.minimum(np.abs(b.real), np.abs(b.imag))
        hi = np.maximum(np.abs(b.real), np.abs(b.imag))
        ratio = lo / hi
        keep = ~((ratio > 0) & (ratio < F32.tiny))
        # (a * b) / (q + 1): the same rule for the second quotient's divisor.
        q1 = (a.astype(np.complex128) / b) + 1
        lo = np.minimum(np.abs(q1.real), np.abs(q1.imag))
        hi = np.maximum(np.abs(q1.real), np.abs(q1.imag))
        ratio = lo / hi
        keep &= ~((ratio > 0) & (ratio < 1e-30))
    return a[keep], b[keep]


def check(k, c, rtol=4e-6):
    for kk, cc in zip(k, c):
        assert_same_class_and_close(kk, cc, rtol)


def test_special_pairs_complex64():
    a, b = keep_normal_ratios(*pairs_of_specials())
    x = np.real(a).astype(np.float32)
    k, c = run_both(lambda a, b, x: quotient_parts(a, b, x)[:5], a, b, x)
    check(k, c)


def test_signed_zeros_and_infinities_in_division():
    """The limits: zero divisors of both signs, infinite dividends over finite divisors, finite
    over infinite; the quotient's signs and classes as XLA:CPU's."""
    parts = np.array([0.0, -0.0, 1.0, -3.0, np.inf, -np.inf, np.nan], np.float32)
    re, im = np.meshgrid(parts, parts)
    z = np.empty(re.size, np.complex64)
    z.real, z.imag = re.ravel(), im.ravel()
    a, b = np.meshgrid(z, z)
    a, b = np.tile(a.ravel(), 2), np.tile(b.ravel(), 2)  # 4802 elements
    k, c = run_both(lambda a, b: (a / b, jnp.conj(a / b), jnp.real(a / b)), a, b)
    check(k, c)
    zero = k[0][np.isfinite(k[0].real) & (k[0].real == 0)].real
    czero = c[0][np.isfinite(c[0].real) & (c[0].real == 0)].real
    assert np.array_equal(np.signbit(zero), np.signbit(czero))


@pytest.mark.parametrize("n", [256, 257, 263, 1029, 4099])
def test_random_every_scale_complex64(n):
    a, b = random_complex(n, 11, 18), random_complex(n, 12, 18)
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    check(*run_both(quotient_parts, a, b, x))


@pytest.mark.parametrize("n", [256, 259, 1031])
def test_complex128(n):
    with jax.enable_x64(True):
        a, b = keep_normal_ratios(*pairs_of_specials())
        a, b = a.astype(np.complex128), b.astype(np.complex128)
        x = np.real(a)
        k, c = run_both(lambda a, b, x: quotient_parts(a, b, x)[:5], a, b, x)
        check(k, c, 1e-14)
        rng = np.random.default_rng(n)
        a = rng.standard_normal(n) * 10.0 ** rng.uniform(-150, 150, n) + 1j * rng.standard_normal(n)
        b = rng.standard_normal(n) + 1j * rng.standard_normal(n) * 10.0 ** rng.uniform(-150, 150, n)
        x = rng.standard_normal(n)
        check(*run_both(quotient_parts, a, b, x), 1e-14)


def test_phasor_chain():
    """bench's u_phasor_chain: a * exp(1j * theta), the interference with the conjugate, power."""
    rng = np.random.default_rng(5)
    theta = (rng.standard_normal(4099) * np.pi).astype(np.float32)
    a = (rng.standard_normal(4099) + 1j * rng.standard_normal(4099)).astype(np.complex64)

    def run(theta, a):
        s = a * jnp.exp(1j * theta)
        field = s + 0.5 * jnp.conj(s) - a
        return jnp.abs(field) ** 2 + jnp.real(s * a), field / (s + 2)
    (kp, kq), (cp, cq) = run_both(run, theta, a)
    # exp is libm's on Kiln, XLA's own on XLA:CPU (a few ulp apart), and the power is a sum of
    # terms of both signs: within 1e-5 of the terms' size.
    np.testing.assert_allclose(kp, cp, rtol=0, atol=1e-5 * np.max(np.abs(cp)))
    assert_same_class_and_close(kq, cq, 2e-5)
