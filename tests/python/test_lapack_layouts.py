"""LAPACK targets called as XLA tolerates them (kernels/lapack.h Relayout, kernels/custom_call.cc).

`jax.ffi.ffi_call("lapack_<x>..._ffi", ...)` with the default (row-major) operand and result
layouts, as JAX's ffi_test.py BatchPartitioningTest does: XLA hands the target the row-major bytes,
which it reads as column-major matrices, and its column-major output is read back row-major. Kiln
gives the CPU backend's results (tolerance kind "reduction", tolerances.py: f32 rtol/atol 1e-5,
f64 1e-13; pivots and info exactly).
A call whose operands do not match its target compiles (XLA checks a call's arguments when it
runs) and raises at execution, naming the target.
"""

from __future__ import annotations

import numpy as np
import pytest

import jax
import jax.numpy as jnp

from conftest import check_both, get_kiln_device

pytestmark = pytest.mark.requires_kiln


@pytest.fixture(autouse=True, scope="module")
def _cpu_lapack():
    from jax._src.lib import lapack
    lapack._lapack.initialize()  # the CPU backend's LAPACK FFI targets, as ffi_test.py does


def rng_matrix(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("shape", [(4, 5), (8, 4, 5), (2, 6, 3), (3, 3)])
def test_geqrf_row_major(shape):
    def f(x):
        tau = (*x.shape[:-2], min(x.shape[-2:]))
        return jax.ffi.ffi_call("lapack_sgeqrf_ffi",
                                (jax.ShapeDtypeStruct(x.shape, x.dtype),
                                 jax.ShapeDtypeStruct(tau, x.dtype)))(x)
    check_both(f, rng_matrix(shape), kind="reduction")


def test_getrf_row_major_f64():
    def f(x):
        return jax.ffi.ffi_call("lapack_dgetrf_ffi",
                                (jax.ShapeDtypeStruct(x.shape, x.dtype),
                                 jax.ShapeDtypeStruct(x.shape[:-1], np.int32),
                                 jax.ShapeDtypeStruct(x.shape[:-2], np.int32)))(x)
    with jax.enable_x64(True):
        check_both(f, rng_matrix((3, 5, 5), 1, np.float64), kind="reduction")


def test_mixed_layouts():
    # Column-major operand (JAX's own lowering's layout), results left row-major.
    def f(x):
        return jax.ffi.ffi_call("lapack_sgeqrf_ffi",
                                (jax.ShapeDtypeStruct(x.shape, x.dtype),
                                 jax.ShapeDtypeStruct(x.shape[:-1], x.dtype)),
                                input_layouts=[(0, 2, 1)])(x)
    check_both(f, rng_matrix((2, 3, 4), 2), kind="reduction")


def test_row_major_call_inside_a_program():
    def f(x):
        a, tau = jax.ffi.ffi_call("lapack_sgeqrf_ffi",
                                  (jax.ShapeDtypeStruct(x.shape, x.dtype),
                                   jax.ShapeDtypeStruct(x.shape[:-1], x.dtype)))(x * 2 + 1)
        return a.sum(-1) + tau
    check_both(f, rng_matrix((5, 4, 4), 3), kind="reduction")


def test_mismatched_call_compiles_and_raises_when_run():
    # ffi_test.py's test_effects_hlo: @lapack_sgetrf_ffi with no operands.
    def fun():
        jax.ffi.ffi_call("lapack_sgetrf_ffi", (), has_side_effect=True)()

    from jax._src import dispatch
    device = get_kiln_device()
    with jax.default_device(device):
        compiled = jax.jit(fun).lower().compile()
        try:
            with pytest.raises(Exception, match=r"lapack_sgetrf_ffi.*expected 1 operands"):
                compiled()
                jax.effects_barrier()
        finally:
            # The failed call's runtime token would raise again at every later barrier.
            dispatch.runtime_tokens.clear()
