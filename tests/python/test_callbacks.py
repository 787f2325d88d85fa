"""Host callbacks on Kiln vs JAX's CPU backend: jax.pure_callback, io_callback (ordered and not) and
jax.debug.callback / jax.debug.print inside jit, scan, while_loop, cond and vmap; every dtype the
callback can see; tokens of ordered effects at @main; errors raised by a callback or by its
results; many dispatches without blocking. Results are compared exactly (the callbacks are numpy
code run on the same inputs), side effects by the sequence of values they saw.
"""

from __future__ import annotations

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import io_callback

from conftest import SELFCHECK, get_cpu_device, get_kiln_device, run_both

pytestmark = pytest.mark.skipif(SELFCHECK, reason="callbacks on a second CPU device are JAX's own")


def assert_same(kiln, cpu):
    for k, c in zip(jax.tree_util.tree_leaves(kiln), jax.tree_util.tree_leaves(cpu)):
        assert k.dtype == c.dtype and k.shape == c.shape
        np.testing.assert_array_equal(k, c)


def effects_on(f, args, device):
    """Runs jit(f) on `device`, returns (results, the log its callbacks appended to)."""
    log: list = []
    out = jax.jit(f(log))(*jax.device_put(args, device))
    out = jax.block_until_ready(out)
    jax.effects_barrier()
    return jax.tree_util.tree_map(np.asarray, out), log


def same_effects(f, *args):
    out_k, log_k = effects_on(f, args, get_kiln_device())
    out_c, log_c = effects_on(f, args, get_cpu_device())
    assert_same(out_k, out_c)
    assert len(log_k) == len(log_c)
    for a, b in zip(log_k, log_c):
        np.testing.assert_array_equal(a, b)
    return log_k


DTYPES = [np.float32, np.float64, np.int8, np.uint16, np.int32, np.int64, np.bool_,
          np.complex64, jnp.bfloat16, np.float16]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_pure_callback_dtypes(dtype):
    with jax.enable_x64(np.dtype(dtype).itemsize == 8 or dtype == np.complex64):
        x = (np.arange(12) % 5).astype(dtype).reshape(3, 4)

        def f(x):
            spec = (jax.ShapeDtypeStruct(x.shape, x.dtype), jax.ShapeDtypeStruct((4,), x.dtype))
            a, b = jax.pure_callback(lambda v: (v[::-1].copy(), v[0].copy()), spec, x)
            return a, b, x

        kiln, cpu = run_both(f, x)
        assert_same(kiln, cpu)


def test_pure_callback_scalars_and_empty_arrays():
    def f(x):
        spec = (jax.ShapeDtypeStruct((), np.float32), jax.ShapeDtypeStruct((0, 3), np.float32))
        s, e = jax.pure_callback(lambda v: (np.float32(v.sum()), np.zeros((0, 3), np.float32)),
                                 spec, x)
        return s * 2, e, jax.pure_callback(lambda: np.int32(7), jax.ShapeDtypeStruct((), np.int32))

    kiln, cpu = run_both(f, np.arange(5, dtype=np.float32))
    assert_same(kiln, cpu)


@pytest.mark.parametrize("method", ["sequential", "expand_dims", "broadcast_all"])
def test_pure_callback_under_vmap(method):
    def f(x):
        cb = lambda v: np.cumsum(v, axis=-1).astype(np.float32)
        g = lambda row: jax.pure_callback(cb, jax.ShapeDtypeStruct(row.shape, row.dtype), row,
                                          vmap_method=method)
        return jax.vmap(g)(x)

    kiln, cpu = run_both(f, np.arange(12, dtype=np.float32).reshape(3, 4))
    assert_same(kiln, cpu)


def test_pure_callback_in_control_flow():
    def f(x):
        square = lambda v: jax.pure_callback(lambda a: a * a, jax.ShapeDtypeStruct((), v.dtype), v)
        scanned = lax.scan(lambda c, v: (c + square(v), square(c)), 0.0, x)
        looped = lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] + square(c[1])),
                                (0, 1.0))
        branched = lax.cond(x[0] > 0, lambda: square(x[1]), lambda: -square(x[2]))
        return scanned, looped, branched

    kiln, cpu = run_both(f, np.array([0.5, 1.5, 2.0, -1.0], np.float32))
    assert_same(kiln, cpu)


def test_pure_callback_gradient_with_custom_jvp():
    @jax.custom_jvp
    def sin(x):
        return jax.pure_callback(np.sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x)

    sin.defjvp(lambda p, t: (sin(p[0]), jax.pure_callback(np.cos, jax.ShapeDtypeStruct(
        p[0].shape, p[0].dtype), p[0]) * t[0]))
    kiln, cpu = run_both(jax.grad(lambda x: sin(x).sum()), np.linspace(0, 1, 5, dtype=np.float32))
    assert_same(kiln, cpu)


@pytest.mark.parametrize("ordered", [False, True])
def test_io_callback_side_effects(ordered):
    def f(log):
        def record(v):
            log.append(np.asarray(v))
            return np.asarray(v * 2)

        def fn(x):
            spec = jax.ShapeDtypeStruct((), x.dtype)
            first = io_callback(record, spec, x.sum(), ordered=ordered)

            def body(c, v):
                return c + io_callback(record, spec, v, ordered=ordered), None

            total, _ = lax.scan(body, first, x)
            return total

        return fn

    log = same_effects(f, np.arange(5, dtype=np.float32))
    assert len(log) == 6


def test_ordered_io_callback_keeps_order_across_calls():
    def f(log):
        def fn(x):
            io_callback(lambda v: log.append(np.asarray(v)), None, x, ordered=True)
            return x + 1

        def many(x):
            for _ in range(3):
                x = jax.jit(fn)(x)
            return x

        return many

    log = same_effects(f, np.float32(1))
    assert [float(v) for v in log] == [1.0, 2.0, 3.0]


def test_debug_callback_and_print(capfd):
    def f(log):
        def fn(x):
            jax.debug.callback(lambda v: log.append(np.asarray(v)), x)
            jax.debug.print("kiln-debug-print {} and {y}", x.sum(), y=x[0])
            lax.fori_loop(0, 3, lambda i, c: (jax.debug.print("step {}", i), c)[1], 0)
            return x * 3

        return fn

    same_effects(f, np.arange(3, dtype=np.float32))
    captured = capfd.readouterr().out
    # Once per backend, in the same words.
    assert captured.count("kiln-debug-print 3.0 and 0.0") == 2, captured
    assert captured.count("step 2") == 2, captured


def test_callback_exception_reaches_the_caller():
    def bad(v):
        raise ValueError("callback says no")

    f = jax.jit(lambda x: jax.pure_callback(bad, jax.ShapeDtypeStruct(x.shape, x.dtype), x))
    x = jax.device_put(np.ones(3, np.float32), get_kiln_device())
    with pytest.raises(Exception, match="callback says no"):
        jax.block_until_ready(f(x))
    # The device is still usable.
    np.testing.assert_array_equal(np.asarray(jax.jit(lambda x: x + 1)(x)), np.full(3, 2.0))


@pytest.mark.parametrize("result,message", [
    (np.zeros(4, np.float32), "Incorrect output shape"),
    (np.zeros(3, np.int32), "Incorrect output dtype"),
])
def test_callback_with_wrong_results_is_an_error(result, message):
    f = jax.jit(lambda x: jax.pure_callback(lambda v: result, jax.ShapeDtypeStruct((3,),
                                                                                  np.float32), x))
    with pytest.raises(Exception, match=message):
        jax.block_until_ready(f(jax.device_put(np.ones(3, np.float32), get_kiln_device())))


def test_many_dispatches_without_blocking():
    count = [0]

    def bump(v):
        count[0] += 1
        return np.asarray(v + 1, np.float32)

    f = jax.jit(lambda x: io_callback(bump, jax.ShapeDtypeStruct((), np.float32), x.sum()))
    x = jax.device_put(np.ones(4, np.float32), get_kiln_device())
    outs = [f(x) for _ in range(200)]
    jax.block_until_ready(outs)
    assert count[0] == 200
    assert all(float(o) == 5.0 for o in outs)
