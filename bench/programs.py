"""The programs bench/run times. Each entry makes (function, inputs as NumPy arrays); the function
is plain JAX code, jitted once per backend by the harness.

Sizes follow issue 10's list: loops (scan, fori_loop, while_loop), fused elementwise math,
reductions, dense algebra, small models, and trivial programs that expose dispatch overhead.
"""

from __future__ import annotations

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

RNG = np.random.default_rng(0)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


# ---- loops ----

def rk4_scan():
    def f(y):
        return jnp.stack([10.0 * (y[1] - y[0]), y[0] * (28.0 - y[2]) - y[1], y[0] * y[1] - 8.0 / 3.0 * y[2]])

    def run(y0):
        def step(y, _):
            h = 0.001
            k1 = f(y)
            k2 = f(y + h / 2 * k1)
            k3 = f(y + h / 2 * k2)
            k4 = f(y + h * k3)
            y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
            return y, y
        return lax.scan(step, y0, None, length=1000)

    return run, (np.array([1.0, 1.0, 1.0], np.float32),)


def fori_scalar():
    return (lambda x: lax.fori_loop(0, 10_000, lambda i, c: c * 0.999 + 1.0, x)), (np.float32(1.0),)


def rnn_scan():
    def run(w, u, xs, h0):
        def step(h, x):
            h = jnp.tanh(h @ w + x @ u)
            return h, h
        return lax.scan(step, h0, xs)

    return run, (f32(64, 64) * 0.1, f32(32, 64) * 0.1, f32(100, 16, 32), f32(16, 64))


def while_ode():
    """Adaptive-step Euler/Heun integration of y' = -y + sin(t) until t reaches 10 (while_loop)."""
    def run(y0):
        def cond(s):
            return s[0] < 10.0

        def body(s):
            t, y, h = s
            k1 = -y + jnp.sin(t)
            k2 = -(y + h * k1) + jnp.sin(t + h)
            err = jnp.max(jnp.abs(h * (k2 - k1) / 2))
            y = y + h * (k1 + k2) / 2
            h = jnp.clip(h * jnp.sqrt(1e-4 / (err + 1e-12)), 1e-4, 0.1)
            return t + h, y, h
        return lax.while_loop(cond, body, (jnp.float32(0.0), y0, jnp.float32(0.01)))

    return run, (f32(8),)


# ---- elementwise, reductions ----

def elementwise_chain():
    return (lambda x, y: jnp.tanh(x) * y + jnp.exp(-x * x) - jnp.sqrt(jnp.abs(y))), (f32(4 << 20), f32(4 << 20))


def softmax():
    return (lambda x: jax.nn.softmax(x, axis=-1)), (f32(4096, 1024),)


def reduction(kind, axis):
    fn = {"sum": jnp.sum, "max": jnp.max, "argmax": jnp.argmax}[kind]
    return (lambda x: fn(x, axis=axis)), (f32(2048, 2048),)


# ---- dense algebra ----

def gemm(n):
    return (lambda a, b: a @ b), (f32(n, n), f32(n, n))


def batched_solve():
    a = f32(4096, 3, 3) + 3 * np.eye(3, dtype=np.float32)
    return (lambda a, b: jnp.linalg.solve(a, b)), (a, f32(4096, 3, 1))


# ---- models ----

def mlp_value_and_grad():
    def loss(p, x, y):
        h = jax.nn.relu(x @ p["w1"] + p["b1"])
        logits = h @ p["w2"] + p["b2"]
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * y, axis=-1))
    p = {"w1": f32(784, 128) * 0.03, "b1": np.zeros(128, np.float32),
         "w2": f32(128, 10) * 0.1, "b2": np.zeros(10, np.float32)}
    y = np.eye(10, dtype=np.float32)[RNG.integers(0, 10, 64)]
    return jax.value_and_grad(loss), (p, f32(64, 784), y)


def transformer_value_and_grad(layers=2):
    d, heads, seq, batch = 128, 4, 64, 8

    def layer(p, x):
        q, k, v = (x @ p["wq"], x @ p["wk"], x @ p["wv"])
        split = lambda t: t.reshape(batch, seq, heads, d // heads).transpose(0, 2, 1, 3)
        q, k, v = split(q), split(k), split(v)
        att = jax.nn.softmax(q @ k.transpose(0, 1, 3, 2) / np.sqrt(d // heads), axis=-1)
        o = (att @ v).transpose(0, 2, 1, 3).reshape(batch, seq, d)
        x = x + o @ p["wo"]
        mu = x.mean(-1, keepdims=True)
        x = (x - mu) / jnp.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + 1e-5)
        return x + jax.nn.gelu(x @ p["w1"]) @ p["w2"]

    def loss(ps, x):
        for p in ps:
            x = layer(p, x)
        return jnp.mean(x ** 2)

    ps = [{"wq": f32(d, d) * 0.05, "wk": f32(d, d) * 0.05, "wv": f32(d, d) * 0.05,
           "wo": f32(d, d) * 0.05, "w1": f32(d, 4 * d) * 0.05, "w2": f32(4 * d, d) * 0.05}
          for _ in range(layers)]
    return jax.value_and_grad(loss), (ps, f32(batch, seq, d))


def cnn_value_and_grad():
    def loss(w1, w2, x):
        h = lax.conv_general_dilated(x, w1, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        h = jax.nn.relu(h)
        h = lax.conv_general_dilated(h, w2, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return jnp.mean(h ** 2)
    return jax.value_and_grad(loss, argnums=(0, 1)), (f32(3, 3, 3, 16) * 0.1, f32(3, 3, 16, 32) * 0.1, f32(16, 32, 32, 3))


def resnet_value_and_grad(blocks=10):
    """A ResNet-style CNN as users write one (NHWC, 3x3 convolutions with identity shortcuts, a
    strided 1x1 projection per stage, global average pooling, a dense head): 2 * blocks + 3
    convolutions, value and grad."""
    stages = (16, 32, 64)

    def conv(x, w, stride=1):
        return lax.conv_general_dilated(x, w, (stride, stride), "SAME",
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def loss(p, x, y):
        h = jax.nn.relu(conv(x, p["stem"]))
        for s, blocks_in_stage in enumerate(p["stages"]):
            if s > 0:
                h = conv(h, p["proj"][s - 1], 2)
            for w1, w2 in blocks_in_stage:
                h = jax.nn.relu(h + conv(jax.nn.relu(conv(h, w1)), w2))
        logits = h.mean(axis=(1, 2)) @ p["head"]
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * y, axis=-1))

    per_stage = [blocks // len(stages) + (1 if i < blocks % len(stages) else 0)
                 for i in range(len(stages))]
    p = {"stem": f32(3, 3, 3, stages[0]) * 0.2,
         "proj": [f32(1, 1, stages[i], stages[i + 1]) * 0.2 for i in range(len(stages) - 1)],
         "stages": [[(f32(3, 3, c, c) * 0.05, f32(3, 3, c, c) * 0.05) for _ in range(n)]
                    for c, n in zip(stages, per_stage)],
         "head": f32(stages[-1], 10) * 0.1}
    y = np.eye(10, dtype=np.float32)[RNG.integers(0, 10, 8)]
    return jax.value_and_grad(loss), (p, f32(8, 32, 32, 3), y)


# ---- random, trivial ----

def random_normal():
    return (lambda k: jax.random.normal(jax.random.wrap_key_data(k), (3,))), (np.array([0, 42], np.uint32),)


def times_two():
    return (lambda x: x * 2), (f32(16),)


def one_plus_one():
    return (lambda x: x + 1), (np.float32(1.0),)


# name -> (factory, exact) ; exact: compare bit for bit (random bits), else with tolerance.
PROGRAMS = {
    "rk4_scan_1000": (rk4_scan, False),
    "fori_loop_10k_scalar": (fori_scalar, False),
    "rnn_scan_100_h64_b16": (rnn_scan, False),
    "while_loop_adaptive_ode": (while_ode, False),
    "elementwise_chain_4M": (elementwise_chain, False),
    "softmax_4096x1024": (softmax, False),
    "reduce_sum_axis0": (lambda: reduction("sum", 0), False),
    "reduce_sum_axis1": (lambda: reduction("sum", 1), False),
    "reduce_max_axis0": (lambda: reduction("max", 0), False),
    "reduce_max_axis1": (lambda: reduction("max", 1), False),
    "argmax_axis0": (lambda: reduction("argmax", 0), True),
    "argmax_axis1": (lambda: reduction("argmax", 1), True),
    "gemm_f32_256": (lambda: gemm(256), False),
    "gemm_f32_512": (lambda: gemm(512), False),
    "gemm_f32_1024": (lambda: gemm(1024), False),
    "gemm_f32_2048": (lambda: gemm(2048), False),
    "batched_solve_3x3_4096": (batched_solve, False),
    "mlp_value_and_grad": (mlp_value_and_grad, False),
    "transformer_2layer_value_and_grad": (transformer_value_and_grad, False),
    "cnn_value_and_grad": (cnn_value_and_grad, False),
    "random_normal_3": (random_normal, True),
    "x_times_2": (times_two, True),
    "one_plus_one": (one_plus_one, True),
}

# Compiled only (bench/run --kinds compile): large programs, where XLA:CPU's compile takes
# seconds, so compile time must stay linear in program size. bench/compile_scaling.py splits
# Kiln's own PJRT_Client_Compile from the rest per layer.
COMPILE_PROGRAMS = {
    "transformer_12layer_value_and_grad": (lambda: transformer_value_and_grad(12), False),
    "transformer_24layer_value_and_grad": (lambda: transformer_value_and_grad(24), False),
    "resnet23conv_value_and_grad": (lambda: resnet_value_and_grad(10), False),
}

# Users' programs (issue 35): other families, shapes and dtypes, written as users write them.
from programs_users import USER_PROGRAMS, X64  # noqa: E402

PROGRAMS.update(USER_PROGRAMS)
