"""MLIR text programs (PJRT_Program format "mlir" holding text instead of bytecode).

Kiln reads both encodings into one IR, so one program must give the same bits either way:
  * every fixture in tests/fixtures, deserialized from its portable artifact by jaxlib and printed
    as text in the pretty and the generic form, with and without locations, is compiled and run
    through pypjrt on Kiln next to the artifact itself; outputs are compared bit for bit;
  * a handful of JAX programs, lowered and printed with `Lowered.as_text()`, against JAX's own run
    on Kiln (program_formats.check_formats; the whole suite does this with
    KILN_PROGRAM_FORMAT=text);
  * malformed text is an INVALID_ARGUMENT error naming the line and column.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax import lax
from jax._src.interpreters import mlir as jax_mlir
from jaxlib.mlir.dialects import stablehlo

import pjrt_client
import program_formats
from conftest import REPO_ROOT, get_kiln_device, run_on

pytestmark = pytest.mark.requires_kiln

FIXTURES = Path(REPO_ROOT) / "tests" / "fixtures"
STEMS = [p.stem for p in sorted(FIXTURES.glob("*.json"))
         if not json.loads(p.read_text())["expect_compile_error"]]


def _inputs(stem: str) -> list[np.ndarray]:
    m = json.loads((FIXTURES / f"{stem}.json").read_text())
    blob = (FIXTURES / m["files"]["inputs"]).read_bytes()
    out = []
    for e in m["inputs"]:
        dt = jax.numpy.dtype(e["dtype"]).newbyteorder("<")
        a = np.frombuffer(blob, dt, count=int(np.prod(e["shape"], dtype=np.int64)),
                          offset=e["offset"])
        out.append(a.reshape(e["shape"]).astype(dt.newbyteorder("=")))
    return out


def _texts(artifact: bytes) -> dict[str, str]:
    with jax_mlir.make_ir_context() as ctx:
        module = stablehlo.deserialize_portable_artifact(ctx, artifact)
        op = module.operation
        return {
            "pretty": op.get_asm(enable_debug_info=False),
            "pretty+loc": op.get_asm(enable_debug_info=True),
            "generic": op.get_asm(print_generic_op_form=True, enable_debug_info=False),
            "generic+loc": op.get_asm(print_generic_op_form=True, enable_debug_info=True),
        }


def _run(code: bytes, inputs: list[np.ndarray]) -> list[bytes]:
    return [bytes(b.to_host()) for b in pjrt_client.run_program(code, b"mlir", inputs)]


@pytest.mark.parametrize("stem", STEMS)
def test_fixture_text_runs_like_its_artifact(stem):
    artifact = (FIXTURES / f"{stem}.mlir.bc").read_bytes()
    inputs = _inputs(stem)
    want = _run(artifact, inputs)
    for form, text in _texts(artifact).items():
        got = _run(text.encode(), inputs)
        assert len(got) == len(want), form
        for i, (g, w) in enumerate(zip(got, want)):
            assert g == w, f"{stem} ({form}): output {i} differs from the artifact's"


def _many_ops(x, y):
    a = jnp.dot(x, y) + 1.0
    b = jnp.sum(a, axis=0)
    c = jnp.where(b > 0, b, -b)
    d = lax.fori_loop(0, 3, lambda i, v: v * 2, c)
    e = jnp.concatenate([d, d])[1:3]
    g = jnp.sort(e)
    h = lax.cond(g[0] > 0, lambda: g + 1, lambda: g - 1)
    return h, jnp.cumsum(x, axis=1).astype(jnp.int32), jnp.argmax(x), jnp.max(x, axis=1)


def _conv(x, k):
    return lax.conv_general_dilated(x, k, (1, 1), "SAME", rhs_dilation=(1, 2),
                                    dimension_numbers=("NHWC", "HWIO", "NHWC"))


def _gather_scatter(x, idx):
    g = x[idx]
    return g, x.at[idx].add(1.0), jnp.take_along_axis(x[:4], idx[:, None] % 3, axis=1)


def _misc(x):
    y = jnp.transpose(x.reshape(2, 3, 4), (2, 0, 1))
    z = jnp.pad(y, ((1, 0), (0, 2), (1, 1)))
    w = lax.dynamic_slice(z, (1, 0, 2), (2, 2, 2))
    u = jnp.flip(x, 0).astype(jnp.bfloat16)
    v = jnp.exp(x) - jnp.tanh(x) + jnp.sqrt(jnp.abs(x)) * jnp.sin(x)
    bits = lax.bitcast_convert_type(x, jnp.int32) >> 3
    return w, u, v, bits, lax.iota(jnp.int32, 5), jnp.clip(x, -0.5, 0.5), jnp.complex64(x) * 2j


CASES = {
    "many_ops": (_many_ops, (np.linspace(-1, 1, 16, dtype=np.float32).reshape(4, 4),
                             np.linspace(2, -1, 16, dtype=np.float32).reshape(4, 4))),
    "conv": (_conv, (np.linspace(-1, 1, 2 * 5 * 5 * 3, dtype=np.float32).reshape(2, 5, 5, 3),
                     np.linspace(1, -1, 3 * 3 * 3 * 4, dtype=np.float32).reshape(3, 3, 3, 4))),
    "gather_scatter": (_gather_scatter, (np.arange(15, dtype=np.float32).reshape(5, 3),
                                         np.array([4, 0, 2, 2], np.int32))),
    "misc": (_misc, (np.linspace(-2, 2, 24, dtype=np.float32),)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_jax_as_text_runs_like_jax(name):
    f, args = CASES[name]
    out = run_on(f, args, get_kiln_device())
    program_formats.check_formats(f, args, None, out, names=["text"])


def test_malformed_text_names_line_and_column():
    from pypjrt import errors

    with pytest.raises(errors.PjrtError) as info:
        pjrt_client.kiln_client().compile(
            "func.func @main(%a: tensor<f32>) -> tensor<f32> {\n"
            "  %0 = stablehlo.add %a, %b : tensor<f32>\n"
            "  return %0 : tensor<f32>\n}\n")
    assert "<text>:2:26: use of undefined value %b" in str(info.value), str(info.value)
