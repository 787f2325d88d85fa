"""`compiled.as_text()` of Shardy programs (shard_map, sharding constraints, sharded arguments and
results) on 1 and 4 Kiln devices.

jaxlib converts no Shardy op but sdy.mesh to HLO, so Kiln's PJRT_Executable_OptimizedProgram
exports such programs to the GSPMD form JAX lowered them to before Shardy (ir/shardy_export.h) and
prints them as MLIR text (ir/mlir_text.h). The tests check, differentially against JAX's own GSPMD
lowering of the same program (`jax_use_shardy_partitioner` off), that as_text() is an HLO module
with the same Sharding / SPMDFullToShardShape / SPMDShardToFullShape custom calls and the same
sharding strings; that the program still runs like the CPU backend; and that the MLIR text Kiln
returns parses and verifies in jaxlib's MLIR parser. The text is the program Kiln runs: a sharded
jit that the SPMD partitioner rewrites (compiler/spmd_partitioner.h; here `constrained` and
`permuted`) is its per-device program, one manual computation over all mesh axes with the
collectives it needs, so its text is compared with that instead of JAX's global-view lowering.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import jax

from conftest import get_kiln_device

pytestmark = pytest.mark.requires_kiln

# Runs in a fresh process with 4 Kiln and 4 CPU devices; prints one JSON object.
FOUR_DEVICES = textwrap.dedent("""
    import ctypes, json, re, sys
    import numpy as np
    import jax, jax.numpy as jnp
    from jax import shard_map
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    sys.path.insert(0, sys.argv[1])

    def mesh_of(platform, order=(0, 1, 2, 3)):
        devices = jax.devices(platform)
        return Mesh(np.array([devices[i] for i in order]).reshape(2, 2), ("x", "y"))

    def psum_map(mesh):
        return jax.jit(shard_map(lambda b: jax.lax.psum(b * 2, "x"), mesh=mesh,
                                 in_specs=P("x", "y"), out_specs=P(None, "y")))

    def constrained(mesh):
        def f(a):
            a = jax.lax.with_sharding_constraint(a, NamedSharding(mesh, P("y", "x")))
            return jnp.sin(a) + 1
        return jax.jit(f, in_shardings=NamedSharding(mesh, P("x")),
                       out_shardings=NamedSharding(mesh, P(None, ("x", "y"))))

    def nested(mesh):
        inner = shard_map(lambda b: b * jax.lax.axis_index("y").astype(b.dtype), mesh=mesh,
                          in_specs=P(None, "y"), out_specs=P(None, "y"))
        def f(a):
            a = jax.lax.with_sharding_constraint(a, NamedSharding(mesh, P("x", None)))
            return inner(a) @ a.T
        return jax.jit(f)

    x = np.arange(32, dtype=np.float32).reshape(4, 8) / 7
    out = {}
    cases = [("psum_map", psum_map, (0, 1, 2, 3)), ("constrained", constrained, (0, 1, 2, 3)),
             ("nested", nested, (0, 1, 2, 3)),
             # A mesh whose devices are not in id order: explicit device lists in the shardings.
             ("permuted", constrained, (3, 1, 0, 2)), ("permuted_map", psum_map, (2, 3, 0, 1))]
    for name, make, order in cases:
        kiln_mesh, cpu_mesh = mesh_of("kiln", order), mesh_of("cpu", order)
        lowered = make(kiln_mesh).lower(x)
        compiled = lowered.compile()
        got = np.asarray(make(kiln_mesh)(x))
        want = np.asarray(make(cpu_mesh)(x))
        jax.config.update("jax_use_shardy_partitioner", False)
        gspmd = make(cpu_mesh).lower(x).as_text()
        jax.config.update("jax_use_shardy_partitioner", True)
        # The MLIR text Kiln returns, through a second client (pypjrt) on the same plugin.
        from pypjrt import CompileOptions
        from pjrt_client import compile_program, kiln_client
        client = kiln_client()
        plugin = client._plugin
        exe = compile_program(client, lowered.as_text().encode(), b"mlir",
                              CompileOptions(num_partitions=4, use_spmd_partitioning=True,
                                             use_shardy_partitioner=True))
        program = plugin.args("PJRT_Program")
        args = plugin.args("PJRT_Executable_OptimizedProgram_Args", executable=exe._executable(),
                           program=ctypes.addressof(program))
        plugin.call("PJRT_Executable_OptimizedProgram", args)
        buf = ctypes.create_string_buffer(program.code_size)
        program.code = ctypes.cast(buf, ctypes.c_void_p)
        plugin.call("PJRT_Executable_OptimizedProgram", args)
        out[name] = dict(as_text=compiled.as_text(), gspmd=gspmd,
                         mlir=buf.raw[:program.code_size].decode(),
                         max_diff=float(np.max(np.abs(got - want))))
    print(json.dumps(out))
""")


@pytest.fixture(scope="module")
def four_devices():
    env = dict(os.environ, KILN_DEVICE_COUNT="4", JAX_PLATFORMS="kiln,cpu",
               XLA_FLAGS=(os.environ.get("XLA_FLAGS", "")
                          + " --xla_force_host_platform_device_count=4").strip())
    here = os.path.dirname(os.path.abspath(__file__))
    out = subprocess.run([sys.executable, "-c", FOUR_DEVICES, here], env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _hlo_shardings(text):
    """`custom_call_target` and sharding of each Sharding/SPMD custom call, in order."""
    import re  # noqa: PLC0415

    return re.findall(r'custom_call_target="(\w+)", sharding=(\{[^}]*\})', text)


def _mlir_shardings(text):
    """The same from a pretty-printed MLIR text (JAX's GSPMD lowering)."""
    import re  # noqa: PLC0415

    return re.findall(r'custom_call @(\w+)\([^)]*\) \{backend_config = "", mhlo.sharding = "(\{[^"]*\})"',
                      text)


def _parses_in_jaxlib(text):
    from jax._src.interpreters import mlir  # noqa: PLC0415
    from jax._src.lib.mlir import ir  # noqa: PLC0415

    with mlir.make_ir_context():
        module = ir.Module.parse(text)
        assert module.operation.verify()


@pytest.mark.parametrize("name", ["psum_map", "nested", "permuted_map"])
def test_as_text_has_the_gspmd_lowerings_custom_calls_and_shardings(four_devices, name):
    case = four_devices[name]
    text = case["as_text"]
    assert text and text.startswith("HloModule"), text
    want = _mlir_shardings(case["gspmd"])
    assert want, case["gspmd"]
    assert _hlo_shardings(text) == want, (text, case["gspmd"])


@pytest.mark.parametrize("name", ["constrained", "permuted"])
def test_as_text_of_a_partitioned_jit_is_its_per_device_program(four_devices, name):
    # The argument split along x, the constraint moves the split to (y, x): each device gathers
    # its x group's rows, then slices its own block at its partition's offset.
    text = four_devices[name]["as_text"]
    assert text and text.startswith("HloModule"), text
    assert "SPMDFullToShardShape" in text and "SPMDShardToFullShape" in text, text
    assert "shmap_body" in text and "all-gather(" in text and "partition-id()" in text, text
    assert "dynamic-slice(" in text, text


def test_as_text_of_shard_map_calls_its_body(four_devices):
    text = four_devices["psum_map"]["as_text"]
    assert "SPMDFullToShardShape" in text and "SPMDShardToFullShape" in text
    assert "call(" in text and "shmap_body" in text
    assert "all-reduce(" in text and "replica_groups={{0,2},{1,3}}" in text
    assert "num_partitions=4" in text


def test_parameter_and_result_shardings(four_devices):
    text = four_devices["constrained"]["as_text"]
    assert "parameter(0), sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}" in text
    assert "sharding={devices=[1,4]<=[4]}" in text


@pytest.mark.parametrize("name", ["psum_map", "constrained", "nested", "permuted", "permuted_map"])
def test_programs_still_run_like_the_cpu_backend(four_devices, name):
    assert four_devices[name]["max_diff"] <= 1e-5


@pytest.mark.parametrize("name", ["psum_map", "constrained", "nested", "permuted", "permuted_map"])
def test_the_mlir_text_parses_in_jaxlib(four_devices, name):
    text = four_devices[name]["mlir"]
    assert "sdy." not in text
    _parses_in_jaxlib(text)


def test_single_device_sharding_constraint():
    k = get_kiln_device()
    f = jax.jit(lambda x: jax.lax.with_sharding_constraint(x * 2,
                                                           jax.sharding.SingleDeviceSharding(k)))
    compiled = f.lower(jax.device_put(np.ones(4, np.float32), k)).compile()
    text = compiled.as_text()
    assert 'custom_call_target="Sharding", sharding={replicated}' in text, text
    np.testing.assert_array_equal(np.asarray(compiled(jax.device_put(np.ones(4, np.float32), k))),
                                  np.full(4, 2.0, np.float32))
