"""Control flow inlined into loop code (engine/flat_branches.cc, engine/flat_loops.cc,
codegen/native_branches.cc): `lax.cond` / `lax.switch` inside `scan`, `fori_loop` and
`while_loop` (indices out of range, branches returning operands unchanged or constants, nested
switches), `while_loop`s inside branches inside loops (zero trips, one trip, a switch inside the
inner loop), gradients through them, in float32 and float64, and the bench's three diffrax
gradients (Dopri5 and Tsit5 with SaveAt, adaptive steps). Each runs on Kiln and on JAX's CPU
backend; results must agree (tolerances.py: "composite", as rounding differences of XLA:CPU's
contracted multiply-adds grow over iterations). The programs also run with KILN_LOOP_JIT=0 (the flat
programs interpreted): the native code must give the same bytes.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax import lax

from conftest import check_both, get_kiln_device
from native_code import differing, results_with
from opdata import F32, F64, rand, x64_if

DTYPES = pytest.mark.parametrize("dtype", [F32, F64], ids=lambda d: np.dtype(d).name)


def _switch_in_scan(x, xs):
    # The index runs from -2 to 6 over four branches: out of range takes the last.
    def step(c, t):
        i = (t * 3.0).astype(jnp.int32) - 2
        c = lax.switch(i, [lambda c: c * 0.5 + t, lambda c: c,
                           lambda c: jnp.full_like(c, 0.25),
                           lambda c: lax.cond(c[0] > 0, lambda c: c - 1.0, lambda c: -c, c)], c)
        return c, c.sum()
    return lax.scan(step, x, xs)


def _cond_in_while(x, limit):
    def body(s):
        i, y = s
        y = lax.cond(jnp.sum(y) > 0, lambda y: y * 0.9 - 0.1, lambda y: y + 0.3, y)
        return i + 1, y
    return lax.while_loop(lambda s: (s[0] < limit) & (jnp.abs(s[1]).max() < 100), body,
                          (jnp.int32(0), x))


def _while_in_switch_in_fori(x, n):
    # Per iteration: an inner while of zero trips, one trip, or i % 4 trips with a switch inside,
    # or none.
    def inner(y, trips):
        def body(s):
            j, y = s
            y = lax.switch(j - 1, [lambda y: -y, lambda y: y * 1.25 + 0.5], y)
            return j + 1, y
        return lax.while_loop(lambda s: s[0] < trips, body, (jnp.int32(0), y))[1]

    def step(i, y):
        return lax.switch(i % 4, [lambda y: inner(y, 0), lambda y: inner(y, 1),
                                  lambda y: inner(y, i % 4), lambda y: y + 1.0], y)
    return lax.fori_loop(0, n, step, x)


@DTYPES
def test_switch_inside_scan(dtype):
    with x64_if(dtype):
        xs = np.linspace(0.0, 2.9, 30).astype(dtype)
        check_both(_switch_in_scan, rand(dtype, (3,)), xs, kind="composite")


@DTYPES
@pytest.mark.parametrize("limit", [0, 1, 9, 60])
def test_cond_inside_while_loop(dtype, limit):
    with x64_if(dtype):
        check_both(_cond_in_while, rand(dtype, (4,)), np.int32(limit), kind="composite")


@DTYPES
@pytest.mark.parametrize("n", [0, 1, 3, 13])
def test_while_inside_switch_inside_fori_loop(dtype, n):
    with x64_if(dtype):
        check_both(_while_in_switch_in_fori, rand(dtype, (2,)), np.int32(n), kind="composite")


@pytest.mark.parametrize("p", [-1.0, 0.5, 3.0])
def test_while_inside_top_level_cond(p):
    # A branch run once (native code of its own, codegen::BuildNativeOnce) holding an inlined while
    # of 0 or 3 trips and a switch inside it (index 2 out of range: the last branch).
    def f(x, p):
        def loop(x):
            trips = jnp.clip(p, 0, 4).astype(jnp.int32)
            body = lambda j, y: lax.switch(j, [lambda y: y * 2.0, lambda y: y - 1.0], y)
            return lax.fori_loop(0, trips, body, x)
        return lax.cond(p > 0, loop, lambda x: -x, x)
    check_both(f, rand(F32, (3,)), np.float32(p))


@DTYPES
def test_gradients_through_cond_and_while_in_scan(dtype):
    with x64_if(dtype):
        def loss(w, xs):
            def step(c, x):
                c = lax.cond(x > 0.5, lambda c: jnp.tanh(c * w) + x, lambda c: c * w - x, c)
                c = lax.fori_loop(0, 3, lambda j, c: c * 0.9 + 0.01 * j, c)
                return c, c
            return jnp.sum(lax.scan(step, jnp.ones(3, dtype), xs)[1] ** 2)
        xs = np.linspace(0.0, 1.0, 12).astype(dtype)
        check_both(jax.value_and_grad(loss), np.asarray(0.7, dtype), xs, kind="composite")


def _bench_program(name):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from programs_users import USER_PROGRAMS  # noqa: PLC0415 - the bench's own definitions
    make, _ = USER_PROGRAMS[name]
    return make()


@pytest.mark.parametrize("name", ["u_diffrax_vdp_saveat_grad",
                                  "u_diffrax_pendulum_tsit5_saveat_grad",
                                  "u_diffrax_tsit5_grad"])
def test_diffrax_gradients(name):
    pytest.importorskip("diffrax")
    fn, args = _bench_program(name)
    check_both(fn, *args, rtol=1e-3, atol=1e-3)


def _kiln_results() -> dict[str, np.ndarray]:
    """The programs above on Kiln (diffrax's Van der Pol gradient included), by name."""
    kiln = get_kiln_device()
    out = {}

    def put(name, f, *args):
        leaves = jax.tree.leaves(jax.jit(f)(*jax.device_put(args, kiln)))
        out.update({f"{name}-{i}": np.asarray(v) for i, v in enumerate(leaves)})
    for dtype in (F32, F64):
        with x64_if(dtype):
            d = np.dtype(dtype).name
            put(f"scan-{d}", _switch_in_scan, rand(dtype, (3,)),
                np.linspace(0.0, 2.9, 30).astype(dtype))
            for limit in (0, 1, 9, 60):
                put(f"while-{d}-{limit}", _cond_in_while, rand(dtype, (4,)), np.int32(limit))
            for n in (0, 1, 3, 13):
                put(f"fori-{d}-{n}", _while_in_switch_in_fori, rand(dtype, (2,)), np.int32(n))
    try:
        import diffrax  # noqa: F401, PLC0415
        # The bench draws its target from a module-wide generator: a fixed one here, so that this
        # process and the interpreted one run the same inputs.
        fn, (mu, y0, _) = _bench_program("u_diffrax_vdp_saveat_grad")
        put("vdp", fn, mu, y0, rand(F32, (20, 2)))
    except ImportError:
        pass
    return out


@pytest.mark.requires_kiln
def test_inlined_control_flow_matches_the_interpreter_bit_for_bit(tmp_path):
    interpreted = results_with(__file__, "KILN_LOOP_JIT", tmp_path)
    differ = differing(_kiln_results(), interpreted)
    assert not differ, differ[:20]


if __name__ == "__main__":  # the interpreted side of the test above, in a child process
    np.savez(sys.argv[1], **_kiln_results())
