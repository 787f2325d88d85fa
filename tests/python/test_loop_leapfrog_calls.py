"""Small loops with a gradient, a random draw or a transcendental function inside, as users write
them, against JAX's CPU backend: what the loop code generator keeps in registers or emits inline
(docs/engine.md, "Native loop code"): an HMC leapfrog `while_loop` whose gradient pads slices of
the position (small pads are byte pieces: kernels/shape_pad_slice.cc), pads of every kind in a
loop, whole-array reductions feeding the next step (through the register cache), `sin`/`cos`/
`log`/`exp` calls between steps that keep the carries in registers (codegen/native_calls.cc),
integer shifts by every count (codegen/native_registers.cc), `jax.random` inside a `fori_loop`,
gradient descent with matrix-vector products in a `scan` (kernels/matvec_avx2.cc) and a damped
Newton `while_loop` in float64 with `grad` of a scalar function. Zero trips, exits at once, f32
and f64 edge values, int32 carries.

Tolerances: XLA:CPU may contract `a * b + c` into an FMA, sums matrix-vector products in another
order and uses its own `sin`/`cos`/`log`; floats agree to rtol 1e-5 (f32) / 1e-12 (f64) over these
short loops (1e-4 / 1e-10 where a loop runs hundreds of steps or sums 128 products); NaN and
infinities where XLA:CPU has them; integers, counters and random bits exactly.
"""

from __future__ import annotations

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax import lax

from conftest import assert_close, run_both

# Large values stay below the square root of f32's largest: past it q * q overflows, and XLA:CPU
# (which simplifies the gradient's algebra) returns finite values where the program as written
# gives infinities, with or without this branch's changes.
F32_EDGES = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-40, 1e15, -1.0, -3e12, 2.5, 1e-30]


def leapfrog(q0, p0, steps):
    def log_density(q):
        return -0.5 * jnp.sum(q ** 2) - 0.45 * jnp.sum(q[1:] * q[:-1])

    grad = jax.grad(log_density)

    def body(s):
        i, q, p = s
        p = p + 0.05 * grad(q)
        q = q + 0.1 * p
        p = p + 0.05 * grad(q)
        return i + 1, q, p
    _, q, p = lax.while_loop(lambda s: s[0] < steps, body, (0, q0, p0))
    return q, log_density(q) - 0.5 * jnp.sum(p ** 2)


@pytest.mark.requires_kiln
@pytest.mark.parametrize("n", [2, 3, 10, 17])
@pytest.mark.parametrize("steps", [0, 1, 30])
def test_hmc_leapfrog_while(n, steps):
    rng = np.random.default_rng(n)
    q0, p0 = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    kiln, cpu = run_both(lambda q, p: leapfrog(q, p, steps), q0, p0)
    assert_close(kiln, cpu, 1e-5, 1e-6)


@pytest.mark.requires_kiln
@pytest.mark.parametrize("start", range(0, len(F32_EDGES), 4))
def test_hmc_leapfrog_edge_values(start):
    q0 = np.array((F32_EDGES * 2)[start:start + 6], np.float32)
    p0 = np.array((F32_EDGES * 2)[start + 1:start + 7], np.float32)
    kiln, cpu = run_both(lambda q, p: leapfrog(q, p, 3), q0, p0)
    assert_close(kiln, cpu, 1e-5, 1e-30)


PADS = [((1, 0, 0),), ((0, 2, 0),), ((2, 3, 1),), ((-1, 2, 0),), ((1, -2, 1),),
        ((1, 0, 0), (0, 1, 0)), ((0, 0, 1), (1, 1, 0)), ((-1, -1, 0), (2, 0, 1))]


@pytest.mark.requires_kiln
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint8"])
@pytest.mark.parametrize("config", range(len(PADS)))
@pytest.mark.parametrize("steps", [0, 1, 4])
def test_pads_in_a_loop(dtype, config, steps):
    """lax.pad of a carry-dependent slice by a carry-dependent value, every edge and interior kind
    (negative edges crop), summed back into the carry."""
    cfg = PADS[config]
    shape = (5,) if len(cfg) == 1 else (3, 4)

    def run(x, v):
        def body(i, c):
            x, v = c
            sl = x[tuple(slice(0, max(d - 1, 1)) for d in x.shape)]
            padded = lax.pad(sl, v, cfg)
            total = jnp.sum(padded).astype(x.dtype)
            return x + total, v + jnp.asarray(1, v.dtype)
        return lax.fori_loop(0, steps, body, (x, v))

    with jax.enable_x64(True):
        x = (np.arange(np.prod(shape)).reshape(shape) % 7).astype(dtype)
        v = np.asarray(3, dtype)
        kiln, cpu = run_both(run, x, v)
    assert_close(kiln, cpu, 1e-6, 1e-6)


@pytest.mark.requires_kiln
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reducer", ["sum", "max", "min", "prod"])
@pytest.mark.parametrize("n", [1, 3, 8, 16])
def test_reductions_feeding_the_next_step(dtype, reducer, n):
    """A whole-array reduction of a value computed in the step, its result read by the next ops
    (sqrt, a scale), over NaN-free and NaN-holding carries."""
    red = {"sum": jnp.sum, "max": jnp.max, "min": jnp.min, "prod": jnp.prod}[reducer]

    def run(v):
        def body(i, v):
            r = red(v * v * 0.5)
            return v * 0.9 + jnp.sqrt(jnp.abs(r)) * 0.01
        return lax.fori_loop(0, 5, body, v)

    with jax.enable_x64(True):
        v = np.linspace(-1.5, 2.0, n).astype(dtype)
        kiln, cpu = run_both(run, v)
        assert_close(kiln, cpu, *((1e-5, 1e-7) if dtype == "float32" else (1e-12, 1e-300)))
        v[n // 2] = np.nan
        kiln, cpu = run_both(run, v)
        assert_close(kiln, cpu, *((1e-5, 1e-7) if dtype == "float32" else (1e-12, 1e-300)))


def adaptive_ode(y0, t_end):
    def body(s):
        t, y, h = s
        k1 = -y + jnp.sin(t)
        k2 = -(y + h * k1) + jnp.sin(t + h)
        err = jnp.max(jnp.abs(h * (k2 - k1) / 2))
        y = y + h * (k1 + k2) / 2
        h = jnp.clip(h * jnp.sqrt(1e-4 / (err + 1e-12)), 1e-4, 0.1)
        return t + h, y, h
    return lax.while_loop(lambda s: s[0] < t_end, body,
                          (jnp.zeros((), y0.dtype), y0, jnp.asarray(0.01, y0.dtype)))


@pytest.mark.requires_kiln
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("t_end", [-1.0, 0.005, 2.0])
def test_calls_between_steps_keep_the_carries(dtype, t_end):
    """Two `sin` calls per step with three scalar carries and a vector carry live across them:
    exits at once, one step, a few hundred steps."""
    with jax.enable_x64(True):
        y0 = np.linspace(-1.0, 1.0, 8).astype(dtype)
        kiln, cpu = run_both(lambda y: adaptive_ode(y, t_end), y0)
    assert_close(kiln, cpu, *((1e-4, 1e-6) if dtype == "float32" else (1e-10, 1e-300)))


@pytest.mark.requires_kiln
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("x0", [0.5, -0.0, 1e-30, 40.0, np.inf, np.nan])
def test_log_exp_cos_calls_in_a_while(dtype, x0):
    """log, exp and cos of scalar carries, each result used after the next call."""
    def run(x):
        def body(s):
            i, x, acc = s
            a = jnp.log(jnp.abs(x) + 1.0)
            b = jnp.exp(-a * 0.5)
            c = jnp.cos(x * b)
            return i + 1, x * 0.75 + c * 0.1, acc + a * b - c
        return lax.while_loop(lambda s: s[0] < 12, body, (0, x, jnp.zeros((), x.dtype)))

    with jax.enable_x64(True):
        kiln, cpu = run_both(run, np.asarray(x0, dtype))
    assert_close(kiln, cpu, *((1e-5, 1e-6) if dtype == "float32" else (1e-12, 1e-300)))


@pytest.mark.requires_kiln
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "uint32", "int64", "uint64"])
def test_shifts_by_every_count(dtype):
    """Left, logical and arithmetic right shifts of carries by counts from -3 to the width + 5
    (counts of the width or more give 0, or the sign fill; negative ones count as large)."""
    bits = np.dtype(dtype).itemsize * 8

    def run(x, n):
        def body(i, c):
            x, n, acc = c
            l = lax.shift_left(x, n)
            r = lax.shift_right_logical(x, n)
            a = lax.shift_right_arithmetic(x, n)
            acc = acc ^ l ^ (r * jnp.asarray(3, x.dtype)) ^ (a + jnp.asarray(1, x.dtype))
            return x + jnp.asarray(0x35, x.dtype), n + jnp.asarray(1, n.dtype), acc
        return lax.fori_loop(0, bits + 9, body, (x, n, jnp.zeros_like(x)))

    with jax.enable_x64(True):
        info = np.iinfo(dtype)
        xs = np.array([info.min, info.max, -1 if info.min < 0 else 1, 0x5A], dtype)
        kiln, cpu = run_both(run, xs, np.full(4, -3 if info.min < 0 else 0, dtype))
    assert_close(kiln, cpu, exact=True)


def gradient_descent(a, b, steps):
    loss = lambda w: jnp.mean((a @ w - b) ** 2) + 1e-3 * jnp.sum(w ** 2)

    def step(w, _):
        return w - 0.05 * jax.grad(loss)(w), loss(w)
    return lax.scan(step, jnp.zeros(a.shape[1], a.dtype), None, length=steps)


@pytest.mark.requires_kiln
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("m,n", [(128, 16), (5, 3), (1, 7), (33, 9), (64, 40)])
@pytest.mark.parametrize("steps", [0, 1, 50])
def test_gradient_descent_matvecs_in_scan(dtype, m, n, steps):
    rng = np.random.default_rng(m * n)
    with jax.enable_x64(True):
        a = rng.standard_normal((m, n)).astype(dtype) / np.sqrt(n)
        b = rng.standard_normal(m).astype(dtype)
        kiln, cpu = run_both(lambda a, b: gradient_descent(a, b, steps), a, b)
    assert_close(kiln, cpu, *((1e-4, 1e-5) if dtype == "float32" else (1e-10, 1e-12)))


@pytest.mark.requires_kiln
@pytest.mark.parametrize("steps", [0, 1, 300])
def test_metropolis_fori_with_random(steps):
    def chain(key_data, x0):
        key = jax.random.wrap_key_data(key_data)
        logp = lambda x: -0.5 * x ** 2 - 0.25 * x ** 4 + jnp.log1p(x ** 2)

        def step(i, s):
            x, lp, accepted = s
            k_prop, k_acc = jax.random.split(jax.random.fold_in(key, i))
            prop = x + 0.8 * jax.random.normal(k_prop, dtype=jnp.float32)
            lp_prop = logp(prop)
            accept = jnp.log(jax.random.uniform(k_acc, dtype=jnp.float32)) < lp_prop - lp
            return (jnp.where(accept, prop, x), jnp.where(accept, lp_prop, lp),
                    accepted + accept.astype(jnp.int32))
        return lax.fori_loop(0, steps, step, (x0, logp(x0), jnp.int32(0)))

    (xk, lk, ak), (xc, lc, ac) = run_both(chain, np.array([0, 11], np.uint32), np.float32(0.3))
    # An acceptance is decided by comparing floats, which may differ in the last bit: the chains
    # agree while no decision flips; over 300 steps they do on this seed.
    assert int(ak) == int(ac)
    assert_close((xk, lk), (xc, lc), 1e-5, 1e-6)


@pytest.mark.requires_kiln
@pytest.mark.parametrize("x0,a", [(2.5, 0.6), (-3.0, 0.2), (0.0, 1.0), (np.nan, 0.5), (1e3, 0.5)])
def test_damped_newton_grad_while_f64(x0, a):
    """Stops on the step size or after 100 iterations; NaN stops at once (the compare is false),
    a huge start overflows exp."""
    def minimize(x0, a):
        f = lambda x: jnp.exp(a * x) + jnp.exp(-x) + 0.5 * x ** 2 + jnp.log1p(jnp.tanh(x) ** 2)
        df = jax.grad(f)
        d2f = jax.grad(df)

        def cond(s):
            i, _, step = s
            return jnp.logical_and(i < 100, jnp.abs(step) > 1e-12)

        def body(s):
            i, x, _ = s
            step = df(x) / jnp.maximum(d2f(x), 1e-3)
            return i + 1, x - 0.7 * step, step
        return lax.while_loop(cond, body, (jnp.int32(0), x0, jnp.float64(1.0)))

    with jax.enable_x64(True):
        (ik, xk, sk), (ic, xc, sc) = run_both(minimize, np.float64(x0), np.float64(a))
    assert abs(int(ik) - int(ic)) <= 1
    assert_close(xk, xc, 1e-10, 1e-12)
