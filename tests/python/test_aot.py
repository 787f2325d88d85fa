"""Ahead-of-time compilation: Kiln topologies without a client (jax.experimental.topologies),
programs compiled against a topology's compile-only devices, serialized and loaded into Kiln's
client later, with results against JAX's CPU backend; and `compiled.as_text()` of a Kiln
executable."""

from __future__ import annotations

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
