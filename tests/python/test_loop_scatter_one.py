"""Scatters of one window inside loops (kernels/scatter_one.h, codegen/native_scatter.cc):
`buf.at[i].set(row)` with a scalar `i`, the form diffrax's SaveAt buffers take, in `fori_loop`,
`scan` and `while_loop`: rows of f32 and f64, single int32 and bool elements, rows too long to
emit inline, indices running out of range on both sides (past -n after JAX's wrap of negative
indices, and past the end: the update is dropped, never clamped), a buffer read again after its
scatter (copied, not updated in place), zero trips. Against JAX's CPU backend exactly (moves of
bytes and exact arithmetic on small integers), and the bench's two SaveAt gradients within the
diffrax tolerance; the programs also run with KILN_LOOP_JIT=0 (the flat programs interpreted):
the native code must give the same bytes.
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


def _rows_in_fori(buf, ints, flags, n, shift):
    """Rows, elements and flags written at i - shift for i in [0, n)."""
    def step(i, c):
        buf, ints, flags, seen = c
        j = i - shift
        row = jnp.stack([i.astype(buf.dtype) * 1.5, -i.astype(buf.dtype)])
        buf = buf.at[j].set(row)
        seen = seen + jnp.sum(ints, dtype=jnp.int32)  # reads ints before its scatter: ints is copied
        ints = ints.at[j].set(i * 7)
        flags = flags.at[2 * j - 1].set(i % 3 == 0)
        return buf, ints, flags, seen
    return lax.fori_loop(0, n, step, (buf, ints, flags, jnp.int32(0)))


def _long_rows_in_scan(buf, xs):
    """Rows of 96 floats (past what the loop code emits inline) written at x's index."""
    def step(b, x):
        j = (x * 5.0).astype(jnp.int32) - 2
        b = b.at[j].set(jnp.full((96,), x, b.dtype))
        return b, b[0, 0]
    return lax.scan(step, buf, xs)


def _while_saving(y0, ts, limit):
    """An adaptive-looking while_loop that saves its state at each step into a small buffer."""
    def cond(c):
        k, _, _ = c
        return k < limit

    def body(c):
        k, y, ys = c
        y = y * 0.9 + jnp.sin(y)
        ys = ys.at[k].set(y)
        return k + 1, y, ys
    ys = jnp.zeros((ts.shape[0], y0.shape[0]), y0.dtype)
    return lax.while_loop(cond, body, (jnp.int32(0), y0, ys))


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("n,shift", [(0, 0), (1, 0), (9, 2), (16, 4), (6, -3)])
def test_rows_elements_and_flags_in_fori_loop(dtype, n, shift):
    with x64_if(dtype):
        buf = rand(dtype, (7, 2))
        ints = np.arange(9, dtype=np.int32) * 3 - 5
        flags = np.array([True, False, True, False, True])
        check_both(_rows_in_fori, buf, ints, flags, np.int32(n), np.int32(shift), exact=True)


@pytest.mark.parametrize("dtype", [F32, F64])
def test_long_rows_in_scan(dtype):
    with x64_if(dtype):
        xs = np.linspace(-0.6, 1.4, 17).astype(dtype)
        check_both(_long_rows_in_scan, rand(dtype, (4, 96)), xs, exact=True)


@pytest.mark.parametrize("limit", [0, 1, 5, 8, 11])
def test_while_loop_saving_rows(limit):
    # limit 11 writes past the 8 rows of the buffer: those saves are dropped.
    check_both(_while_saving, rand(F32, (3,)), np.linspace(0.0, 1.0, 8).astype(F32),
               np.int32(limit), kind="composite")


def _bench_program(name):
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from programs_users import USER_PROGRAMS  # noqa: PLC0415 - the bench's own definitions
    make, _ = USER_PROGRAMS[name]
    return make()


@pytest.mark.parametrize("name", ["u_diffrax_vdp_saveat_grad",
                                  "u_diffrax_pendulum_tsit5_saveat_grad"])
def test_diffrax_saveat_gradients(name):
    pytest.importorskip("diffrax")
    fn, args = _bench_program(name)
    check_both(fn, *args, rtol=1e-3, atol=1e-3)


def _kiln_results() -> dict[str, np.ndarray]:
    """The programs above on Kiln, by name."""
    kiln = get_kiln_device()
    out = {}

    def put(name, f, *args):
        leaves = jax.tree.leaves(jax.jit(f)(*jax.device_put(args, kiln)))
        out.update({f"{name}-{i}": np.asarray(v) for i, v in enumerate(leaves)})
    for dtype in (F32, F64):
        with x64_if(dtype):
            d = np.dtype(dtype).name
            for n, shift in ((9, 2), (16, 4), (6, -3)):
                put(f"fori-{d}-{n}-{shift}", _rows_in_fori, rand(dtype, (7, 2)),
                    np.arange(9, dtype=np.int32), np.zeros(5, bool), np.int32(n), np.int32(shift))
            put(f"scan-{d}", _long_rows_in_scan, rand(dtype, (4, 96)),
                np.linspace(-0.6, 1.4, 17).astype(dtype))
    for limit in (5, 11):
        put(f"while-{limit}", _while_saving, rand(F32, (3,)),
            np.linspace(0.0, 1.0, 8).astype(F32), np.int32(limit))
    try:
        import diffrax  # noqa: F401, PLC0415
        fn, (p, y0, _) = _bench_program("u_diffrax_pendulum_tsit5_saveat_grad")
        put("pendulum", fn, p, y0, rand(F32, (30, 2)))
    except ImportError:
        pass
    return out


@pytest.mark.requires_kiln
def test_native_scatters_match_the_interpreter_bit_for_bit(tmp_path):
    interpreted = results_with(__file__, "KILN_LOOP_JIT", tmp_path)
    differ = differing(_kiln_results(), interpreted)
    assert not differ, differ[:20]


if __name__ == "__main__":  # the interpreted side of the test above, in a child process
    np.savez(sys.argv[1], **_kiln_results())
