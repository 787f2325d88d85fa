"""Elementwise fusion with broadcasts inside the run (compiler/fusion.cc, MapInfo::absolute).

A `broadcast_in_dim` next to the elementwise ops that read it becomes a member of their fused loop:
each tile of the broadcast is gathered from the operand into the tile's scratch instead of writing
the whole broadcast array. These programs put broadcasts along every kind of axis, with tiles that
straddle rows, of every element width, in loops (one-tile flat programs) and with donated inputs;
each runs on Kiln and on JAX's CPU backend and must agree: bit for bit where the ops are exact.
"""

from __future__ import annotations

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax import lax

from conftest import check_both, run_on, get_kiln_device, get_cpu_device, assert_close
from opdata import BF16, BOOL, C64, F32, F64, I8, I32, rand, x64_if
from native_code import canonical_bytes, traced_step_names


@pytest.mark.parametrize("shape,axis", [((4096, 1024), -1), ((1000, 37), 0), ((7, 300, 5), 1),
                                        ((3, 5, 7, 11), (0, 2))])
def test_softmax_and_layer_norm_over_any_axis(shape, axis):
    x = rand(F32, shape)

    def f(x):
        sm = jax.nn.softmax(x, axis=axis)
        mu = x.mean(axis=axis, keepdims=True)
        var = ((x - mu) ** 2).mean(axis=axis, keepdims=True)
        return sm, (x - mu) * lax.rsqrt(var + 1e-5)
    check_both(f, x, kind="transcendental")


@pytest.mark.parametrize("dtype", [F32, F64, I32, I8, BOOL, BF16, C64, np.dtype(np.complex128)],
                         ids=str)
def test_broadcast_rows_and_columns_exact_for_every_width(dtype):
    # Tiles of 1,024 elements straddle rows of 37: each tile starts mid-row of both broadcasts.
    a, row, col = rand(dtype, (301, 37)), rand(dtype, (37,)), rand(dtype, (301, 1))

    def f(a, row, col):
        if dtype == BOOL:
            return (a ^ row[None, :]) | col, jnp.where(row[None, :], a, col)
        # No multiply-add: XLA:CPU contracts a * b + c into an FMA, which Kiln does not.
        return (a - row[None, :]) + col, jnp.where(a == row[None, :], col, a + col)
    with x64_if(dtype):
        check_both(f, a, row, col, exact=True)


def test_broadcast_of_a_computed_scalar_and_middle_axes():
    a, b = rand(F32, (6, 50, 40)), rand(F32, (50,))

    def f(a, b):
        s = a.max()                  # a scalar computed at run time, broadcast to every element
        m = b[None, :, None]         # broadcast along the first and last axes
        return jnp.maximum(a - s, m) - m, lax.broadcast_in_dim(b, (6, 50, 40), (1,)) * s
    check_both(f, a, b, exact=True)


def test_broadcast_whose_operand_is_also_read_elementwise():
    # x is both the broadcast's operand (read whole) and an elementwise input of the same run.
    x = np.round(rand(F32, (512, 512)) * 8) / 8  # eighths: every sum and product here is exact

    def f(x):
        r = x.sum(axis=0)            # [512], broadcast back along rows
        return x * 2.0 + r[None, :] * x[0:1, :] + x
    check_both(f, x, exact=True)


def test_broadcast_in_loop_bodies():
    # Small arrays: the fused step is one tile and runs member by member in the flat program.
    def f(h0, w, xs):
        def body(h, x):
            h = jnp.tanh(h * w[None, :] + x[:, None]) + h.mean(axis=1, keepdims=True)
            return h, h.max(axis=0)
        return lax.scan(body, h0, xs)
    check_both(f, rand(F32, (8, 16)), rand(F32, (16,)), rand(F32, (20, 8)), kind="transcendental")


def test_donated_input_with_a_broadcast_operand():
    # The result may be computed into the donated `p` (read element by element), never into `b`.
    p, b = rand(F32, (300, 64)), rand(F32, (64,))
    f = lambda p, b: p - 0.5 * b[None, :]  # noqa: E731
    want = run_on(f, (p, b), get_cpu_device())
    dev = get_kiln_device()
    pd, bd = jax.device_put(p, dev), jax.device_put(b, dev)
    got = jax.jit(f, donate_argnums=0)(pd, bd)
    assert_close(np.asarray(got), want, exact=True)
    np.testing.assert_array_equal(np.asarray(bd), b)


TRACED = r"""
import numpy as np, jax, jax.numpy as jnp
x = jax.device_put(np.random.default_rng(0).normal(size=(256, 128)).astype(np.float32),
                   jax.devices("kiln")[0])
jax.block_until_ready(jax.jit(lambda x: jax.nn.softmax(x, axis=-1))(x))
"""


@pytest.mark.requires_kiln
def test_softmax_broadcasts_run_inside_fused_loops(tmp_path):
    # The trace lists every step that ran: no broadcast of its own, no reduction of its own, and
    # one fused loop that reduces each tile's rows to their maximum, starts with a broadcast
    # (x - max -> exp), reduces the tile's rows again (the sum of the exponentials) and then
    # divides the tile by its rows' sums (the second broadcast, after the reduction).
    names = traced_step_names(TRACED, tmp_path)
    assert not [n for n in names if n.startswith("stablehlo.broadcast_in_dim")], names
    fused = [n for n in names if n.startswith("fused") and "broadcast_in_dim" in n]
    assert len(fused) == 1, names
    assert "with two row reductions" in fused[0], names
    assert not [n for n in names if n.startswith(("stablehlo.reduce", "stablehlo.max"))], names


REDUCERS = {"sum": jnp.sum, "max": jnp.max, "min": jnp.min, "prod": jnp.prod}


@pytest.mark.requires_kiln
@pytest.mark.parametrize("dtype", [F32, F64, I32], ids=str)
@pytest.mark.parametrize("row", [1, 3, 37, 128, 1000, 1024, 2048, 4097])
def test_row_reduction_joined_to_its_run_is_bit_for_bit(dtype, row):
    # A reduction over the last axis of a fused run's value is computed tile by tile inside the
    # run (Direct::rows) when rows fit a tile (1,024 elements or fewer): the same bits as the
    # reduction run on its own over the stored value, for every reducer and row length (longer
    # rows do not join). Also against the CPU backend.
    x = rand(dtype, (48, row), "small")
    # Products of floats near 1, so that no row overflows (inf * 0 is NaN in one order, not in
    # another); integers wrap, in any order the same.
    def value(k, x):
        return x / 1024 + 1 if k == "prod" and dtype != I32 else x * 2 + 1
    with x64_if(dtype):
        kiln = get_kiln_device()
        together = run_on(lambda x: {k: (value(k, x), r(value(k, x), axis=-1))
                                     for k, r in REDUCERS.items()}, (x,), kiln)
        for k, r in REDUCERS.items():
            e, got = together[k]
            alone = run_on(lambda e, r=r: r(e, axis=-1), (e,), kiln)
            assert canonical_bytes(got) == canonical_bytes(alone), (k, got, alone)
        check_both(lambda x: {k: r(value(k, x), axis=-1) for k, r in REDUCERS.items()}, x,
                   kind="reduction")


@pytest.mark.requires_kiln
def test_row_reduction_with_an_initial_value_from_an_argument():
    # lax.reduce's initial value is an argument here (not a constant): it is there before the
    # run starts, so the reduction joins.
    x, init = rand(F32, (64, 100)), np.float32(0.5)
    check_both(lambda x, i: lax.reduce(jnp.exp(x - 1.0), i, lax.add, (1,)), x, init,
               kind="transcendental")


@pytest.mark.requires_kiln
def test_softmax_intermediates_live_in_the_output():
    # compiled.memory_analysis() (PJRT_Executable_GetCompiledMemoryStats): the exponentials are
    # computed into the output buffer and divided in place, and neither broadcast is materialised,
    # so the working memory is a few KiB instead of a 16 MiB array (buffer_plan.cc).
    x = jax.device_put(rand(F32, (4096, 1024)), get_kiln_device())
    stats = jax.jit(lambda x: jax.nn.softmax(x, axis=-1)).lower(x).compile().memory_analysis()
    assert stats.argument_size_in_bytes == 4096 * 1024 * 4
    assert stats.output_size_in_bytes == 4096 * 1024 * 4
    assert stats.alias_size_in_bytes == 0
    assert stats.temp_size_in_bytes < 1 << 20, stats
    # A donated argument may become the result: its bytes are the alias, and the result's
    # intermediates are not planned into it (donation needs one writer).
    donated = jax.jit(lambda p, g: p - 0.1 * jnp.tanh(g) * 2.0, donate_argnums=0)
    stats = donated.lower(x, x).compile().memory_analysis()
    assert stats.alias_size_in_bytes == 4096 * 1024 * 4, stats
