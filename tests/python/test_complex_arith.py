"""complex64 arithmetic as XLA:CPU computes it (kernels/complex_arith.h, complex_simd.h): multiply
by the textbook formula (no C99 Annex G recovery of infinities), abs as max * sqrt(1 + (min/max)^2)
(no overflow for large parts; a NaN part gives NaN even beside an infinite one), divide by Smith's
algorithm with XLA:CPU's limits where both parts come out NaN (zero divisor, infinite dividend,
infinite divisor). Kiln runs multiply, divide and abs 8 (AVX2) or 4 (SSE2) elements at a time and
the rest one by one, so sizes take both paths.

Against JAX's CPU backend (on CPUs with FMA, where both use the FMA forms; with
KILN_COMPLEX_SIMD=sse2 Kiln uses the unfused forms, which XLA:CPU uses only on CPUs without FMA,
and the special pairs of multiply and divide differ): every pair of 12 special values (zeros, infinities, NaNs, extremes) in
every op, random values of every scale from 1e-38 to 1e38, and the users' loop programs that
motivated the vector code (an escape-time iteration, a rotation scan). Tolerances: finite results
within rtol 4e-6 (a few ulp: both sides round each operation, XLA:CPU may contract into FMAs), the
same NaN / infinity positions; the escape counts by at most one (a rounding near the set's edge).
"""

from __future__ import annotations

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax import lax

from conftest import run_both

SIZES = (3, 8, 13, 1029)
F32 = np.finfo(np.float32)
SPECIALS = np.array([0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, np.nan, F32.max, -F32.max, F32.tiny,
                     1e-30, 3e19], np.float32)


def pairs_of_specials():
    """Every (re, im) of two specials, against every other: a and b of n*n elements each."""
    re, im = np.meshgrid(SPECIALS, SPECIALS)
    z = np.empty(re.size, np.complex64)
    z.real, z.imag = re.ravel(), im.ravel()  # (re + 1j * im would make inf * 1j's NaN)
    a, b = np.meshgrid(z, z)
    return a.ravel(), b.ravel()


def random_complex(n, seed, scale_exp=38):
    rng = np.random.default_rng(seed)
    parts = rng.standard_normal((2, n)) * 10.0 ** rng.uniform(-scale_exp, scale_exp, (2, n))
    return (parts[0] + 1j * parts[1]).astype(np.complex64)


def assert_same_class_and_close(k, c, rtol=4e-6):
    """Same NaN positions, same infinities, finite values within rtol of the element's magnitude
    (a part much smaller than the other carries the larger one's roundings) or of the smallest
    normal (XLA:CPU flushes subnormal results to zero)."""
    k, c = np.asarray(k), np.asarray(c)
    assert k.dtype == c.dtype and k.shape == c.shape
    parts = [(k.real, c.real), (k.imag, c.imag)] if np.iscomplexobj(k) else [(k, c)]
    with np.errstate(all="ignore"):
        scale = np.abs(c.astype(np.complex128))
    for pk, pc in parts:
        nk, nc = np.isnan(pk), np.isnan(pc)
        assert np.array_equal(nk, nc), f"NaN at {np.flatnonzero(nk != nc)[:10]}"
        ik, ic = np.isinf(pk), np.isinf(pc)
        assert np.array_equal(ik, ic) and np.array_equal(pk[ik], pc[ic]), \
            f"inf at {np.flatnonzero((ik != ic) | ((pk != pc) & ik))[:10]}"
        fin = ~(nk | ik) & np.isfinite(scale)
        err = np.abs(pk[fin].astype(np.float64) - pc[fin])
        bound = np.maximum(rtol * scale[fin], float(F32.tiny))
        assert np.all(err <= bound), f"off by {np.max(err / bound)} of the bound"


BINARY = {"multiply": jnp.multiply, "divide": jnp.divide, "add": jnp.add,
          "subtract": jnp.subtract}
UNARY = {"abs": jnp.abs, "conj": jnp.conj, "real": jnp.real, "imag": jnp.imag,
         "negate": jnp.negative}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_special_pairs(name):
    a, b = pairs_of_specials()
    if name == "divide":
        # XLA:CPU flushes subnormals to zero, Kiln keeps them: where Smith's ratio of the
        # divisor's parts is subnormal (F32.max against 1), an infinite dividend gives inf * t on
        # Kiln, inf * 0 = NaN on XLA:CPU. Those pairs are left out.
        with np.errstate(all="ignore"):
            lo = np.minimum(np.abs(b.real), np.abs(b.imag))
            hi = np.maximum(np.abs(b.real), np.abs(b.imag))
            ratio = lo / hi
        keep = ~((ratio > 0) & (ratio < F32.tiny))
        a, b = a[keep], b[keep]
    k, c = run_both(BINARY[name], a, b)
    assert_same_class_and_close(k, c)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_specials(name):
    a, _ = pairs_of_specials()
    k, c = run_both(UNARY[name], a[:144 * 13])
    assert_same_class_and_close(k, c)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_random(name, n):
    a, b = random_complex(n, 1), random_complex(n, 2)
    if name in ("multiply", "divide"):  # keep the products' exponents in range
        a, b = random_complex(n, 1, 18), random_complex(n, 2, 18)
    k, c = run_both(BINARY[name], a, b)
    assert_same_class_and_close(k, c)


@pytest.mark.parametrize("n", SIZES)
def test_abs_random_and_large(n):
    z = random_complex(n, 3)
    k, c = run_both(jnp.abs, z)
    assert_same_class_and_close(k, c)
    # Large parts whose squares overflow f32: still finite, the hypot within 2 ulp.
    big = (np.full(n, 2e38, np.float32) + 1j * np.linspace(-1e38, 1e38, n, dtype=np.float32))
    k, c = run_both(jnp.abs, big.astype(np.complex64))
    assert np.all(np.isfinite(k))
    assert_same_class_and_close(k, c)
    np.testing.assert_allclose(k, np.hypot(big.real.astype(np.float64), big.imag), rtol=2.5e-7)


@pytest.mark.parametrize("n", SIZES)
def test_fused_chain(n):
    """A fused run of complex members: multiply, divide by abs, conj, real / imag, where."""
    def f(z, w):
        y = z * w
        u = y / jnp.abs(y).astype(jnp.complex64)
        return jnp.where(jnp.abs(z) <= 1.0, jnp.conj(u) + w, u - z), jnp.real(u) * jnp.imag(y)
    z, w = random_complex(n, 4, 3), random_complex(n, 5, 3)
    k, c = run_both(f, z, w)
    for a, b in zip(k, c):
        assert_same_class_and_close(a, b, rtol=1e-5)


def test_mandelbrot_fori_loop():
    def escape(c):
        def body(i, state):
            z, count = state
            z = jnp.where(jnp.abs(z) <= 2.0, z * z + c, z)
            return z, count + (jnp.abs(z) <= 2.0)
        return lax.fori_loop(0, 50, body, (jnp.zeros_like(c), jnp.zeros(c.shape, jnp.int32)))[1]
    x = np.linspace(-2.0, 0.6, 67, dtype=np.float32)
    y = np.linspace(-1.2, 1.2, 45, dtype=np.float32)
    k, c = run_both(escape, (x[None, :] + 1j * y[:, None]).astype(np.complex64))
    assert np.max(np.abs(k - c)) <= 1
    assert np.mean(k != c) < 0.01


def test_rotation_scan():
    def run(z0, w):
        def step(z, _):
            z = z * w
            return z / jnp.abs(z), jnp.real(z).sum()
        return lax.scan(step, z0, None, length=300)
    z0 = random_complex(259, 6, 1)
    k, c = run_both(run, z0, np.complex64(np.exp(0.01j)))
    np.testing.assert_allclose(k[0], c[0], rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(k[1], c[1], rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("n", (1, 7, 8, 1029))
def test_vdot(n):
    """A complex64 vector-vector dot_general (jnp.vdot): Kiln's AVX2 loop, 8 lanes of partial
    sums, within a few ulp of the sum of magnitudes of XLA:CPU's."""
    z, w = random_complex(n, 7, 2), random_complex(n, 8, 2)
    k, c = run_both(jnp.vdot, z, w)
    bound = 8 * n * np.finfo(np.float32).eps * np.sum(np.abs(z.astype(np.complex128) * w))
    assert abs(complex(k) - complex(c)) <= bound
    exact = np.vdot(z.astype(np.complex128), w.astype(np.complex128))
    assert abs(complex(k) - exact) <= bound


@pytest.mark.parametrize("name", ("multiply", "divide", "abs"))
def test_complex128(name):
    """complex128 takes 4 elements a step (AVX2+FMA) and the scalar functions for the rest: random
    values of every scale and the special pairs, against XLA:CPU."""
    with jax.enable_x64(True):
        rng = np.random.default_rng(9)
        n = 1031
        a = (rng.standard_normal(n) * 10.0 ** rng.uniform(-150, 150, n)
             + 1j * rng.standard_normal(n) * 10.0 ** rng.uniform(-150, 150, n))
        b = (rng.standard_normal(n) * 10.0 ** rng.uniform(-150, 150, n)
             + 1j * rng.standard_normal(n) * 10.0 ** rng.uniform(-150, 150, n))
        sa, sb = pairs_of_specials()
        sa, sb = sa.astype(np.complex128), sb.astype(np.complex128)
        if name == "divide":  # as in test_binary_special_pairs: no subnormal ratios
            with np.errstate(all="ignore"):
                lo = np.minimum(np.abs(sb.real), np.abs(sb.imag))
                hi = np.maximum(np.abs(sb.real), np.abs(sb.imag))
                keep = ~((lo / hi > 0) & (lo / hi < np.finfo(np.float64).tiny))
            sa, sb = sa[keep], sb[keep]
        f = {"multiply": jnp.multiply, "divide": jnp.divide, "abs": lambda x, y: jnp.abs(x)}[name]
        for x, y in ((a, b), (sa, sb)):
            k, c = run_both(f, x, y)
            assert k.dtype == c.dtype and k.dtype in (np.complex128, np.float64)
            kk, cc = np.asarray(k, np.complex128), np.asarray(c, np.complex128)
            for pk, pc in ((kk.real, cc.real), (kk.imag, cc.imag)):
                assert np.array_equal(np.isnan(pk), np.isnan(pc))
                fin = np.isfinite(pc) & np.isfinite(np.abs(cc))
                assert np.array_equal(pk[~np.isnan(pk) & ~fin], pc[~np.isnan(pc) & ~fin])
                err = np.abs(pk[fin] - pc[fin])
                assert np.all(err <= np.maximum(1e-14 * np.abs(cc[fin]), 1e-300))


def test_julia_while_loop():
    """A Julia set written as a user would: a while_loop whose condition reads the carry."""
    def julia(z0):
        c = jnp.complex64(-0.8 + 0.156j)

        def cond(s):
            z, n, i = s
            return (i < 64) & jnp.any(jnp.abs(z) <= 2.0)

        def body(s):
            z, n, i = s
            inside = jnp.abs(z) <= 2.0
            return jnp.where(inside, z * z + c, z), n + inside.astype(jnp.int32), i + 1
        return lax.while_loop(cond, body, (z0, jnp.zeros(z0.shape, jnp.int32), 0))[1]
    x = np.linspace(-1.6, 1.6, 128, dtype=np.float32)
    y = np.linspace(-1.0, 1.0, 96, dtype=np.float32)
    k, c = run_both(julia, (x[None, :] + 1j * y[:, None]).astype(np.complex64))
    assert np.max(np.abs(k - c)) <= 1
    assert np.mean(k != c) < 0.01


def test_phase_rotation_scan_with_vdot():
    """A phase rotation of complex64[1024] in a scan, its energy by jnp.vdot each step."""
    def rotate(z, k):
        ph = jnp.exp(1j * k * jnp.arange(z.shape[0], dtype=jnp.float32) * 0.001)

        def step(z, _):
            z = z * ph
            return z, jnp.vdot(z, z).real
        return lax.scan(step, z, None, length=100)
    z = random_complex(1024, 10, 1)
    k, c = run_both(rotate, z, np.float32(3.0))
    np.testing.assert_allclose(k[0], c[0], rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(k[1], c[1], rtol=1e-3)


@pytest.mark.parametrize("constant_first", [True, False])
def test_product_with_a_constant_in_either_order(constant_first):
    # XLA moves a commutative op's constant operand to the right before computing; a complex
    # product's imaginary part (one FMA) is not symmetric, so Kiln takes XLA's order: the same
    # bits whichever side the program writes the constant on.
    x = random_complex(1029, 11, scale_exp=3)
    c = np.complex64(1.5 - 2j)
    f = (lambda z: jnp.asarray(c) * z) if constant_first else (lambda z: z * jnp.asarray(c))
    kiln, cpu = run_both(f, x)
    np.testing.assert_array_equal(np.asarray(kiln).view(np.uint32), np.asarray(cpu).view(np.uint32))
