"""`jax.export` across CPU backends (python/kiln/_export.py): an artifact exported for "cpu" (alone
or among other platforms) runs on Kiln, and one exported on Kiln runs on JAX's CPU backend, also in
a process without Kiln. Each result is compared with the same function jitted on the CPU backend
(rtol 1e-6: the same program on either backend; LAPACK-based steps at rtol 1e-5)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax import export, lax
from jax._src import core, effects
from jax._src.interpreters import mlir

from conftest import get_cpu_device, get_kiln_device

pytestmark = pytest.mark.requires_kiln

RTOL = 1e-5


def _f(x):
    return jnp.sin(x) * 2.0 + jnp.linalg.inv(x) @ x.T


def _input(n=3):
    return (np.eye(n, dtype=np.float32) * 2.0
            + np.arange(n * n, dtype=np.float32).reshape(n, n) / 10.0)


def _on_cpu(f, *args):
    return np.asarray(jax.jit(f)(*[jax.device_put(a, get_cpu_device()) for a in args]))


def _call_on(exp, device, *args):
    out = jax.jit(exp.call)(*[jax.device_put(a, device) for a in args])
    assert {d.platform for d in jax.tree_util.tree_leaves(out)[0].devices()} == {device.platform}
    return out


def _round_trip(exp):
    return export.deserialize(exp.serialize())


def _export_on_cpu(f, *args, **kwargs):
    with jax.default_device(get_cpu_device()):
        return _round_trip(export.export(jax.jit(f), **kwargs)(*args))


@pytest.mark.parametrize("platforms", [("cpu",), ("cpu", "tpu"), ("tpu", "cpu", "cuda")])
def test_cpu_export_runs_on_kiln(platforms):
    x = _input()
    exp = _export_on_cpu(_f, x, platforms=platforms)
    assert exp.platforms == platforms
    got = _call_on(exp, get_kiln_device(), x)
    np.testing.assert_allclose(np.asarray(got), _on_cpu(_f, x), rtol=RTOL)
    np.testing.assert_allclose(np.asarray(got), np.asarray(_call_on(exp, get_cpu_device(), x)),
                               rtol=RTOL)


def test_multi_platform_export_takes_the_cpu_branch_on_kiln():
    x = np.arange(4, dtype=np.float32)
    f = lambda x: lax.platform_dependent(x, cpu=jnp.sin, tpu=jnp.cos, default=jnp.tanh)
    exp = _export_on_cpu(f, x, platforms=("tpu", "cpu"))
    np.testing.assert_allclose(np.asarray(_call_on(exp, get_kiln_device(), x)), np.sin(x),
                               rtol=1e-6)


def test_kiln_export_records_cpu_and_runs_on_cpu():
    x = _input()
    assert export.default_export_platform() == "cpu"  # Kiln is the default backend
    exp = _round_trip(export.export(jax.jit(_f))(jax.device_put(x, get_kiln_device())))
    assert exp.platforms == ("cpu",)
    np.testing.assert_allclose(np.asarray(_call_on(exp, get_cpu_device(), x)), _on_cpu(_f, x),
                               rtol=RTOL)
    np.testing.assert_allclose(np.asarray(_call_on(exp, get_kiln_device(), x)), _on_cpu(_f, x),
                               rtol=RTOL)


def test_export_for_kiln_by_name_runs_on_cpu():
    x = _input()
    exp = _round_trip(export.export(jax.jit(_f), platforms=("kiln",))(x))
    assert exp.platforms == ("kiln",)
    np.testing.assert_allclose(np.asarray(_call_on(exp, get_cpu_device(), x)), _on_cpu(_f, x),
                               rtol=RTOL)


def test_kiln_export_runs_in_a_process_without_kiln(tmp_path):
    x = _input(4)
    exp = export.export(jax.jit(_f))(jax.device_put(x, get_kiln_device()))
    (tmp_path / "f.bin").write_bytes(exp.serialize())
    np.save(tmp_path / "x.npy", x)
    script = (
        "import sys, numpy as np, jax\n"
        "from jax import export\n"
        "assert [d.platform for d in jax.devices()] == ['cpu'], jax.devices()\n"
        "exp = export.deserialize(bytearray(open(sys.argv[1] + '/f.bin', 'rb').read()))\n"
        "np.save(sys.argv[1] + '/y.npy', np.asarray(exp.call(np.load(sys.argv[1] + '/x.npy'))))\n")
    env = {k: v for k, v in os.environ.items() if k != "PJRT_NAMES_AND_LIBRARY_PATHS"}
    env["JAX_PLATFORMS"] = "cpu"
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), _on_cpu(_f, x), rtol=RTOL)


def test_shape_polymorphic_cpu_export_runs_on_kiln():
    f = lambda x: jnp.cumsum(jnp.tanh(x), axis=0) @ jnp.ones((3, 2), jnp.float32)
    spec = jax.ShapeDtypeStruct(export.symbolic_shape("b, 3"), np.float32)
    exp = _export_on_cpu(f, spec, platforms=("cpu", "tpu"))
    for b in (1, 5):
        x = np.linspace(-2, 2, b * 3, dtype=np.float32).reshape(b, 3)
        np.testing.assert_allclose(np.asarray(_call_on(exp, get_kiln_device(), x)), _on_cpu(f, x),
                                   rtol=1e-6)


class _OrderedForTest(effects.Effect):
    """Serializable: a nullary constructor gives an equal, equally hashed effect."""

    def __eq__(self, other):
        return type(other) is _OrderedForTest

    def __hash__(self):
        return hash(_OrderedForTest.__name__)


_ORDERED = _OrderedForTest()
effects.lowerable_effects.add_type(_OrderedForTest)
effects.ordered_effects.add_type(_OrderedForTest)
effects.control_flow_allowed_effects.add_type(_OrderedForTest)

_double_p = core.Primitive("kiln_test_ordered_double")
_double_p.def_effectful_abstract_eval(lambda aval: (aval, {_ORDERED}))


def _double_lowering(ctx, x):
    ctx.set_tokens_out(ctx.tokens_in)  # the effect's token passes through, in program order
    return [mlir.hlo.add(x, x)]


mlir.register_lowering(_double_p, _double_lowering)


def test_ordered_effects_in_cpu_export_run_on_kiln():
    x = np.arange(6, dtype=np.float32)
    f = lambda x: _double_p.bind(jnp.sin(x)) + 1.0
    exp = _export_on_cpu(f, x, platforms=("cpu", "tpu"))
    assert exp.ordered_effects == (_ORDERED,)
    # Called inside a function with its own ordered effect: both tokens thread through the call.
    g = lambda x: _double_p.bind(exp.call(x))
    got = jax.jit(g)(jax.device_put(x, get_kiln_device()))
    np.testing.assert_allclose(np.asarray(got), 2.0 * (2.0 * np.sin(x) + 1.0), rtol=1e-6)


@pytest.mark.parametrize("platforms", [("tpu",), ("cuda", "tpu")])
def test_exports_for_other_platforms_are_still_refused(platforms):
    x = np.arange(4, dtype=np.float32)
    exp = _export_on_cpu(jnp.sin, x, platforms=platforms)
    with pytest.raises(ValueError, match=r"was exported for platforms .* used on .*kiln"):
        _call_on(exp, get_kiln_device(), x)
    unchecked = _export_on_cpu(jnp.sin, x, platforms=platforms,
                               disabled_checks=[export.DisabledSafetyCheck.platform()])
    np.testing.assert_allclose(np.asarray(_call_on(unchecked, get_kiln_device(), x)), np.sin(x),
                               rtol=1e-6)


SHARDED = r"""
import numpy as np
import jax, jax.numpy as jnp
from jax import export
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
jax.config.update("jax_num_cpu_devices", 2)
x = np.arange(16 * 4, dtype=np.float32).reshape(16, 4)
cpu, kiln = jax.devices("cpu"), jax.devices("kiln")
def sharding(devs, spec):
    return NamedSharding(Mesh(np.array(devs), ("x",)), spec)
f = jax.jit(lambda a, b: (a, b))
with jax.default_device(cpu[0]):
    exp = export.deserialize(export.export(f)(
        jax.device_put(x, sharding(cpu, P())), jax.device_put(x, sharding(cpu, P("x")))).serialize())
for devs in (cpu, kiln):
    with jax.default_device(devs[0]), jax.set_mesh(Mesh(np.array(devs), ("x",))):
        outs = jax.jit(exp.call)(x, x)
    print(devs[0].platform, [o.sharding.spec for o in outs],
          [tuple(s.data.shape) for o in outs for s in o.addressable_shards])
    np.testing.assert_array_equal(np.asarray(outs[1]), x)
"""


def test_sharded_cpu_export_keeps_its_shardings_on_kiln():
    """The exported function's result shardings reach the caller's results on Kiln as on the CPU
    backend (two devices each; the partitioner propagates them through the exported call when the
    function returns its sharded argument, as JAX's export_test.py test_gspmdshardings does; a
    result computed elementwise inside the exported function is still replicated on Kiln)."""
    env = dict(os.environ, JAX_PLATFORMS="kiln,cpu")
    env.pop("KILN_DEVICE_COUNT", None)
    done = subprocess.run([sys.executable, "-c", SHARDED], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in done.stdout.splitlines()
             if line.startswith(("cpu ", "kiln "))}
    assert lines["kiln"] == lines["cpu"], lines
    assert "P('x',)" in lines["cpu"] and "(8, 4)" in lines["cpu"], lines
