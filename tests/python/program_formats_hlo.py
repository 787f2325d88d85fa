"""PJRT program format "hlo": a JAX program as a serialized xla.HloModuleProto.

`hlo_program(lowered)` gives what TensorFlow and PyTorch/XLA send through
`PjRtCApiClient::Compile(XlaComputation)`: the `(code, format)` pair of a `PJRT_Program`.
`run_hlo(lowered, args)` runs a lowered JAX program on Kiln through this path (pypjrt,
tests/python/pjrt_client.py) and returns numpy arrays.
"""

from __future__ import annotations

import os

import numpy as np

import jax

from pjrt_client import run_to_numpy


def hlo_program(lowered) -> tuple[bytes, bytes]:
    """The `PJRT_Program` (code, format) of a `jax.jit(f).lower(...)` result, as HLO."""
    return lowered.compiler_ir("hlo").as_serialized_hlo_module_proto(), b"hlo"


def run_hlo(lowered, args) -> list[np.ndarray]:
    """Runs a lowered JAX program on Kiln from its HLO; the results, flattened."""
    code, fmt = hlo_program(lowered)
    return run_to_numpy(code, fmt, args, jax.tree.leaves(lowered.out_info))


def _seed_programs():
    import jax.numpy as jnp  # noqa: PLC0415
    from jax import lax  # noqa: PLC0415

    x = np.ones((3, 4), np.float32)
    return {
        "elementwise": (lambda a: jnp.tanh(a) * 2 + a, (x,)),
        "reduce_dot": (lambda a: a.sum(0) @ a.T.sum(1, keepdims=True).T.T[:4], (x,)),
        "control_flow": (lambda a: lax.fori_loop(0, 3, lambda i, c: lax.cond(
            i > 1, lambda v: v * 2, lambda v: v + 1, c), a), (x,)),
        "sort_gather_scatter": (lambda a: (jnp.sort(a, 1), a[jnp.array([2, 0])],
                                           a.at[1].add(1.0)), (x,)),
        "conv_window": (lambda a: (lax.conv(a[None, None], jnp.ones((2, 1, 2, 2)), (1, 1), "SAME"),
                                   lax.reduce_window(a, 0.0, lax.add, (2, 2), (1, 1), "VALID")),
                        (x,)),
    }


def write_seeds(directory: str) -> None:
    """Writes the hlo_reader fuzzer's seed corpus (tools/make_fuzz_corpus.py keeps it)."""
    os.makedirs(directory, exist_ok=True)
    for name, (f, args) in _seed_programs().items():
        code, _ = hlo_program(jax.jit(f).lower(*args))
        with open(os.path.join(directory, name), "wb") as out:
            out.write(code)


if __name__ == "__main__":
    import sys  # noqa: PLC0415

    if sys.argv[1:] != ["--write-seeds"]:
        raise SystemExit("usage: program_formats_hlo.py --write-seeds")
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    write_seeds(os.path.join(root, "tests", "fuzz", "corpus", "hlo_reader"))
