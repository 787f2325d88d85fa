"""Ahead-of-time compilation: Kiln topologies without a client (jax.experimental.topologies),
programs compiled against a topology's compile-only devices, serialized and loaded into Kiln's
client later, with results against JAX's CPU backend; and `compiled.as_text()` of a Kiln
executable."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax.experimental import topologies
from jax.experimental.serialize_executable import deserialize_and_load, serialize
from jax.sharding import NamedSharding, PartitionSpec as P

from conftest import KILN_PLATFORM, get_cpu_device, get_kiln_device

pytestmark = pytest.mark.requires_kiln


def program(x):
    return jnp.tanh(x @ x.T + 1.0).sum(axis=0)


def test_topology_by_name_describes_kiln_devices():
    topo = topologies.get_topology_desc(platform=KILN_PLATFORM)
    attached = jax.devices(KILN_PLATFORM)
    assert len(topo.devices) == len(attached)
    for d in topo.devices:
        assert d.platform == KILN_PLATFORM
        assert d.device_kind == attached[0].device_kind
        assert d.client.runtime_type == "compile_only_runtime"
    four = topologies.get_topology_desc(platform=KILN_PLATFORM, kiln_device_count=4)
    assert [d.id for d in four.devices] == [0, 1, 2, 3]


def test_unknown_topology_name_and_option_are_errors():
    with pytest.raises(Exception, match="unknown topology name 'v5e:2x2'"):
        topologies.get_topology_desc("v5e:2x2", platform=KILN_PLATFORM)
    with pytest.raises(Exception, match="unknown create option 'chips'"):
        topologies.get_topology_desc(platform=KILN_PLATFORM, chips=2)


def test_compile_against_a_topology_then_load_and_run():
    topo = topologies.get_topology_desc(platform=KILN_PLATFORM)
    mesh = topologies.make_mesh(topo, (len(topo.devices),), ("x",))
    spec = jax.ShapeDtypeStruct((8, 8), jnp.float32, sharding=NamedSharding(mesh, P()))
    compiled = jax.jit(program).lower(spec).compile()
    assert compiled.as_text()  # a compile-only executable still shows its program
    payload, in_tree, out_tree = serialize(compiled)

    x = np.linspace(-1, 1, 64, dtype=np.float32).reshape(8, 8)
    loaded = deserialize_and_load(payload, in_tree, out_tree, backend=KILN_PLATFORM)
    got = np.asarray(loaded(jax.device_put(x, get_kiln_device())))
    want = np.asarray(jax.jit(program)(jax.device_put(x, get_cpu_device())))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_aot_and_attached_compiles_give_the_same_program():
    def text(devices):
        mesh = jax.sharding.Mesh(np.array(devices), ("x",))
        spec = jax.ShapeDtypeStruct((4, 4), jnp.float32, sharding=NamedSharding(mesh, P()))
        payload, in_tree, out_tree = serialize(jax.jit(program).lower(spec).compile())
        return deserialize_and_load(payload, in_tree, out_tree, backend=KILN_PLATFORM).as_text()

    # Both from one call site: the text carries the source locations of the lowering.
    aot, attached = [text(devices) for devices in (
        topologies.get_topology_desc(platform=KILN_PLATFORM).devices, jax.devices(KILN_PLATFORM))]
    assert aot == attached


def test_as_text_shows_the_program():
    x = jax.device_put(np.ones((4, 4), np.float32), get_kiln_device())
    compiled = jax.jit(program).lower(x).compile()
    text = compiled.as_text()
    assert text is not None
    assert "HloModule" in text and "tanh" in text and "dot" in text
    assert compiled.runtime_executable().hlo_modules()[0].name.startswith("jit_program")


# Compiled in a process whose only backend is the CPU (no Kiln client: JAX_PLATFORMS=cpu, the
# topology comes from Kiln's registered plugin), loaded and run in another.
DEVICELESS_COMPILE = textwrap.dedent("""
    import pickle, sys, jax, jax.numpy as jnp
    from jax.experimental import topologies
    from jax.experimental.serialize_executable import serialize
    from jax.sharding import NamedSharding, PartitionSpec as P
    assert [d.platform for d in jax.devices()] == ["cpu"]
    topo = topologies.get_topology_desc(platform="kiln", kiln_device_count=2)
    mesh = topologies.make_mesh(topo, (2,), ("x",))
    spec = jax.ShapeDtypeStruct((8, 4), jnp.float32, sharding=NamedSharding(mesh, P("x")))
    f = jax.jit(lambda x: jnp.tanh(x * 2.0 + 1.0), out_shardings=NamedSharding(mesh, P("x")))
    with open(sys.argv[1], "wb") as out:
        pickle.dump(serialize(f.lower(spec).compile()), out)
""")

DEVICELESS_LOAD = textwrap.dedent("""
    import pickle, sys, jax, jax.numpy as jnp, numpy as np
    from jax.experimental.serialize_executable import deserialize_and_load
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    with open(sys.argv[1], "rb") as f:
        payload, in_tree, out_tree = pickle.load(f)
    loaded = deserialize_and_load(payload, in_tree, out_tree, backend="kiln")
    x = np.linspace(-1, 1, 32, dtype=np.float32).reshape(8, 4)
    mesh = Mesh(np.array(jax.devices("kiln")), ("x",))
    got = loaded(jax.device_put(x, NamedSharding(mesh, P("x"))))
    want = jnp.tanh(jax.device_put(x, jax.devices("cpu")[0]) * 2.0 + 1.0)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-6)
    print("OK", [s.device.id for s in got.addressable_shards])
""")


def test_compile_without_a_kiln_client_then_load_in_another_process(tmp_path):
    blob = str(tmp_path / "executable.pickle")
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", DEVICELESS_COMPILE, blob], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    env = dict(os.environ, JAX_PLATFORMS="kiln,cpu", KILN_DEVICE_COUNT="2")
    out = subprocess.run([sys.executable, "-c", DEVICELESS_LOAD, blob], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "OK [0, 1]" in out.stdout, out.stdout


def test_as_text_of_a_shardy_program_is_its_gspmd_form():
    # Shardy's sdy.sharding_constraint has no HLO form jaxlib makes: Kiln exports it to the
    # @Sharding custom call JAX's GSPMD lowering has (tests/python/test_as_text.py has more).
    k = get_kiln_device()
    f = jax.jit(lambda x: jax.lax.with_sharding_constraint(x * 2, jax.sharding.SingleDeviceSharding(k)))
    compiled = f.lower(jax.device_put(np.ones(4, np.float32), k)).compile()
    assert 'custom_call_target="Sharding"' in compiled.as_text()
    np.testing.assert_array_equal(np.asarray(compiled(jax.device_put(np.ones(4, np.float32), k))),
                                  np.full(4, 2.0, np.float32))
