"""Trains a small MLP with JAX twice, on JAX's built-in CPU backend and on Kiln, and compares them.

The model is a two-layer perceptron (784 -> 128 relu -> 10) with softmax cross-entropy, trained
by plain SGD on fixed-seed synthetic data (batch 64). The training step is ordinary JAX code: it
runs on whichever device its inputs are committed to, so the same jitted function is compiled once
per backend. The script prints the per-step losses of both runs, their largest differences, and the
compile time and steady-state step time on each backend, and exits non-zero if Kiln's losses
differ from CPU's by more than rtol 1e-5.

Usage:  .venv/bin/python examples/train_mlp.py [--steps 20] [--target kiln] [--reference cpu]
(`./demo.sh` builds and installs Kiln, then runs this.)
"""

from __future__ import annotations

import argparse
import os
import sys
import time

# Both backends must be initialised: keep CPU and Kiln (JAX discovers Kiln through the kiln
# package's `jax_plugins` entry point). An explicit JAX_PLATFORMS from the caller is respected.
os.environ.setdefault("JAX_PLATFORMS", "cpu,kiln")

import numpy as np  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

BATCH, D_IN, D_HIDDEN, D_OUT = 64, 784, 128, 10
LR = 0.1
LOSS_RTOL = 1e-5                     # acceptance criterion for the per-step loss
PARAM_RTOL, PARAM_ATOL = 1e-4, 1e-5  # final parameters (errors compound a little per step)


def make_data(seed: int = 0):
    """Fixed-seed parameters and a batch of synthetic 'images' with random labels."""
    rng = np.random.default_rng(seed)
    params = {
        "w1": (rng.standard_normal((D_IN, D_HIDDEN)) / np.sqrt(D_IN)).astype(np.float32),
        "b1": (0.1 * rng.standard_normal(D_HIDDEN)).astype(np.float32),
        "w2": (rng.standard_normal((D_HIDDEN, D_OUT)) / np.sqrt(D_HIDDEN)).astype(np.float32),
        "b2": (0.1 * rng.standard_normal(D_OUT)).astype(np.float32),
    }
    x = rng.random((BATCH, D_IN), dtype=np.float32)
    y = rng.integers(0, D_OUT, size=BATCH).astype(np.int32)
    return params, x, y


def forward(params, x):
    h = jax.nn.relu(x @ params["w1"] + params["b1"])
    return h @ params["w2"] + params["b2"]


def loss_fn(params, x, y):
    logp = jax.nn.log_softmax(forward(params, x))
    return -jnp.mean(jnp.sum(jax.nn.one_hot(y, D_OUT, dtype=logp.dtype) * logp, axis=1))


def sgd_step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return jax.tree_util.tree_map(lambda p, g: p - LR * g, params, grads), loss


def get_device(spec: str):
    """'kiln' -> first Kiln device; 'cpu:1' -> CPU device 1."""
    platform, _, index = spec.partition(":")
    try:
        return jax.devices(platform)[int(index or 0)]
    except Exception as e:  # noqa: BLE001 - any failure here means the backend is unusable
        sys.exit(f"error: cannot use a '{spec}' device: {type(e).__name__}: {e}\n"
                 f"  (JAX_PLATFORMS={os.environ.get('JAX_PLATFORMS')!r}; is Kiln installed? "
                 f"`import kiln; kiln.library_path()` should name libkiln_pjrt.so)")


def train(device, steps: int):
    """Runs `steps` SGD steps on `device`; returns losses, final params and timings."""
    params, x, y = jax.device_put(make_data(), device)  # committed: the step runs on `device`
    t0 = time.perf_counter()
    compiled = jax.jit(sgd_step).lower(params, x, y).compile()  # lowering + backend compile
    compile_s = time.perf_counter() - t0

    losses, step_s = [], []
    for _ in range(steps):
        t0 = time.perf_counter()
        params, loss = compiled(params, x, y)
        losses.append(float(loss))  # waits for the step to finish
        step_s.append(time.perf_counter() - t0)
    for leaf in jax.tree_util.tree_leaves(params):
        assert leaf.devices() == {device}, f"result on {leaf.devices()}, expected {device}"
    steady = step_s[1:] if len(step_s) > 1 else step_s  # the first execution warms caches
    return {
        "losses": np.array(losses, np.float64),
        "params": jax.device_get(params),
        "compile_s": compile_s,
        "step_s": float(np.median(steady)),
        "first_step_s": step_s[0],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--reference", default="cpu", help="platform[:index] of the reference (default: cpu)")
    ap.add_argument("--target", default="kiln", help="platform[:index] under test (default: kiln)")
    args = ap.parse_args()

    ref_dev, tgt_dev = get_device(args.reference), get_device(args.target)
    if ref_dev == tgt_dev:
        sys.exit(f"error: reference and target are the same device ({ref_dev})")
    print(f"JAX {jax.__version__}; reference {ref_dev.platform}:{ref_dev.id} ({ref_dev.device_kind}),"
          f" target {tgt_dev.platform}:{tgt_dev.id} ({tgt_dev.device_kind})")
    print(f"MLP {D_IN}->{D_HIDDEN}->{D_OUT}, batch {BATCH}, {args.steps} SGD steps, lr {LR}\n")

    ref = train(ref_dev, args.steps)
    tgt = train(tgt_dev, args.steps)
    R, T = args.reference, args.target

    abs_d = np.abs(tgt["losses"] - ref["losses"])
    rel_d = abs_d / np.maximum(np.abs(ref["losses"]), np.finfo(np.float64).tiny)
    print(f"{'step':>4}  {R + ' loss':>14}  {T + ' loss':>14}  {'abs diff':>10}  {'rel diff':>10}")
    for i in range(args.steps):
        print(f"{i:>4}  {ref['losses'][i]:>14.8f}  {tgt['losses'][i]:>14.8f}"
              f"  {abs_d[i]:>10.3e}  {rel_d[i]:>10.3e}")

    p_abs, p_rel, p_bad = 0.0, 0.0, []
    for name in sorted(ref["params"]):
        a = np.asarray(tgt["params"][name], np.float64)
        b = np.asarray(ref["params"][name], np.float64)
        d = np.abs(a - b)
        p_abs = max(p_abs, float(d.max()))
        p_rel = max(p_rel, float((d / np.maximum(np.abs(b), 1e-30)).max()))
        if not np.all(d <= PARAM_ATOL + PARAM_RTOL * np.abs(b)):
            p_bad.append(name)

    print(f"\nloss:   max abs diff {abs_d.max():.3e}, max rel diff {rel_d.max():.3e}"
          f" (limit rtol {LOSS_RTOL:g})")
    print(f"params: max abs diff {p_abs:.3e}, max rel diff {p_rel:.3e}"
          f" (limit rtol {PARAM_RTOL:g} + atol {PARAM_ATOL:g})")
    print(f"\n{'backend':<8}  {'compile':>10}  {'1st step':>10}  {'step (median)':>14}")
    for name, r in ((R, ref), (T, tgt)):
        print(f"{name:<8}  {r['compile_s'] * 1e3:>8.1f}ms  {r['first_step_s'] * 1e3:>8.2f}ms"
              f"  {r['step_s'] * 1e3:>12.3f}ms")

    if ref["losses"][-1] >= ref["losses"][0]:
        print(f"\nFAIL: the loss does not decrease on {R}; the demo itself is broken.")
        return 1
    problems = []
    if not np.all(abs_d <= LOSS_RTOL * np.abs(ref["losses"])):
        worst = int(np.argmax(rel_d))
        problems.append(f"loss differs beyond rtol {LOSS_RTOL:g} (worst: step {worst}, "
                        f"{T} {tgt['losses'][worst]!r} vs {R} {ref['losses'][worst]!r})")
    if p_bad:
        problems.append(f"final parameters {', '.join(p_bad)} differ beyond "
                        f"rtol {PARAM_RTOL:g} + atol {PARAM_ATOL:g}")
    if problems:
        print(f"\nFAIL: {T} does not match {R}:\n  " + "\n  ".join(problems))
        return 1
    print(f"\nOK: {T} matches {R} within rtol {LOSS_RTOL:g} on every step.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
