"""More users' programs of the neural-network and linear-algebra families (issue 35), beside
programs_users.py's: a flax CNN with GroupNorm and optax's SGD with momentum (other geometry than
the BatchNorm CNN: 5x5 then strided 3x3, odd channel counts), an attention block with a key padding
mask in f32, and batched small linear algebra (f32 8x8 `solve`, f64 6x6 Cholesky solve with
`jax.scipy.linalg.cho_factor` / `cho_solve`). Written as the libraries' documentation writes them.
"""

from __future__ import annotations

import numpy as np

import jax
import jax.numpy as jnp

RNG = np.random.default_rng(35)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def flax_cnn_groupnorm_sgd():
    import flax.linen as nn
    import optax

    class CNN(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.Conv(15, (5, 5))(x)
            x = nn.GroupNorm(num_groups=5)(x)
            x = nn.gelu(x)
            x = nn.Conv(9, (3, 3), strides=(2, 2))(x)
            x = nn.GroupNorm(num_groups=3)(x)
            x = nn.gelu(x)
            x = x.reshape((x.shape[0], -1))
            return nn.Dense(7)(x)

    model = CNN()
    x = f32(12, 18, 18, 5)
    y = RNG.integers(0, 7, 12).astype(np.int32)
    params = model.init(jax.random.key(2), x)["params"]
    tx = optax.sgd(1e-2, momentum=0.9)
    opt_state = tx.init(params)

    def train_step(params, opt_state, x, y):
        def loss_fn(params):
            logits = model.apply({"params": params}, x)
            return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    host = jax.tree_util.tree_map(np.asarray, (params, opt_state))
    return train_step, (*host, x, y)


def padding_mask_attention_f32():
    def attend(q, k, v, lengths):
        # q, k, v: [batch, seq, heads, dim]; keys at or past each sequence's length are padding.
        valid = jnp.arange(k.shape[1])[None, :] < lengths[:, None]  # [batch, kv]
        mask = valid[:, None, None, :]  # [batch, heads, q, kv]
        return jax.nn.dot_product_attention(q, k, v, mask=mask)
    b, s, h, d = 6, 96, 4, 24
    lengths = RNG.integers(s // 3, s + 1, b).astype(np.int32)
    return attend, (f32(b, s, h, d), f32(b, s, h, d), f32(b, s, h, d), lengths)


def batched_solve_8x8_f32():
    a = f32(512, 8, 8) + 4 * np.eye(8, dtype=np.float32)
    return jnp.linalg.solve, (a, f32(512, 8, 2))


def batched_cho_solve_f64():
    from jax.scipy.linalg import cho_factor, cho_solve
    g = RNG.standard_normal((384, 6, 6))

    def solve(a, b):
        return cho_solve(cho_factor(a, lower=True), b)
    return solve, (g @ g.transpose(0, 2, 1) + 6 * np.eye(6), RNG.standard_normal((384, 6)))


NN_PROGRAMS = {
    "u_flax_cnn_groupnorm_sgd": (flax_cnn_groupnorm_sgd, False),
    "u_padding_mask_attention_f32": (padding_mask_attention_f32, False),
    "u_batched_solve_8x8_f32": (batched_solve_8x8_f32, False),
    "u_batched_cho_solve_f64": (batched_cho_solve_f64, False),
}

NN_X64 = {"u_batched_cho_solve_f64"}
