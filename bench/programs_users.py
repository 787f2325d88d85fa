"""Users' programs: what bench/run times beside bench/programs.py's original set, so tuning cannot
stop at one shape (issue 35). Each is written the way a user writes it (the libraries' documented
idioms, other shapes and dtypes than the original set), not the way Kiln's fast paths like it.

Families: loops (scan / fori_loop / while_loop, with and without grad inside, f32 / f64 /
complex64 / int32 carries), MCMC and ODE steppers (plain JAX and diffrax), convolutional networks
of several geometries (1-D / 2-D / 3-D, NCHW and NHWC, strides, dilations, groups, odd channels;
flax with BatchNorm and optax's AdamW; equinox), reductions over other axis sets and odd sizes,
prefix scans, gathers / scatters / sorts, masked attention, batched small linear algebra, random
numbers of small and large sizes, elementwise math in bf16 / f64 / complex64 / int32.

Programs whose name is in X64 run with jax.enable_x64 (traced, compiled and timed inside it).
"""

from __future__ import annotations

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

RNG = np.random.default_rng(1)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def f64(*shape):
    return RNG.standard_normal(shape)


# ---- loops ----

def lorenz_rk4_f64():
    def rhs(y):
        return jnp.array([10.0 * (y[1] - y[0]), y[0] * (28.0 - y[2]) - y[1],
                          y[0] * y[1] - 8.0 / 3.0 * y[2]])

    def solve(y0):
        def step(y, _):
            h = 0.002
            k1 = rhs(y)
            k2 = rhs(y + 0.5 * h * k1)
            k3 = rhs(y + 0.5 * h * k2)
            k4 = rhs(y + h * k3)
            y = y + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
            return y, y[0]
        return lax.scan(step, y0, None, length=500)

    return solve, (np.array([1.0, 1.0, 1.0]),)


def mandelbrot_complex64(n):
    def escape(c):
        def body(i, state):
            z, count = state
            z = jnp.where(jnp.abs(z) <= 2.0, z * z + c, z)
            return z, count + (jnp.abs(z) <= 2.0)
        z, count = lax.fori_loop(0, 50, body, (jnp.zeros_like(c), jnp.zeros(c.shape, jnp.int32)))
        return count

    x = np.linspace(-2.0, 0.6, n, dtype=np.float32)
    y = np.linspace(-1.2, 1.2, n, dtype=np.float32)
    return escape, ((x[None, :] + 1j * y[:, None]).astype(np.complex64),)


def newton_sqrt_while_f64():
    """Newton's method for sqrt, run until every lane has converged: the condition reads the carry."""
    def newton(a):
        def cond(s):
            x, prev, it = s
            return jnp.logical_and(jnp.max(jnp.abs(x - prev)) > 1e-12, it < 100)

        def body(s):
            x, _, it = s
            return 0.5 * (x + a / x), x, it + 1
        return lax.while_loop(cond, body, (a, a + 1.0, 0))[0]

    return newton, (np.abs(f64(64)) * 100 + 1,)


def logistic_map_fori_f32():
    return (lambda r: lax.fori_loop(0, 2000, lambda i, x: r * x * (1 - x), jnp.full_like(r, 0.4))), \
        (np.linspace(2.5, 3.9, 8, dtype=np.float32),)


def heat_diffusion_scan_1k():
    def simulate(u0):
        def step(u, _):
            lap = jnp.roll(u, 1) + jnp.roll(u, -1) - 2 * u
            u = u + 0.2 * lap
            return u, u.mean()
        return lax.scan(step, u0, None, length=400)

    return simulate, (f32(1024),)


def gradient_descent_grad_in_scan():
    """A scan whose body takes a gradient: 200 steps of gradient descent on a least-squares fit."""
    def fit(a, b):
        loss = lambda w: jnp.mean((a @ w - b) ** 2) + 1e-3 * jnp.sum(w ** 2)

        def step(w, _):
            g = jax.grad(loss)(w)
            return w - 0.05 * g, loss(w)
        return lax.scan(step, jnp.zeros(a.shape[1], a.dtype), None, length=200)

    return fit, (f32(128, 16), f32(128))


def grad_through_rnn_scan():
    def loss(w, xs, h0):
        def step(h, x):
            h = jnp.tanh(h @ w + x)
            return h, jnp.sum(h ** 2)
        _, ys = lax.scan(step, h0, xs)
        return ys.mean()

    return jax.grad(loss), (f32(32, 32) * 0.2, f32(50, 4, 32), f32(4, 32))


def collatz_while_int32():
    def steps(n):
        def cond(s):
            return jnp.any(s[0] != 1)

        def body(s):
            x, count = s
            done = x == 1
            x = jnp.where(done, x, jnp.where(x % 2 == 0, x // 2, 3 * x + 1))
            return x, count + (~done).astype(jnp.int32)
        return lax.while_loop(cond, body, (n, jnp.zeros_like(n)))[1]

    return steps, (np.arange(1, 1025, dtype=np.int32),)


def complex_rotation_scan():
    def run(z0, w):
        def step(z, _):
            z = z * w
            return z / jnp.abs(z), jnp.real(z).sum()
        return lax.scan(step, z0, None, length=300)

    z0 = (f32(256) + 1j * f32(256)).astype(np.complex64)
    return run, (z0, np.complex64(np.exp(0.01j)))


# ---- MCMC and ODE steppers ----

def hmc_while_leapfrog():
    def log_density(q):  # a correlated Gaussian in 10 dimensions
        return -0.5 * jnp.sum(q ** 2) - 0.45 * jnp.sum(q[1:] * q[:-1])

    def sample(q0, p0):
        grad = jax.grad(log_density)

        def cond(s):
            return s[0] < 30

        def body(s):
            i, q, p = s
            p = p + 0.05 * grad(q)
            q = q + 0.1 * p
            p = p + 0.05 * grad(q)
            return i + 1, q, p
        _, q, p = lax.while_loop(cond, body, (0, q0, p0))
        return q, log_density(q) - 0.5 * jnp.sum(p ** 2)

    return sample, (f32(10), f32(10))


def metropolis_scan_random():
    def chain(key, x0):
        key = jax.random.wrap_key_data(key)
        logp = lambda x: -0.5 * jnp.sum(x ** 2) - 0.1 * jnp.sum(x ** 4)

        def step(carry, k):
            x, lp = carry
            k1, k2 = jax.random.split(k)
            prop = x + 0.5 * jax.random.normal(k1, x.shape)
            lp_prop = logp(prop)
            accept = jnp.log(jax.random.uniform(k2)) < lp_prop - lp
            x, lp = jnp.where(accept, prop, x), jnp.where(accept, lp_prop, lp)
            return (x, lp), x[0]
        return lax.scan(step, (x0, logp(x0)), jax.random.split(key, 500))

    return chain, (np.array([0, 7], np.uint32), f32(4))


def diffrax_tsit5_grad():
    import diffrax

    def vector_field(t, y, args):
        k1, k2 = args
        prey, pred = y[0], y[1]
        return jnp.stack([k1 * prey - 0.1 * prey * pred, 0.075 * prey * pred - k2 * pred])

    def loss(params, y0):
        sol = diffrax.diffeqsolve(diffrax.ODETerm(vector_field), diffrax.Tsit5(), t0=0.0, t1=10.0,
                                  dt0=0.1, y0=y0, args=params,
                                  stepsize_controller=diffrax.PIDController(rtol=1e-5, atol=1e-5),
                                  saveat=diffrax.SaveAt(t1=True), max_steps=4096)
        return jnp.sum(sol.ys[-1] ** 2)

    return jax.value_and_grad(loss), ((np.float32(1.1), np.float32(1.5)),
                                      np.array([10.0, 5.0], np.float32))


def diffrax_dopri5_batch():
    import diffrax

    def solve(y0):
        term = diffrax.ODETerm(lambda t, y, args: -y + jnp.sin(3.0 * t) * y[::-1])
        sol = diffrax.diffeqsolve(term, diffrax.Dopri5(), t0=0.0, t1=5.0, dt0=0.05, y0=y0,
                                  stepsize_controller=diffrax.PIDController(rtol=1e-6, atol=1e-6),
                                  saveat=diffrax.SaveAt(ts=jnp.linspace(0.0, 5.0, 11)))
        return sol.ys

    return solve, (f32(32),)


def diffrax_vdp_saveat_grad():
    """A Van der Pol oscillator solved with diffrax's Dopri5 at 20 output times (SaveAt(ts=...)),
    and the gradient of a fit to those outputs with respect to the damping."""
    import diffrax

    def loss(mu, y0, target):
        field = lambda t, y, mu: jnp.stack([y[1], mu * (1.0 - y[0] ** 2) * y[1] - y[0]])
        ts = jnp.linspace(0.0, 6.0, 20)
        sol = diffrax.diffeqsolve(diffrax.ODETerm(field), diffrax.Dopri5(), t0=0.0, t1=6.0,
                                  dt0=0.05, y0=y0, args=mu, saveat=diffrax.SaveAt(ts=ts),
                                  stepsize_controller=diffrax.PIDController(rtol=1e-5, atol=1e-6),
                                  max_steps=2048)
        return jnp.mean((sol.ys - target) ** 2)

    return jax.value_and_grad(loss), (np.float32(1.3), np.array([2.0, 0.0], np.float32),
                                      f32(20, 2))


def metropolis_cond_in_scan():
    """Random-walk Metropolis whose accept step is a `lax.cond` (not a `where`), counting
    acceptances: 400 steps over 8 dimensions."""
    def chain(key, x0):
        logp = lambda x: -0.5 * jnp.sum(x ** 2) - 0.1 * jnp.sum(x ** 4)

        def step(carry, k):
            x, lp, n = carry
            k1, k2 = jax.random.split(k)
            prop = x + 0.4 * jax.random.normal(k1, x.shape)
            lp_prop = logp(prop)
            accept = jnp.log(jax.random.uniform(k2)) < lp_prop - lp
            x, lp, n = lax.cond(accept, lambda: (prop, lp_prop, n + 1), lambda: (x, lp, n))
            return (x, lp, n), lp
        keys = jax.random.split(jax.random.wrap_key_data(key), 400)
        return lax.scan(step, (x0, logp(x0), jnp.int32(0)), keys)

    return chain, (np.array([0, 11], np.uint32), f32(8))



def diffrax_pendulum_tsit5_saveat_grad():
    """A damped driven pendulum solved with diffrax's Tsit5 at 30 output times (SaveAt(ts=...)), and
    the gradient of a fit to those outputs with respect to the damping and the drive."""
    import diffrax

    def loss(params, y0, target):
        def field(t, y, args):
            damping, drive = args
            return jnp.stack([y[1], -damping * y[1] - 9.81 * jnp.sin(y[0]) + drive * jnp.cos(t)])
        ts = jnp.linspace(0.0, 4.0, 30)
        sol = diffrax.diffeqsolve(diffrax.ODETerm(field), diffrax.Tsit5(), t0=0.0, t1=4.0,
                                  dt0=0.02, y0=y0, args=params, saveat=diffrax.SaveAt(ts=ts),
                                  stepsize_controller=diffrax.PIDController(rtol=1e-6, atol=1e-6),
                                  max_steps=1024)
        return jnp.mean((sol.ys - target) ** 2)

    return jax.value_and_grad(loss), ((np.float32(0.3), np.float32(0.8)),
                                      np.array([1.0, 0.0], np.float32), f32(30, 2))


def hmc_cond_accept_in_scan():
    """Hamiltonian Monte Carlo as a user writes it: a `scan` of 100 transitions, each a `fori_loop`
    of 8 leapfrog steps taking the `grad` of a banana-shaped log-density, then a Metropolis
    accept as a `lax.cond` (counting acceptances)."""
    def log_density(q):
        return -0.5 * (q[0] ** 2 / 4.0 + (q[1] - 0.5 * q[0] ** 2) ** 2) - 0.5 * jnp.sum(q[2:] ** 2)

    def chain(key, q0):
        grad = jax.grad(log_density)

        def leapfrog(_, qp):
            q, p = qp
            p = p + 0.05 * grad(q)
            q = q + 0.1 * p
            return q, p + 0.05 * grad(q)

        def step(carry, k):
            q, n = carry
            k1, k2 = jax.random.split(k)
            p0 = jax.random.normal(k1, q.shape)
            q1, p1 = lax.fori_loop(0, 8, leapfrog, (q, p0))
            log_ratio = (log_density(q1) - 0.5 * jnp.sum(p1 ** 2) -
                         log_density(q) + 0.5 * jnp.sum(p0 ** 2))
            accept = jnp.log(jax.random.uniform(k2)) < log_ratio
            q, n = lax.cond(accept, lambda: (q1, n + 1), lambda: (q, n))
            return (q, n), q[0]
        keys = jax.random.split(jax.random.wrap_key_data(key), 100)
        return lax.scan(step, (q0, jnp.int32(0)), keys)

    return chain, (np.array([0, 5], np.uint32), f32(6))

# ---- convolutional networks ----

def _conv(x, w, strides, padding, dn, **kw):
    return lax.conv_general_dilated(x, w, strides, padding, dimension_numbers=dn, **kw)


def conv1d_value_and_grad():
    def loss(w1, w2, x):
        h = jax.nn.gelu(_conv(x, w1, (2,), "SAME", ("NWC", "WIO", "NWC")))
        h = _conv(h, w2, (1,), "VALID", ("NWC", "WIO", "NWC"), rhs_dilation=(2,))
        return jnp.mean(h ** 2)
    return jax.value_and_grad(loss, argnums=(0, 1)), (f32(5, 3, 13) * 0.2, f32(3, 13, 7) * 0.2,
                                                      f32(8, 200, 3))


def conv2d_nchw_odd_value_and_grad():
    def loss(w1, w2, x):
        h = jax.nn.relu(_conv(x, w1, (1, 1), "SAME", ("NCHW", "OIHW", "NCHW")))
        h = _conv(h, w2, (2, 2), "SAME", ("NCHW", "OIHW", "NCHW"))
        return jnp.mean(h ** 2)
    return jax.value_and_grad(loss, argnums=(0, 1)), (f32(7, 3, 5, 5) * 0.1, f32(11, 7, 3, 3) * 0.1,
                                                      f32(8, 3, 28, 28))


def conv2d_dilated_grouped():
    def forward(w, x):
        return _conv(x, w, (1, 1), "SAME", ("NHWC", "HWIO", "NHWC"), rhs_dilation=(2, 2),
                     feature_group_count=4)
    return forward, (f32(3, 3, 8, 32) * 0.1, f32(4, 40, 40, 32))


def conv3d_forward():
    def forward(w, x):
        return jax.nn.relu(_conv(x, w, (1, 2, 2), "SAME", ("NDHWC", "DHWIO", "NDHWC")))
    return forward, (f32(3, 3, 3, 4, 8) * 0.1, f32(2, 8, 24, 24, 4))


def flax_cnn_batchnorm_adamw():
    import flax.linen as nn
    import optax

    class CNN(nn.Module):
        @nn.compact
        def __call__(self, x, train: bool):
            x = nn.Conv(12, (3, 3), use_bias=False)(x)  # BatchNorm follows: no bias
            x = nn.BatchNorm(use_running_average=not train)(x)
            x = nn.relu(x)
            x = nn.avg_pool(x, (2, 2), strides=(2, 2))
            x = nn.Conv(20, (3, 3), use_bias=False)(x)
            x = nn.BatchNorm(use_running_average=not train)(x)
            x = nn.relu(x)
            x = x.mean(axis=(1, 2))
            return nn.Dense(10)(x)

    model = CNN()
    x = f32(16, 20, 20, 3)
    y = RNG.integers(0, 10, 16).astype(np.int32)
    variables = model.init(jax.random.key(0), x, train=False)
    tx = optax.adamw(1e-3, weight_decay=1e-4)
    opt_state = tx.init(variables["params"])

    def train_step(params, batch_stats, opt_state, x, y):
        def loss_fn(params):
            logits, updates = model.apply({"params": params, "batch_stats": batch_stats}, x,
                                          train=True, mutable=["batch_stats"])
            loss = optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
            return loss, updates["batch_stats"]
        (loss, batch_stats), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), batch_stats, opt_state, loss

    host = jax.tree_util.tree_map(np.asarray, (variables["params"], variables["batch_stats"],
                                               opt_state))
    return train_step, (*host, x, y)


def equinox_mlp_adam():
    import equinox as eqx
    import optax

    model = eqx.nn.MLP(in_size=32, out_size=4, width_size=64, depth=3, key=jax.random.key(1))
    params, static = eqx.partition(model, eqx.is_array)
    tx = optax.adam(3e-3)
    opt_state = tx.init(params)

    def step(params, opt_state, x, y):
        def loss(params):
            m = eqx.combine(params, static)
            return jnp.mean((jax.vmap(m)(x) - y) ** 2)
        value, grads = jax.value_and_grad(loss)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return eqx.apply_updates(params, updates), opt_state, value

    host = jax.tree_util.tree_map(np.asarray, (params, opt_state))
    return step, (*host, f32(128, 32), f32(128, 4))


# ---- reductions over other axis sets and odd sizes ----

ODD = (37, 53, 29)


def reduce_odd(kind, axis):
    fn = {"sum": jnp.sum, "max": jnp.max, "min": jnp.min, "argmin": jnp.argmin,
          "argmax": jnp.argmax, "logsumexp": jax.nn.logsumexp, "std": jnp.std,
          "mean": jnp.mean}[kind]
    return (lambda x: fn(x, axis=axis)), (f32(*ODD),)


def reduce_int32_axis1():
    return (lambda x: jnp.sum(x, axis=1)), (RNG.integers(-1000, 1000, (999, 333)).astype(np.int32),)


def reduce_f64_all():
    return jnp.sum, (f64(1000, 1001),)


def mean_bf16_axis0():
    import ml_dtypes
    return (lambda x: jnp.mean(x, axis=0)), (f32(2048, 512).astype(ml_dtypes.bfloat16),)


def sum_bf16_axes02_odd():
    import ml_dtypes
    return (lambda x: jnp.sum(x, axis=(0, 2))), (f32(37, 301, 65).astype(ml_dtypes.bfloat16),)


def var_bf16_axes02_odd():
    import ml_dtypes
    return (lambda x: jnp.var(x, axis=(0, 2))), (f32(37, 129, 65).astype(ml_dtypes.bfloat16),)


def max_f64_axis1_odd():
    return (lambda x: jnp.max(x, axis=1)), (f64(37, 129, 65),)


def logsumexp_axis0_odd():
    return (lambda x: jax.nn.logsumexp(x, axis=0)), (f32(*ODD),)


# ---- prefix scans ----

def cumsum_1m():
    return jnp.cumsum, (f32(1 << 20),)


def cumprod_axis0():
    return (lambda x: jnp.cumprod(x, axis=0)), ((1.0 + 0.01 * f32(1000, 64)),)


def cummax_rows():
    return (lambda x: lax.cummax(x, axis=1)), (f32(256, 1000),)


def associative_scan_linear_recurrence():
    def recurrence(a, b):  # h_t = a_t * h_{t-1} + b_t, by an associative scan
        def combine(l, r):
            return r[0] * l[0], r[0] * l[1] + r[1]
        return lax.associative_scan(combine, (a, b))[1]
    return recurrence, (np.abs(f32(4096, 16)) * 0.5, f32(4096, 16))


# ---- gathers, scatters, sorts ----

def top_k_rows():
    return (lambda x: lax.top_k(x, 8)), (f32(1000, 256),)


def argsort_64k():
    return jnp.argsort, (f32(1 << 16),)


def segment_sum_1m():
    ids = np.sort(RNG.integers(0, 1000, 1 << 20)).astype(np.int32)
    return (lambda x, s: jax.ops.segment_sum(x, s, num_segments=1000)), (f32(1 << 20), ids)


def embedding_value_and_grad():
    def loss(table, ids):
        return jnp.mean(jnp.tanh(table[ids]).sum(-1) ** 2)
    return jax.value_and_grad(loss), (f32(5000, 64) * 0.1,
                                      RNG.integers(0, 5000, (32, 40)).astype(np.int32))


def take_along_axis_rows():
    idx = RNG.integers(0, 300, (512, 300)).astype(np.int32)
    return (lambda x, i: jnp.take_along_axis(x, i, axis=1)), (f32(512, 300), idx)


def take_along_axis_axis0_int32():
    # e.g. reordering each column of a table by per-column ranks
    idx = RNG.integers(0, 1000, (1000, 96)).astype(np.int32)
    return (lambda x, i: jnp.take_along_axis(x, i, axis=0)), \
        (RNG.integers(-1000, 1000, (1000, 96)).astype(np.int32), idx)


# ---- attention ----

def causal_attention(dtype):
    def attend(q, k, v):
        s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / np.sqrt(q.shape[-1]).astype(q.dtype)
        mask = jnp.tril(jnp.ones((q.shape[2], k.shape[2]), bool))
        s = jnp.where(mask, s, jnp.finfo(s.dtype).min)
        return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(s, axis=-1), v)
    shape = (4, 4, 128, 32)
    return attend, tuple(f32(*shape).astype(dtype) for _ in range(3))


def bf16_attention():
    import ml_dtypes
    return causal_attention(ml_dtypes.bfloat16)


# ---- small linear algebra in batches ----

def batched_solve_3x3_1000():
    a = f32(1000, 3, 3) + 3 * np.eye(3, dtype=np.float32)
    return (lambda a, b: jnp.linalg.solve(a, b[..., None])[..., 0]), (a, f32(1000, 3))


def batched_cholesky_f64():
    a = f64(256, 8, 8)
    return jnp.linalg.cholesky, (a @ a.transpose(0, 2, 1) + 8 * np.eye(8),)


def batched_inv_4x4():
    return jnp.linalg.inv, (f32(2048, 4, 4) + 4 * np.eye(4, dtype=np.float32),)


# ---- random numbers ----

def random_uniform_1m():
    return (lambda k: jax.random.uniform(jax.random.wrap_key_data(k), (1 << 20,))), \
        (np.array([0, 3], np.uint32),)


def random_normal_17():
    return (lambda k: jax.random.normal(jax.random.wrap_key_data(k), (17,))), \
        (np.array([0, 5], np.uint32),)


def random_randint_100k():
    return (lambda k: jax.random.randint(jax.random.wrap_key_data(k), (100_000,), 0, 1000)), \
        (np.array([0, 11], np.uint32),)


def random_bits_100k():
    return (lambda k: jax.random.bits(jax.random.wrap_key_data(k), (100_000,))), \
        (np.array([0, 13], np.uint32),)


def random_permutation_split():
    def shuffle(k, x):
        k1, k2 = jax.random.split(jax.random.wrap_key_data(k))
        return jax.random.permutation(k1, x), jax.random.bernoulli(k2, 0.3, (1000,))
    return shuffle, (np.array([0, 9], np.uint32), f32(10000))


def random_bernoulli_1k():
    # dropout-style mask, as `jax.random.bernoulli(key, p, shape)` documents it
    return (lambda k: jax.random.bernoulli(jax.random.wrap_key_data(k), 0.25, (1000,))), \
        (np.array([0, 17], np.uint32),)


def random_categorical_logits():
    # sampling one class per row from logits, e.g. a policy or a language model's next token
    def sample(k, logits):
        return jax.random.categorical(jax.random.wrap_key_data(k), logits, axis=-1)
    return sample, (np.array([0, 19], np.uint32), f32(64, 10))


def random_split_normal_vmap():
    # one key per example: split, then a vmapped draw (e.g. per-example noise)
    def noise(k):
        keys = jax.random.split(jax.random.wrap_key_data(k), 8)
        return jax.vmap(lambda kk: jax.random.normal(kk, (16,)))(keys)
    return noise, (np.array([0, 23], np.uint32),)


# ---- elementwise math in other dtypes ----

def gelu_bf16():
    import ml_dtypes
    return jax.nn.gelu, (f32(1 << 20).astype(ml_dtypes.bfloat16),)


def complex64_elementwise():
    z = (f32(1 << 18) + 1j * f32(1 << 18)).astype(np.complex64)
    return (lambda z: jnp.exp(1j * z) * jnp.conj(z) + jnp.abs(z)), (z,)


def int32_bitops():
    x = RNG.integers(0, 1 << 30, 1 << 20).astype(np.int32)
    return (lambda x: ((x ^ (x >> 3)) & 0xFFFF) * 3 + (x % 7)), (x,)


def f64_elementwise():
    return (lambda x: jnp.log1p(jnp.exp(-x * x)) + jnp.sin(x) * jnp.cos(2 * x)), (f64(1 << 20),)


def hash_fori_uint32():
    """A user's integer hash mixed for 64 rounds over uint32[4096] (xorshift-multiply rounds with a
    remainder and an integer division in each, as a quick-and-dirty PRNG is written)."""
    def run(x):
        def body(i, h):
            h = h ^ (h >> 16)
            h = h * np.uint32(0x7FEB352D)
            h = h ^ (h >> 15)
            return h + (h % np.uint32(1009)) // np.uint32(7) + i.astype(jnp.uint32)
        return lax.fori_loop(0, 64, body, x)

    return run, (np.arange(4096, dtype=np.uint32) * np.uint32(2654435761),)


def digit_sum_while_int32():
    """Sum of decimal digits of 4096 int32 values: a while_loop until every value is 0, with `%` and
    `//` by 10 on the carry and `jnp.any` in the condition."""
    def run(n):
        def cond(s):
            return jnp.any(s[0] > 0)

        def body(s):
            x, total = s
            return x // 10, total + x % 10
        return lax.while_loop(cond, body, (n, jnp.zeros_like(n)))[1]

    return run, (RNG.integers(0, 1 << 31, 4096).astype(np.int32),)


def gcd_while_int32():
    """Greatest common divisors of 1000 int32 pairs by Euclid's algorithm: a while_loop until every
    remainder is 0; the divisor is the carry itself, not a constant."""
    def run(a, b):
        def cond(s):
            return jnp.any(s[1] != 0)

        def body(s):
            a, b = s
            safe = jnp.where(b == 0, 1, b)
            return jnp.where(b == 0, a, b), jnp.where(b == 0, 0, a % safe)
        return lax.while_loop(cond, body, (a, b))[0]

    return run, (RNG.integers(1, 1 << 30, 1000).astype(np.int32),
                 RNG.integers(1, 1 << 20, 1000).astype(np.int32))


def reverse_digits_while_int32():
    """Decimal digits of 1000 int32 values reversed (123 -> 321): a while_loop on `% 10` and
    `// 10` until every value is 0, the result built as r * 10 + digit."""
    def run(n):
        def cond(s):
            return jnp.any(s[0] > 0)

        def body(s):
            x, r = s
            return x // 10, r * 10 + x % 10
        return lax.while_loop(cond, body, (n, jnp.zeros_like(n)))[1]

    return run, (RNG.integers(0, 1_000_000_000, 1000).astype(np.int32),)


def popcount_fori_uint32():
    """Set bits of a xorshift stream over uint32[2048], 32 rounds of a fori_loop: the SWAR popcount
    (shifts, masks, a multiply) summed into a uint32 carry."""
    def run(x):
        def body(i, s):
            h, total = s
            h = h ^ (h << 13)
            h = h ^ (h >> 17)
            h = h ^ (h << 5)
            v = h - ((h >> 1) & np.uint32(0x55555555))
            v = (v & np.uint32(0x33333333)) + ((v >> 2) & np.uint32(0x33333333))
            v = (((v + (v >> 4)) & np.uint32(0x0F0F0F0F)) * np.uint32(0x01010101)) >> 24
            return h, total + v
        return lax.fori_loop(0, 32, body, (x, jnp.zeros_like(x)))[1]

    return run, (np.arange(1, 2049, dtype=np.uint32) * np.uint32(2654435761),)


def complex128_rotation_scan():
    """A complex128 scan of 400 steps over 128 points: multiply by a unit phase, renormalize,
    collect the mean real part (x64)."""
    def run(z0, w):
        def step(z, _):
            z = z * w
            return z / jnp.abs(z), jnp.real(z).mean()
        return lax.scan(step, z0, None, length=400)

    z0 = (f64(128) + 1j * f64(128)).astype(np.complex128)
    return run, (z0, np.complex128(np.exp(0.003j)))



def julia_fori_complex64(n):
    """Julia-set escape times over a complex64[n, n] grid: a fori_loop of 80 steps with a fixed c,
    each `where(abs(z) < 2, z * z + c, z)`, and the count of points still inside."""
    def run(z0):
        c = jnp.complex64(-0.8 + 0.156j)

        def body(i, s):
            z, count = s
            inside = jnp.abs(z) < 2.0
            return jnp.where(inside, z * z + c, z), count + inside.astype(jnp.int32)
        return lax.fori_loop(0, 80, body, (z0, jnp.zeros(z0.shape, jnp.int32)))[1]

    x = np.linspace(-1.6, 1.6, n, dtype=np.float32)
    y = np.linspace(-1.0, 1.0, n, dtype=np.float32)
    return run, ((x[None, :] + 1j * y[:, None]).astype(np.complex64),)


def phasor_chain_complex64():
    """A complex64 elementwise chain over [64k]: phasors exp(1j * theta) applied to amplitudes,
    the interference with the conjugate, and the power."""
    theta = (f32(1 << 16) * np.float32(np.pi)).astype(np.float32)
    a = (f32(1 << 16) + 1j * f32(1 << 16)).astype(np.complex64)

    def run(theta, a):
        s = a * jnp.exp(1j * theta)
        field = s + 0.5 * jnp.conj(s) - a
        return jnp.abs(field) ** 2 + jnp.real(s * a)
    return run, (theta, a)


def damped_oscillators_scan_complex128():
    """A complex128 scan of 300 steps over 512 damped driven oscillators: z = z * w + f, the
    mean |z| collected per step (x64)."""
    def run(z0, w, f):
        def step(z, _):
            z = z * w + f
            return z, jnp.abs(z).mean()
        return lax.scan(step, z0, None, length=300)

    z0 = (f64(512) + 1j * f64(512)).astype(np.complex128)
    w = (0.995 * np.exp(1j * np.linspace(0.001, 0.1, 512))).astype(np.complex128)
    return run, (z0, w, np.complex128(0.01 + 0.002j))

def mandelbrot_while_complex64():
    """Escape times over complex64[48, 48], a while_loop that stops when every point escaped or
    after 60 iterations (the condition reads the carry)."""
    def run(c):
        def cond(s):
            z, count, i = s
            return jnp.logical_and(i < 60, jnp.any(jnp.abs(z) <= 2.0))

        def body(s):
            z, count, i = s
            inside = jnp.abs(z) <= 2.0
            return jnp.where(inside, z * z + c, z), count + inside, i + 1
        return lax.while_loop(cond, body, (jnp.zeros_like(c), jnp.zeros(c.shape, jnp.int32), 0))[1]

    x = np.linspace(-2.1, 0.7, 48, dtype=np.float32)
    y = np.linspace(-1.3, 1.3, 48, dtype=np.float32)
    return run, ((x[None, :] + 1j * y[:, None]).astype(np.complex64),)


def kepler_newton_fori_f64():
    """Kepler's equation E - e sin E = M solved for one orbit position by 40 Newton steps in a
    float64 fori_loop over a scalar carry (scalar sin and cos in the body; x64)."""
    def solve(m, e):
        def newton(i, ecc_anomaly):
            f = ecc_anomaly - e * jnp.sin(ecc_anomaly) - m
            return ecc_anomaly - f / (1.0 - e * jnp.cos(ecc_anomaly))
        return lax.fori_loop(0, 40, newton, m)

    return solve, (np.float64(1.3), np.float64(0.7))


def projectile_drag_while_f32():
    """A projectile with quadratic drag stepped by semi-implicit Euler until it lands or after
    20,000 steps: a while_loop over an int32 counter and float32[3] position and velocity, whose
    condition reads the carry."""
    def fly(x0, v0):
        def cond(s):
            i, x, _ = s
            return jnp.logical_and(i < 20000, x[2] >= 0.0)

        def body(s):
            i, x, v = s
            dt = jnp.float32(1e-3)
            a = jnp.array([0.0, 0.0, -9.81], jnp.float32) - 0.02 * jnp.linalg.norm(v) * v
            v = v + dt * a
            return i + 1, x + dt * v, v
        return lax.while_loop(cond, body, (jnp.int32(0), x0, v0))

    return fly, (np.array([0.0, 0.0, 0.0], np.float32), np.array([30.0, 5.0, 40.0], np.float32))


def metropolis_fori_random_f32():
    """A Metropolis random walk on a scalar: a fori_loop of 2,000 steps, each drawing a Gaussian
    proposal and a uniform with jax.random from a key folded with the step index, accepting by
    log-density difference, counting acceptances in an int32 carry (f32 state; log inside)."""
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
        return lax.fori_loop(0, 2000, step, (x0, logp(x0), jnp.int32(0)))

    return chain, (np.array([0, 11], np.uint32), np.float32(0.3))


def damped_newton_grad_while_f64():
    """Damped Newton's method on a scalar float64 objective whose first and second derivatives
    come from jax.grad, in a while_loop that stops when the step is below 1e-12 or after 100
    iterations (x64; exp, log and tanh inside the derivatives)."""
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

    return minimize, (np.float64(2.5), np.float64(0.6))


# name -> (factory, exact): True compares bit for bit (integer results, random bits), False with
# rtol = atol = 1e-3, a number with that tolerance: bf16 programs (bf16 keeps 8 bits), and the
# escape-time counts, where one rounding near the set's edge moves a count by one.
USER_PROGRAMS = {
    "u_lorenz_rk4_scan_f64": (lorenz_rk4_f64, False),
    "u_mandelbrot_fori_c64_64": (lambda: mandelbrot_complex64(64), 1.0),
    "u_mandelbrot_fori_c64_256": (lambda: mandelbrot_complex64(256), 1.0),
    "u_newton_while_f64": (newton_sqrt_while_f64, False),
    "u_logistic_fori_f32_8": (logistic_map_fori_f32, False),
    "u_heat_scan_f32_1k": (heat_diffusion_scan_1k, False),
    "u_gd_grad_in_scan": (gradient_descent_grad_in_scan, False),
    "u_grad_through_rnn_scan": (grad_through_rnn_scan, False),
    "u_collatz_while_i32": (collatz_while_int32, True),
    "u_complex_rotation_scan": (complex_rotation_scan, False),
    "u_hmc_while_leapfrog": (hmc_while_leapfrog, False),
    "u_metropolis_scan_random": (metropolis_scan_random, False),
    "u_diffrax_tsit5_grad": (diffrax_tsit5_grad, False),
    "u_diffrax_dopri5_batch": (diffrax_dopri5_batch, False),
    "u_diffrax_vdp_saveat_grad": (diffrax_vdp_saveat_grad, False),
    "u_metropolis_cond_in_scan": (metropolis_cond_in_scan, False),
    "u_diffrax_pendulum_tsit5_saveat_grad": (diffrax_pendulum_tsit5_saveat_grad, False),
    "u_hmc_cond_accept_in_scan": (hmc_cond_accept_in_scan, False),
    "u_conv1d_value_and_grad": (conv1d_value_and_grad, False),
    "u_conv2d_nchw_odd_value_and_grad": (conv2d_nchw_odd_value_and_grad, False),
    "u_conv2d_dilated_grouped": (conv2d_dilated_grouped, False),
    "u_conv3d_forward": (conv3d_forward, False),
    "u_flax_cnn_batchnorm_adamw": (flax_cnn_batchnorm_adamw, False),
    "u_equinox_mlp_adam": (equinox_mlp_adam, False),
    "u_reduce_sum_axes02_odd": (lambda: reduce_odd("sum", (0, 2)), False),
    "u_reduce_max_axis1_odd": (lambda: reduce_odd("max", 1), False),
    "u_reduce_min_axis0_odd": (lambda: reduce_odd("min", 0), False),
    "u_argmin_axis0_odd": (lambda: reduce_odd("argmin", 0), True),
    "u_argmax_axis1_odd": (lambda: reduce_odd("argmax", 1), True),
    "u_logsumexp_axes12_odd": (lambda: reduce_odd("logsumexp", (1, 2)), False),
    "u_std_axis0_odd": (lambda: reduce_odd("std", 0), False),
    "u_mean_axes01_odd": (lambda: reduce_odd("mean", (0, 1)), False),
    "u_reduce_sum_i32_axis1": (reduce_int32_axis1, True),
    "u_reduce_sum_f64_all": (reduce_f64_all, False),
    "u_mean_bf16_axis0": (mean_bf16_axis0, 3e-2),
    "u_sum_bf16_axes02_odd": (sum_bf16_axes02_odd, 3e-2),
    "u_var_bf16_axes02_odd": (var_bf16_axes02_odd, 3e-2),
    "u_max_f64_axis1_odd": (max_f64_axis1_odd, True),
    "u_logsumexp_axis0_odd": (logsumexp_axis0_odd, False),
    "u_cumsum_f32_1m": (cumsum_1m, False),
    "u_cumprod_axis0": (cumprod_axis0, False),
    "u_cummax_rows": (cummax_rows, True),
    "u_associative_scan_recurrence": (associative_scan_linear_recurrence, False),
    "u_top_k_rows": (top_k_rows, True),
    "u_argsort_64k": (argsort_64k, True),
    "u_segment_sum_1m": (segment_sum_1m, False),
    "u_embedding_value_and_grad": (embedding_value_and_grad, False),
    "u_take_along_axis": (take_along_axis_rows, True),
    "u_take_along_axis0_i32": (take_along_axis_axis0_int32, True),
    "u_causal_attention_f32": (lambda: causal_attention(np.float32), False),
    "u_causal_attention_bf16": (bf16_attention, 3e-2),
    "u_batched_solve_3x3_1000": (batched_solve_3x3_1000, False),
    "u_batched_cholesky_f64": (batched_cholesky_f64, False),
    "u_batched_inv_4x4": (batched_inv_4x4, False),
    "u_random_uniform_1m": (random_uniform_1m, True),
    "u_random_normal_17": (random_normal_17, False),
    "u_random_permutation_split": (random_permutation_split, True),
    "u_random_randint_100k": (random_randint_100k, True),
    "u_random_bits_100k": (random_bits_100k, True),
    "u_random_bernoulli_1k": (random_bernoulli_1k, True),
    "u_random_categorical_64x10": (random_categorical_logits, True),
    "u_random_split_normal_vmap": (random_split_normal_vmap, False),
    "u_gelu_bf16_1m": (gelu_bf16, 3e-2),
    "u_complex64_elementwise": (complex64_elementwise, False),
    "u_int32_bitops_1m": (int32_bitops, True),
    "u_f64_elementwise_1m": (f64_elementwise, False),
    "u_hash_fori_u32_4k": (hash_fori_uint32, True),
    "u_digit_sum_while_i32_4k": (digit_sum_while_int32, True),
    "u_gcd_while_i32_1k": (gcd_while_int32, True),
    "u_reverse_digits_while_i32_1k": (reverse_digits_while_int32, True),
    "u_popcount_fori_u32_2k": (popcount_fori_uint32, True),
    "u_complex128_rotation_scan": (complex128_rotation_scan, False),
    "u_mandelbrot_while_c64_48": (mandelbrot_while_complex64, 1.0),
    "u_julia_fori_c64_128": (lambda: julia_fori_complex64(128), 1.0),
    "u_julia_fori_c64_40": (lambda: julia_fori_complex64(40), 1.0),
    "u_phasor_chain_c64_64k": (phasor_chain_complex64, False),
    "u_damped_scan_c128_512": (damped_oscillators_scan_complex128, False),
    "u_kepler_newton_fori_f64": (kepler_newton_fori_f64, False),
    "u_projectile_drag_while_f32": (projectile_drag_while_f32, False),
    "u_metropolis_fori_random_f32": (metropolis_fori_random_f32, False),
    "u_damped_newton_grad_while_f64": (damped_newton_grad_while_f64, False),
}

X64 = {"u_lorenz_rk4_scan_f64", "u_newton_while_f64", "u_reduce_sum_f64_all",
       "u_batched_cholesky_f64", "u_f64_elementwise_1m"}
X64.add("u_complex128_rotation_scan")
X64.add("u_damped_scan_c128_512")
X64.add("u_kepler_newton_fori_f64")
X64.add("u_damped_newton_grad_while_f64")

from programs_users_nn import NN_PROGRAMS, NN_X64  # noqa: E402  (more NN / linear algebra)

USER_PROGRAMS.update(NN_PROGRAMS)
X64 |= NN_X64


# ---- softmax / logsumexp over short last axes (issue 35: rows of 17 to 200 elements) ----

def mixture_loglik_17_f32():
    """Log-likelihood of 8,192 points under a 17-component 1-D Gaussian mixture (logsumexp over
    rows of 17)."""
    def loglik(x, logits, mu, log_sigma):
        log_w = jax.nn.log_softmax(logits)
        z = (x[:, None] - mu) / jnp.exp(log_sigma)
        log_p = -0.5 * z**2 - log_sigma - 0.5 * jnp.log(2 * jnp.pi)
        return jax.nn.logsumexp(log_w + log_p, axis=-1).sum()
    return loglik, (f32(8192), f32(17), f32(17), 0.1 * f32(17))


def classifier_softmax_200_bf16():
    """Class probabilities of a bf16 classifier's logits, 1,024 examples over 200 classes."""
    import ml_dtypes
    return (lambda logits: jax.nn.softmax(logits, axis=-1)), (
        (3 * f32(1024, 200)).astype(ml_dtypes.bfloat16),)


def cross_entropy_10_value_and_grad():
    """A 10-class classifier's cross-entropy (`jax.nn.log_softmax` over [4096, 10] logits, the
    labels' log-probabilities picked out) and its gradient with respect to the logits."""
    def loss(logits, labels):
        logp = jax.nn.log_softmax(logits, axis=-1)
        return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=-1))
    labels = np.random.default_rng(10).integers(0, 10, size=4096).astype(np.int32)
    return jax.value_and_grad(loss), (3 * f32(4096, 10), labels)


def logsumexp_rows5_f64():
    """`jax.nn.logsumexp` over rows of 5 of an f64[32768, 5] array (a 5-state HMM's forward
    step normalisers)."""
    return (lambda x: jax.nn.logsumexp(x, axis=-1)), (3 * f64(32768, 5),)


USER_PROGRAMS.update({
    "u_mixture_logsumexp_17_f32": (mixture_loglik_17_f32, False),
    "u_softmax_200_bf16": (classifier_softmax_200_bf16, 3e-2),
    "u_cross_entropy_10_grad_f32": (cross_entropy_10_value_and_grad, False),
    "u_logsumexp_rows5_f64": (logsumexp_rows5_f64, False),
})
X64.add("u_logsumexp_rows5_f64")
X64.add("u_max_f64_axis1_odd")

from programs_users_complex import COMPLEX_PROGRAMS, COMPLEX_X64  # noqa: E402  (complex filters)

USER_PROGRAMS.update(COMPLEX_PROGRAMS)
X64 |= COMPLEX_X64

# ---- sorts and searches as users write them (issue 35, points 1 and 5) ----

def top_k_10_rows_4096():
    """The 10 best scores of each of 512 rows of 4,096 (retrieval, beam search)."""
    return (lambda x: lax.top_k(x, 10)), (f32(512, 4096),)


def sort_1m_f32():
    """`jnp.sort` of 2^20 float32 values (quantiles, medians, ranks)."""
    return jnp.sort, (f32(1 << 20),)


def searchsorted_unique_ids():
    """Ids of 2^16 queries among the distinct values of 2^16 integers (a `jnp.unique`-then-
    `searchsorted` lookup)."""
    def lookup(values, queries):
        table = jnp.sort(values)
        return jnp.searchsorted(table, queries, method="sort")
    return lookup, (RNG.integers(0, 50_000, 1 << 16).astype(np.int32),
                    RNG.integers(0, 50_000, 1 << 16).astype(np.int32))


USER_PROGRAMS.update({
    "u_top_k_10_rows_4096": (top_k_10_rows_4096, True),
    "u_sort_1m_f32": (sort_1m_f32, True),
    "u_searchsorted_unique_ids": (searchsorted_unique_ids, True),
})
