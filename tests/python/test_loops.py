"""Loops as the engine runs them (engine/flat_program.h, kernels/control_flow.cc): the condition and
body with their calls inlined and operands resolved once per loop execution, carries alternating
between two buffer sets, and carries updated in place when the body only writes a slice of them.
Each program runs on Kiln and on JAX's CPU backend; results must agree (tolerances.py).
"""

from __future__ import annotations

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax import lax

from conftest import check_both
from opdata import F32, F64, rand, x64_if


def test_scan_stacked_outputs_written_in_place():
    # ys is a dynamic_update_slice of a carry nothing else reads: one buffer, a row per step.
    def f(y0, xs):
        return lax.scan(lambda c, x: (c * 0.5 + x, jnp.stack([c.sum(), x.max()])), y0, xs)
    check_both(f, rand(F32, (4,)), rand(F32, (37, 4)), kind="reduction")


def test_scan_reverse_and_several_stacked_outputs():
    def f(y0, xs):
        def body(c, x):
            c = jnp.tanh(c + x)
            return c, (c, c * 2.0, x.astype(jnp.int32))
        return lax.scan(body, y0, xs, reverse=True)
    check_both(f, rand(F32, (3,)), rand(F32, (9, 3)) * 3, kind="transcendental")


def test_carry_read_beside_its_update_is_not_updated_in_place():
    # The body returns the old array next to its updated copy: the old one must stay intact.
    def f(a):
        def body(i, c):
            arr, old = c
            return arr.at[i].set(arr[i - 1] * 2.0 + 1.0), arr
        return lax.fori_loop(1, 6, body, (a, jnp.zeros_like(a)))
    check_both(f, rand(F32, (8,)))


def test_carry_updated_from_its_own_elements():
    # dynamic_slice and dynamic_update_slice of the same carry: two readers, two buffers.
    def f(a):
        return lax.fori_loop(1, a.shape[0], lambda i, x: x.at[i].set(x[i - 1] + x[i]), a)
    check_both(f, rand(F32, (16,)), kind="reduction")


def test_update_in_place_with_zero_trips_returns_input():
    def f(a, n):
        return lax.fori_loop(0, n, lambda i, x: x.at[i].set(7.0), a)
    check_both(f, rand(F32, (5,)), np.int32(0))
    check_both(f, rand(F32, (5,)), np.int32(3))


def test_nested_calls_inlined_in_body():
    inner = jax.jit(lambda x, y: jnp.sin(x) * y + 1.0)
    middle = jax.jit(lambda x: inner(x, x * 0.5) - inner(x * 2.0, 0.25))

    def f(x, w):
        def body(i, c):
            return middle(c) @ w + i.astype(jnp.float32) * 1e-3
        return lax.fori_loop(0, 12, body, x)
    check_both(f, rand(F32, (2, 3)), rand(F32, (3, 3)) * 0.5, kind="transcendental")


def test_scan_inside_scan_with_captures():
    w = rand(F32, (4, 4), seed=3) * 0.3

    def f(h0, xs, w):
        def outer(h, x):
            def inner(g, k):
                g = jnp.tanh(g @ w + x * k)
                return g, g.sum()
            h, sums = lax.scan(inner, h, jnp.arange(3, dtype=jnp.float32))
            return h, sums
        return lax.scan(outer, h0, xs)
    check_both(f, rand(F32, (2, 4)), rand(F32, (5, 2, 4)), w, kind="transcendental")


@pytest.mark.parametrize("dtype", [F32, F64], ids=lambda d: np.dtype(d).name)
def test_scalar_fori_loop_many_iterations(dtype):
    with x64_if(dtype):
        check_both(lambda x: lax.fori_loop(0, 5000, lambda i, c: c * 0.999 + 1.0, x),
                   np.asarray(1.0, dtype), kind="reduction")


def test_while_loop_with_array_condition_and_passthrough_carry():
    def f(y0, k):
        def cond(s):
            return (s[0] < 10.0) & (jnp.max(jnp.abs(s[1])) < 1e6)

        def body(s):
            t, y, kk = s
            return t + 0.25, y * kk + jnp.sin(t), kk
        return lax.while_loop(cond, body, (jnp.float32(0.0), y0, k))
    check_both(f, rand(F32, (6,)), np.float32(1.1), kind="transcendental")


@pytest.mark.requires_kiln
def test_error_inside_an_inlined_call_names_the_loop(kiln_device):
    def boom(x):
        raise ValueError("callback failed on purpose")

    inner = jax.jit(lambda x: jax.pure_callback(boom, jax.ShapeDtypeStruct((), jnp.float32), x))
    f = jax.jit(lambda x: lax.fori_loop(0, 3, lambda i, c: inner(c) + c, x))
    with pytest.raises(Exception) as info:
        jax.block_until_ready(f(jax.device_put(np.float32(1.0), kiln_device)))
    text = str(info.value)
    assert "callback failed on purpose" in text
    assert "in the body of stablehlo.while" in text
    # The program has a host callback, so JAX also keeps its completion event as the device's
    # runtime token, which holds the same error: consumed here, or JAX raises it again at exit
    # (where the CPU backend's token holds none: a known difference, docs/callbacks.md).
    from jax._src import dispatch
    with pytest.raises(Exception, match="callback failed on purpose"):
        dispatch.runtime_tokens.block_until_ready()
    dispatch.runtime_tokens.clear()
