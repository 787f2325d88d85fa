"""bf16 x bf16 matrix products (kernels/gemm_bf16.h: vdpbf16ps where the CPU has AVX512_BF16,
else widened to f32 for sgemm) against the CPU backend and a float64 reference: 2-D matmuls of
odd and large shapes with f32 (preferred_element_type) and bf16 results, transposed operands as
gradients contract them, batched einsums, and operands packed first (batch axis not leading, two
contracting axes). Each product of two bf16 values is exact in f32, so
the error is the f32 summation's: |got - ref| <= 2 K 2^-24 sum_k |a b|, plus half a bf16 ulp
(2^-8 relative) when the result is rounded to bf16. Kiln and CPU must each be within that bound
of the float64 reference, so within twice of each other."""

from __future__ import annotations

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax import lax

from conftest import run_both

RNG = np.random.default_rng(356)


def bf16(shape):
    return jnp.asarray(RNG.uniform(-2.0, 2.0, shape).astype(np.float32)).astype(jnp.bfloat16)


def bound(x, y, subscripts, k, out_dtype):
    """(float64 reference, allowed error) for einsum(subscripts, x, y) in bf16 with sum length k."""
    xd = np.asarray(x.astype(jnp.float32), dtype=np.float64)
    yd = np.asarray(y.astype(jnp.float32), dtype=np.float64)
    ref = np.einsum(subscripts, xd, yd)
    mag = np.einsum(subscripts, np.abs(xd), np.abs(yd))
    tol = 2.0 * k * 2.0**-24 * mag + 1e-30
    if out_dtype == jnp.bfloat16:
        tol = tol + 2.0**-8 * np.abs(ref) + 2.0**-8 * tol
    return ref, tol


def check(f, x, y, subscripts, k, out_dtype):
    kiln, cpu = run_both(f, x, y)
    assert kiln.dtype == cpu.dtype == np.dtype(out_dtype)
    ref, tol = bound(x, y, subscripts, k, out_dtype)
    got = kiln.astype(np.float64)
    want = cpu.astype(np.float64)
    assert got.shape == ref.shape
    err = np.abs(got - ref)
    assert (err <= tol).all(), f"kiln off the float64 reference by {err.max()} (allowed {tol.max()})"
    assert (np.abs(want - ref) <= tol).all(), "the CPU backend itself is outside the bound"
    assert (np.abs(got - want) <= 2 * tol).all()


SHAPES = [(1, 1, 1), (7, 33, 257), (1, 257, 1), (33, 7, 65), (64, 129, 40), (1024, 512, 768)]


@pytest.mark.parametrize("m,k,n", SHAPES)
@pytest.mark.parametrize("out", [jnp.float32, jnp.bfloat16])
def test_matmul(m, k, n, out):
    x, y = bf16((m, k)), bf16((k, n))

    def f(a, b):
        return jnp.matmul(a, b, preferred_element_type=out)

    check(f, x, y, "mk,kn->mn", k, out)


@pytest.mark.parametrize("m,k,n", [(33, 65, 17), (128, 257, 96)])
def test_transposed_operands(m, k, n):
    # A^T B (a weight gradient: contracting dims [0] x [0]) and A B^T ([1] x [1]).
    x, xt, y, yt = bf16((m, k)), bf16((k, m)), bf16((k, n)), bf16((n, k))

    def at_b(a, b):
        return lax.dot_general(a, b, (((0,), (0,)), ((), ())), preferred_element_type=jnp.float32)

    def a_bt(a, b):
        return lax.dot_general(a, b, (((1,), (1,)), ((), ())), preferred_element_type=jnp.float32)

    check(at_b, xt, y, "km,kn->mn", k, jnp.float32)
    check(a_bt, x, yt, "mk,nk->mn", k, jnp.float32)


@pytest.mark.parametrize("out", [jnp.float32, jnp.bfloat16])
def test_batched_einsum(out):
    x, y = bf16((4, 33, 65)), bf16((4, 65, 17))
    check(lambda a, b: jnp.einsum("bij,bjk->bik", a, b, preferred_element_type=out), x, y,
          "bij,bjk->bik", 65, out)
    q, kk = bf16((2, 4, 128, 64)), bf16((2, 4, 128, 64))
    check(lambda a, b: jnp.einsum("bhqd,bhkd->bhqk", a, b, preferred_element_type=out), q, kk,
          "bhqd,bhkd->bhqk", 64, out)


@pytest.mark.parametrize("out", [jnp.float32, jnp.bfloat16])
def test_packed_operands(out):
    x, y = bf16((33, 4, 65)), bf16((4, 65, 40))  # lhs batch axis not leading
    check(lambda a, b: jnp.einsum("ibj,bjk->bik", a, b, preferred_element_type=out), x, y,
          "ibj,bjk->bik", 65, out)
    x, y = bf16((40, 3, 7)), bf16((3, 7, 50))  # two contracting axes
    check(lambda a, b: jnp.einsum("ijk,jkl->il", a, b, preferred_element_type=out), x, y,
          "ijk,jkl->il", 21, out)
    x, y = bf16((5, 24, 9)), bf16((9, 31, 5))  # both packed: batch axes in the middle and last
    check(lambda a, b: jnp.einsum("imj,jni->imn", a, b, preferred_element_type=out), x, y,
          "imj,jni->imn", 9, out)
    x, y = bf16((3, 24, 7)), bf16((3, 7, 50))  # lhs contracting axes apart: packed
    check(lambda a, b: jnp.einsum("jmk,jkn->mn", a, b, preferred_element_type=out), x, y,
          "jmk,jkn->mn", 21, out)
