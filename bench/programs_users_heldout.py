"""Held-out users' programs (issue 35, point 1): twelve programs written the way a JAX user writes
them, in families programs_users.py covers thinly, added after the rest of the bench was tuned so
they measure users' programs rather than ours. Prefixed `u_ho_`.

A flax MLP classifier on MNIST-sized batches with dropout and optax's Adam; a flax 1-D CNN over
audio-like signals (strided and causal convolutions) with its gradient; a 3-D convolution training
step; a flax LSTM (`nn.RNN`) over 64 time steps with its gradient; Gaussian-process regression in
float64 (a 256x256 kernel matrix, `cho_factor` / `cho_solve`, the gradient of the marginal
likelihood); k-means iterations in a `fori_loop` (`argmin` over distances, `segment_sum`); a
particle simulation with pairwise forces by `vmap` of `vmap`; an `einsum` tensor contraction; an
equinox CNN trained with `eqx.filter_jit` / `eqx.filter_value_and_grad`; an int32 histogram with
`jnp.bincount`; a float64 `associative_scan` of a cumulative product; a bf16 matmul followed by a
layer norm.
"""

from __future__ import annotations

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

RNG = np.random.default_rng(6)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def flax_mlp_dropout_adam():
    """One training step of an MNIST-style MLP classifier (784 -> 512 -> 256 -> 10, batch 128)
    with dropout drawn from a `jax.random` key, optax's Adam."""
    import flax.linen as nn
    import optax

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x, train: bool):
            x = nn.relu(nn.Dense(512)(x))
            x = nn.Dropout(0.2, deterministic=not train)(x)
            x = nn.relu(nn.Dense(256)(x))
            x = nn.Dropout(0.2, deterministic=not train)(x)
            return nn.Dense(10)(x)

    model = MLP()
    x = RNG.random((128, 784)).astype(np.float32)
    y = RNG.integers(0, 10, 128).astype(np.int32)
    params = model.init(jax.random.key(0), x, train=False)["params"]
    tx = optax.adam(1e-3)
    opt_state = tx.init(params)

    def train_step(params, opt_state, x, y, key):
        def loss_fn(params):
            logits = model.apply({"params": params}, x, train=True, rngs={"dropout": key})
            return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    host = jax.tree_util.tree_map(np.asarray, (params, opt_state))
    return train_step, (*host, x, y, np.asarray(jax.random.PRNGKey(7)))


def flax_audio_cnn1d_grad():
    """Value and gradient of a 1-D CNN over audio-like signals ([batch, time, channels]): a strided
    convolution, then two causal dilated ones, global average pooling and a linear head."""
    import flax.linen as nn

    class AudioCNN(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.relu(nn.Conv(16, (9,), strides=(4,))(x))
            x = nn.relu(nn.Conv(24, (3,), padding="CAUSAL", kernel_dilation=(2,))(x))
            x = nn.relu(nn.Conv(24, (3,), padding="CAUSAL", kernel_dilation=(4,))(x))
            return nn.Dense(5)(x.mean(axis=1))

    model = AudioCNN()
    t = np.arange(4000, dtype=np.float32) / 8000.0
    freqs = RNG.uniform(100.0, 1000.0, (8, 1)).astype(np.float32)
    x = (np.sin(2 * np.pi * freqs * t)[..., None] + 0.1 * f32(8, 4000, 1)).astype(np.float32)
    y = RNG.integers(0, 5, 8).astype(np.int32)
    params = model.init(jax.random.key(1), x)["params"]

    def loss_fn(params, x, y):
        logits = model.apply({"params": params}, x)
        labels = jax.nn.one_hot(y, 5)
        return -jnp.mean(jnp.sum(labels * jax.nn.log_softmax(logits), axis=-1))

    return jax.value_and_grad(loss_fn), (jax.tree_util.tree_map(np.asarray, params), x, y)


def conv3d_train_step():
    """An SGD step of a two-layer 3-D CNN on small volumes (NDHWC), loss and both kernels."""
    dn = ("NDHWC", "DHWIO", "NDHWC")

    def loss(w1, w2, x, target):
        h = lax.conv_general_dilated(x, w1, (1, 1, 1), "SAME", dimension_numbers=dn)
        h = jax.nn.relu(h)
        h = lax.conv_general_dilated(h, w2, (2, 2, 2), "SAME", dimension_numbers=dn)
        return jnp.mean((h - target) ** 2)

    def step(w1, w2, x, target):
        value, (g1, g2) = jax.value_and_grad(loss, argnums=(0, 1))(w1, w2, x, target)
        return w1 - 0.1 * g1, w2 - 0.1 * g2, value

    return step, (0.2 * f32(3, 3, 3, 2, 6), 0.2 * f32(3, 3, 3, 6, 4), f32(4, 12, 12, 12, 2),
                  f32(4, 6, 6, 6, 4))


def flax_lstm_grad_64():
    """Gradient of a sequence regression loss through a flax LSTM (`nn.RNN` of an
    `nn.LSTMCell`) over 64 time steps, batch 16, 8 features, 32 hidden units."""
    import flax.linen as nn

    class Seq(nn.Module):
        @nn.compact
        def __call__(self, xs):
            h = nn.RNN(nn.LSTMCell(32))(xs)
            return nn.Dense(1)(h)[..., 0]

    model = Seq()
    xs = f32(16, 64, 8)
    ys = np.cumsum(xs[..., 0], axis=1).astype(np.float32) * 0.1
    params = model.init(jax.random.key(2), xs)["params"]

    def loss_fn(params, xs, ys):
        return jnp.mean((model.apply({"params": params}, xs) - ys) ** 2)

    return jax.value_and_grad(loss_fn), (jax.tree_util.tree_map(np.asarray, params), xs, ys)


def gp_marginal_likelihood_grad_f64():
    """Gaussian-process regression in float64: the negative log marginal likelihood of 256 noisy
    1-D observations under an RBF kernel and its gradient in the three log hyperparameters, by
    `cho_factor` / `cho_solve` of the 256x256 kernel matrix."""
    from jax.scipy.linalg import cho_factor, cho_solve

    def nll(log_params, x, y):
        lengthscale, variance, noise = jnp.exp(log_params)
        d2 = (x[:, None] - x[None, :]) ** 2
        k = variance * jnp.exp(-0.5 * d2 / lengthscale**2) + (noise + 1e-6) * jnp.eye(x.shape[0])
        c, lower = cho_factor(k, lower=True)
        alpha = cho_solve((c, lower), y)
        return (0.5 * y @ alpha + jnp.sum(jnp.log(jnp.diag(c)))
                + 0.5 * x.shape[0] * jnp.log(2 * jnp.pi))

    x = np.sort(RNG.uniform(-3.0, 3.0, 256))
    y = np.sin(2 * x) + 0.1 * RNG.standard_normal(256)
    return jax.value_and_grad(nll), (np.log(np.array([0.7, 1.2, 0.05])), x, y)


def kmeans_fori():
    """Ten Lloyd iterations of k-means (4,096 2-D points, 16 centroids) in a `fori_loop`: squared
    distances, `argmin`, `segment_sum` of the assigned points and counts."""
    k = 16

    def kmeans(points, centroids):
        def body(_, c):
            d = jnp.sum((points[:, None, :] - c[None, :, :]) ** 2, axis=-1)
            assign = jnp.argmin(d, axis=1)
            sums = jax.ops.segment_sum(points, assign, num_segments=k)
            counts = jax.ops.segment_sum(jnp.ones_like(assign, jnp.float32), assign,
                                         num_segments=k)
            return jnp.where(counts[:, None] > 0, sums / jnp.maximum(counts, 1.0)[:, None], c)
        return lax.fori_loop(0, 10, body, centroids)

    centers = 4.0 * f32(k, 2)
    points = (centers[RNG.integers(0, k, 4096)] + 0.5 * f32(4096, 2)).astype(np.float32)
    return kmeans, (points, points[:k].copy())


def particles_pairwise_vmap():
    """Ten velocity-Verlet steps of 256 particles in 3-D under a softened Lennard-Jones-style
    pair force, the pairwise interaction written as `vmap` of `vmap` of a two-particle function."""
    def pair_force(xi, xj):
        r = xi - xj
        r2 = jnp.sum(r * r) + 0.05
        inv6 = 1.0 / r2**3
        return 24.0 * inv6 * (2.0 * inv6 - 1.0) / r2 * r * 1e-3

    def forces(x):
        return jnp.sum(jax.vmap(jax.vmap(pair_force, (None, 0)), (0, None))(x, x), axis=1)

    def simulate(x, v):
        def step(_, s):
            x, v, f = s
            dt = 1e-3
            v_half = v + 0.5 * dt * f
            x = x + dt * v_half
            f = forces(x)
            return x, v_half + 0.5 * dt * f, f
        x, v, _ = lax.fori_loop(0, 10, step, (x, v, forces(x)))
        return x, v

    grid = np.stack(np.meshgrid(*[np.arange(8)] * 3, indexing="ij"), -1).reshape(-1, 3)[:256]
    x = (1.2 * grid + 0.05 * f32(256, 3)).astype(np.float32)
    return simulate, (x, 0.1 * f32(256, 3))


def einsum_contraction():
    """A tensor-network-style contraction of three tensors with `jnp.einsum` (the path chosen by
    opt_einsum), batch of 8: 'bijk,bkl,bjlm->bim'."""
    def contract(a, b, c):
        return jnp.einsum("bijk,bkl,bjlm->bim", a, b, c)
    return contract, (f32(8, 32, 24, 40), f32(8, 40, 48), f32(8, 24, 48, 36))


def equinox_cnn_filter_grad():
    """One SGD step of a small equinox CNN classifier (two `eqx.nn.Conv2d`, max pooling, a linear
    head) on 28x28 single-channel images, batch 32, with `eqx.filter_jit` and
    `eqx.filter_value_and_grad` as equinox's documentation writes it."""
    import equinox as eqx

    class CNN(eqx.Module):
        layers: list

        def __init__(self, key):
            k1, k2, k3 = jax.random.split(key, 3)
            self.layers = [
                eqx.nn.Conv2d(1, 8, kernel_size=3, key=k1), jax.nn.relu,
                eqx.nn.MaxPool2d(kernel_size=2, stride=2),
                eqx.nn.Conv2d(8, 12, kernel_size=3, key=k2), jax.nn.relu,
                jnp.ravel, eqx.nn.Linear(12 * 11 * 11, 10, key=k3)]

        def __call__(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

    model = CNN(jax.random.key(3))
    params, static = eqx.partition(model, eqx.is_array)

    @eqx.filter_value_and_grad
    def loss(model, x, y):
        logits = jax.vmap(model)(x)
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))

    @eqx.filter_jit
    def step(model, x, y):
        value, grads = loss(model, x, y)
        updates = jax.tree_util.tree_map(lambda g: -0.05 * g, grads)
        return eqx.apply_updates(model, updates), value

    def run(params, x, y):
        model, value = step(eqx.combine(params, static), x, y)
        return eqx.filter(model, eqx.is_array), value

    x = RNG.random((32, 1, 28, 28)).astype(np.float32)
    y = RNG.integers(0, 10, 32).astype(np.int32)
    return run, (jax.tree_util.tree_map(np.asarray, params), x, y)


def bincount_i32():
    """Histogram of 1M int32 pixel values into 256 bins with `jnp.bincount`, and of 64k
    class labels weighted by per-example losses."""
    def hist(pixels, labels, weights):
        return (jnp.bincount(pixels, length=256),
                jnp.bincount(labels, weights=weights, length=100))
    return hist, (RNG.integers(0, 256, 1 << 20).astype(np.int32),
                  RNG.integers(0, 100, 1 << 16).astype(np.int32),
                  np.abs(f32(1 << 16)))


def cumprod_associative_scan_f64():
    """Discount factors of 64 float64 series of 2,048 steps: a cumulative product by
    `lax.associative_scan` along time, then a discounted cumulative sum."""
    def discounted(gammas, rewards):
        factors = lax.associative_scan(jnp.multiply, gammas, axis=1)
        return factors, jnp.cumsum(factors * rewards, axis=1)
    return discounted, (RNG.uniform(0.99, 1.0, (64, 2048)), RNG.standard_normal((64, 2048)))


def bf16_matmul_layernorm():
    """A bf16 projection followed by a layer norm (statistics in f32, as flax's `nn.LayerNorm`
    with dtype bf16 computes them): [1024, 512] @ [512, 768]."""
    import flax.linen as nn
    import ml_dtypes

    ln = nn.LayerNorm(dtype=jnp.bfloat16, param_dtype=jnp.float32)
    params = ln.init(jax.random.key(4), jnp.zeros((1, 768), jnp.bfloat16))["params"]

    def project(x, w, params):
        h = jnp.dot(x, w, preferred_element_type=jnp.float32).astype(jnp.bfloat16)
        return ln.apply({"params": params}, h)

    bf = ml_dtypes.bfloat16
    return project, (f32(1024, 512).astype(bf), (0.05 * f32(512, 768)).astype(bf),
                     jax.tree_util.tree_map(np.asarray, params))


HELDOUT_PROGRAMS = {
    "u_ho_flax_mlp_dropout_adam": (flax_mlp_dropout_adam, False),
    "u_ho_flax_audio_cnn1d_grad": (flax_audio_cnn1d_grad, False),
    "u_ho_conv3d_train_step": (conv3d_train_step, False),
    "u_ho_flax_lstm_grad_64": (flax_lstm_grad_64, False),
    "u_ho_gp_mll_grad_f64": (gp_marginal_likelihood_grad_f64, False),
    "u_ho_kmeans_fori": (kmeans_fori, False),
    "u_ho_particles_vmap_pairwise": (particles_pairwise_vmap, False),
    "u_ho_einsum_contraction": (einsum_contraction, False),
    "u_ho_equinox_cnn_filter_grad": (equinox_cnn_filter_grad, False),
    "u_ho_bincount_i32": (bincount_i32, False),
    "u_ho_cumprod_assoc_scan_f64": (cumprod_associative_scan_f64, False),
    "u_ho_bf16_matmul_layernorm": (bf16_matmul_layernorm, 3e-2),
}

HELDOUT_X64 = {"u_ho_gp_mll_grad_f64", "u_ho_cumprod_assoc_scan_f64"}
