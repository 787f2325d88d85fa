"""Loops whose bodies hold control flow, as ODE solvers, MCMC and checkpointed gradients write them:
`cond` / `switch` inside `scan` and `while_loop` (branches run as flat programs with their tables
resolved once: FlatProgram::ResolveCached), `while` inside `cond` inside `while` (the inner loop's
tables reused across the outer iterations), scalar selects and dynamic slices in loop bodies,
zero-trip loops and loops that exit at once, the same program from two threads, and a diffrax
solve with its gradient. Each runs on Kiln and on JAX's CPU backend; results must agree
(tolerances.py).
"""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax import lax

from conftest import assert_close, check_both, get_cpu_device, get_kiln_device
from native_code import differing, results_with
from opdata import F32, F64, rand, x64_if


def _mcmc_cond_in_scan(x0, keys, scale):
    logp = lambda x: -0.5 * jnp.sum(x ** 2) - 0.1 * jnp.sum(x ** 4)

    def step(carry, k):
        x, lp, accepted = carry
        k1, k2 = jax.random.split(jax.random.wrap_key_data(k))
        prop = x + scale * jax.random.normal(k1, x.shape)
        lp_prop = logp(prop)
        accept = jnp.log(jax.random.uniform(k2)) < lp_prop - lp
        x, lp, accepted = lax.cond(accept, lambda: (prop, lp_prop, accepted + 1),
                                   lambda: (x, lp, accepted))
        return (x, lp, accepted), lp
    return lax.scan(step, (x0, logp(x0), jnp.int32(0)), keys)


def test_cond_inside_scan_mcmc():
    keys = np.asarray(jax.random.key_data(jax.random.split(jax.random.key(3), 64)))
    check_both(_mcmc_cond_in_scan, rand(F32, (4,)), keys, np.float32(0.5), kind="transcendental")


@pytest.mark.parametrize("n", [0, 1, 7, 40])
def test_switch_inside_fori_loop(n):
    # Three branches, one returning its operand unchanged and one a constant; the index is taken
    # modulo 4, so index 3 (out of range) selects the last branch.
    def f(x, n):
        def body(i, c):
            return lax.switch(i % 4, [lambda c: c * 1.5 - 0.25, lambda c: c,
                                      lambda c: jnp.full_like(c, 0.5) + jnp.sin(c)], c)
        return lax.fori_loop(0, n, body, x)
    check_both(f, rand(F32, (3,)), np.int32(n), kind="transcendental")


def _nested(y0, limit):
    # An outer while whose body branches into an inner while (or not), as diffrax's checkpointed
    # solves do; the inner loop's trip count depends on the carry.
    def outer_cond(s):
        return s[0] < limit

    def outer_body(s):
        i, y, total = s

        def inner(y):
            def cond(t):
                return (t[0] < i % 5) & (jnp.max(jnp.abs(t[1])) < 50.0)

            def body(t):
                return t[0] + 1, t[1] * 1.1 + 0.01
            return lax.while_loop(cond, body, (jnp.int32(0), y))[1]
        y = lax.cond(i % 3 == 0, lambda y: y, inner, y)
        return i + 1, y, total + jnp.sum(y)
    return lax.while_loop(outer_cond, outer_body, (jnp.int32(0), y0, jnp.float32(0.0)))


@pytest.mark.parametrize("limit", [0, 1, 2, 25])
def test_while_inside_cond_inside_while(limit):
    check_both(_nested, rand(F32, (5,)), np.int32(limit), kind="reduction")


def test_loop_that_exits_at_once_with_nested_loop():
    def f(y, n):
        def body(s):
            return s[0] + 1, lax.fori_loop(0, s[0], lambda j, c: c * 0.5 + 1.0, s[1])
        return lax.while_loop(lambda s: s[0] < n, body, (jnp.int32(5), y))
    check_both(f, rand(F32, (4,)), np.int32(5))  # the condition is false before the first trip
    check_both(f, rand(F32, (4,)), np.int32(9))


@pytest.mark.parametrize("dtype", [F32, F64], ids=lambda d: np.dtype(d).name)
def test_scalar_selects_and_dynamic_slices_in_body(dtype):
    # Scalar selects by scalar predicates and dynamic slices with clamped starts (negative and past
    # the end), contiguous and strided (a column), with s32 and, under x64, s64 indices.
    with x64_if(dtype):
        def f(a, x0):
            def body(i, c):
                x, k = c
                row = lax.dynamic_slice(a, (i - 3, i * 0), (1, a.shape[1]))[0]
                col = lax.dynamic_slice(a, (i * 0, i * 2 - 5), (a.shape[0], 1))[:, 0]
                s = jnp.where(x > 0, row.sum(), col.max())
                k = jnp.where(s > k, k + 1, k - 1)
                return jnp.where(k % 2 == 0, x * 0.5 + s, -x + 0.25), k
            return lax.fori_loop(0, 15, body, (x0, jnp.array(0, jnp.int32)))
        check_both(f, rand(dtype, (9, 6)), np.asarray(0.5, dtype), kind="reduction")


def test_same_program_from_two_threads():
    # Each thread keeps its own resolved tables; results equal the CPU backend's in both.
    f = jax.jit(_nested)
    args = (rand(F32, (5,)), np.int32(30))
    want = jax.tree.map(np.asarray, f(*jax.device_put(args, get_cpu_device())))
    kiln = get_kiln_device()
    outs, errors = {}, []

    def work(t):
        try:
            a = jax.device_put(args, kiln)
            for _ in range(20):
                outs[t] = jax.tree.map(np.asarray, f(*a))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=work, args=(t,)) for t in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for t in range(2):
        assert_close(outs[t], want, kind="reduction")


def test_diffrax_adaptive_solve_and_gradient():
    diffrax = pytest.importorskip("diffrax")

    def loss(params, y0):
        def field(t, y, args):
            k1, k2 = args
            return jnp.stack([k1 * y[0] - 0.1 * y[0] * y[1], 0.075 * y[0] * y[1] - k2 * y[1]])
        sol = diffrax.diffeqsolve(diffrax.ODETerm(field), diffrax.Tsit5(), t0=0.0, t1=4.0,
                                  dt0=0.1, y0=y0, args=params,
                                  stepsize_controller=diffrax.PIDController(rtol=1e-5, atol=1e-5),
                                  saveat=diffrax.SaveAt(ts=jnp.linspace(0.0, 4.0, 5)),
                                  max_steps=1024)
        return jnp.sum(sol.ys ** 2)
    params = (np.float32(1.1), np.float32(1.5))
    check_both(jax.value_and_grad(loss), params, np.array([10.0, 5.0], np.float32),
               rtol=1e-3, atol=1e-3)


def _kiln_results() -> dict[str, np.ndarray]:
    """The programs above (but the threads and diffrax) on Kiln, by name."""
    kiln = get_kiln_device()
    out = {}

    def put(name, f, *args):
        leaves = jax.tree.leaves(jax.jit(f)(*jax.device_put(args, kiln)))
        out.update({f"{name}-{i}": np.asarray(v) for i, v in enumerate(leaves)})
    keys = np.asarray(jax.random.key_data(jax.random.split(jax.random.key(3), 64)))
    put("mcmc", _mcmc_cond_in_scan, rand(F32, (4,)), keys, np.float32(0.5))
    for limit in (0, 1, 2, 25):
        put(f"nested-{limit}", _nested, rand(F32, (5,)), np.int32(limit))
    for n in (0, 1, 7, 40):
        put(f"switch-{n}", lambda x, n: lax.fori_loop(0, n, lambda i, c: lax.switch(
            i % 4, [lambda c: c * 1.5 - 0.25, lambda c: c,
                    lambda c: jnp.full_like(c, 0.5) + jnp.sin(c)], c), x), rand(F32, (3,)),
            np.int32(n))
    return out


@pytest.mark.requires_kiln
def test_native_branches_match_the_interpreter_bit_for_bit(tmp_path):
    # Branches run as native code (codegen::BuildNativeOnce) unless KILN_LOOP_JIT=0.
    interpreted = results_with(__file__, "KILN_LOOP_JIT", tmp_path)
    differ = differing(_kiln_results(), interpreted)
    assert not differ, differ[:20]


if __name__ == "__main__":  # the interpreted side of the test above, in a child process
    np.savez(sys.argv[1], **_kiln_results())
