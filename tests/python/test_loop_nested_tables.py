"""Loops nested in loops, as they find their resolved tables again (engine::TableSets: one lookup
per execution of the inner loop, keyed by its scratch and operand addresses): inner `while`s whose
trip counts change every outer iteration (zero trips included), several inner loops and a
three-deep nest in one body, inner loops reading outer carries that alternate between buffer sets,
one compiled program called again with other argument buffers, gradients through `scan`s holding
`cond`s holding `fori_loop`s, and the bench's diffrax pendulum solve with its gradient and HMC with
a `cond` accept. Each runs on Kiln and on JAX's CPU backend; results must agree (tolerances.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax import lax

from conftest import assert_close, check_both, get_cpu_device, get_kiln_device
from opdata import F32, rand

# The bench's user programs (bench/programs_users.py), tested as written there.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))


def _varying_inner_trips(x, counts):
    # A scan whose body runs a while of counts[i] trips (0 included) on the carry.
    def step(c, n):
        def cond(s):
            return s[0] < n

        def body(s):
            i, v = s
            return i + 1, v * 0.97 + jnp.sin(v) * 0.1
        _, c = lax.while_loop(cond, body, (jnp.int32(0), c))
        return c, c.sum()
    return lax.scan(step, x, counts)


@pytest.mark.parametrize("counts", [[0, 0, 0], [3, 0, 5, 1, 0, 2], [1] * 9, [7, 7]])
def test_inner_while_trip_counts_change_every_outer_iteration(counts):
    check_both(_varying_inner_trips, rand(F32, (5,)), np.array(counts, np.int32),
               kind="transcendental")


def _three_deep(x, n):
    # while (outer) > fori (middle, alternating carries) > while (inner, data-dependent exit),
    # with a second inner loop of the same shape beside the first.
    def inner(v, limit):
        return lax.while_loop(lambda s: jnp.logical_and(s[0] < limit, s[1].sum() < 50.0),
                              lambda s: (s[0] + 1, s[1] * 1.1 + 0.05), (jnp.int32(0), v))[1]

    def middle(i, v):
        v = inner(v, i % 3)
        return inner(v * 0.5, 2) - 0.01 * i

    def outer_body(s):
        k, v = s
        return k + 1, lax.fori_loop(0, k + 1, middle, v)
    return lax.while_loop(lambda s: s[0] < n, outer_body, (jnp.int32(0), x))[1]


@pytest.mark.parametrize("n", [0, 1, 4])
def test_three_deep_nest_with_two_inner_loops(n):
    check_both(_three_deep, rand(F32, (4,)), np.int32(n), kind="transcendental")


def test_program_called_again_with_other_buffers():
    # The top-level loop's tables are keyed by the argument buffers: new buffers, same results.
    kiln, cpu = get_kiln_device(), get_cpu_device()
    f = jax.jit(_three_deep)
    for seed in range(4):
        x = np.random.default_rng(seed).standard_normal(4).astype(np.float32)
        for _ in range(2):  # the same buffers twice, then others
            xk = jax.device_put(x, kiln)
            for n in (2, 3):
                want = f(jax.device_put(x, cpu), np.int32(n))
                assert_close(f(xk, np.int32(n)), want, kind="transcendental")


def _grad_scan_cond_fori(w, xs):
    # A scan whose body branches (lax.cond) into a fori_loop or a plain update: reverse mode runs
    # the loops again, nested in the transposed scan.
    def step(h, x):
        def refine(h):
            return lax.fori_loop(0, 4, lambda i, h: jnp.tanh(h * w + x) * 0.5 + h * 0.5, h)
        h = lax.cond(x.sum() > 0, refine, lambda h: h * w - x, h)
        return h, jnp.sum(h ** 2)
    _, ys = lax.scan(step, jnp.zeros_like(w), xs)
    return ys.mean()


def test_gradient_through_scan_of_cond_of_fori_loop():
    check_both(jax.value_and_grad(_grad_scan_cond_fori), rand(F32, (6,)), rand(F32, (12, 6)),
               kind="transcendental")


def test_bench_diffrax_pendulum_saveat_grad():
    pytest.importorskip("diffrax")
    from programs_users import diffrax_pendulum_tsit5_saveat_grad
    f, args = diffrax_pendulum_tsit5_saveat_grad()
    check_both(f, *args, rtol=1e-3, atol=1e-3)


def test_bench_hmc_cond_accept_in_scan():
    from programs_users import hmc_cond_accept_in_scan
    f, args = hmc_cond_accept_in_scan()
    check_both(f, *args, rtol=1e-3, atol=1e-3)
