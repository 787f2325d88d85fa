"""The Layouts extension. Kiln's default layout is dense row-major, as the CPU backend's; arrays
may be put in any other dense order (a Format with another major_to_minor) and programs take and
give arrays in such orders (transposed at the program's edges), with the CPU backend's values and
formats. Tiled layouts are refused at compile time, naming them."""

from __future__ import annotations

import numpy as np
import pytest

import jax
from jax.experimental.layout import Format, Layout
from jax.sharding import SingleDeviceSharding

from conftest import get_cpu_device, get_kiln_device

pytestmark = pytest.mark.requires_kiln


def _compiled(device, fn, *xs, **jit_kwargs):
    args = [jax.device_put(x, device) for x in xs]
    return jax.jit(fn, **jit_kwargs).lower(*args).compile()


def test_array_and_compiled_formats_match_cpu():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    y = np.ones((4, 5), dtype=np.int32)
    fn = lambda a, b: (a.sum(0), a @ b.astype(np.float32), a[0, 0, 0])  # noqa: E731
    got = _compiled(get_kiln_device(), fn, x, y)
    want = _compiled(get_cpu_device(), fn, x, y)
    for g, w in zip(jax.tree.leaves(got.input_formats), jax.tree.leaves(want.input_formats)):
        assert g.layout.major_to_minor == w.layout.major_to_minor
    outs_got = jax.tree.leaves(got.output_formats)
    outs_want = jax.tree.leaves(want.output_formats)
    assert [o.layout.major_to_minor for o in outs_got] == [
        o.layout.major_to_minor for o in outs_want] == [(0, 1), (0, 1, 2), ()]
    a = jax.device_put(x, get_kiln_device())
    assert a.format.layout.major_to_minor == (0, 1, 2)
    assert a.format.layout == jax.device_put(x, get_cpu_device()).format.layout


def test_auto_layout_like_cpu():
    # Layout.AUTO: arguments row-major; a result that is a transpose in the layout that makes the
    # transpose free (as XLA chooses), others row-major. Formats and values equal the CPU
    # backend's. (XLA also propagates such layouts through elementwise ops; Kiln does not.)
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    fn = lambda a: (jax.numpy.transpose(a, (2, 0, 1)), a + 1)  # noqa: E731

    def run(device):
        sds = jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=SingleDeviceSharding(device))
        compiled = jax.jit(fn, in_shardings=Format(Layout.AUTO),
                           out_shardings=Format(Layout.AUTO)).lower(sds).compile()
        out = compiled(jax.device_put(x, compiled.input_formats[0][0]))
        return compiled, out

    (got_c, got), (want_c, want) = run(get_kiln_device()), run(get_cpu_device())
    assert (got_c.input_formats[0][0].layout.major_to_minor
            == want_c.input_formats[0][0].layout.major_to_minor)
    assert [f.layout.major_to_minor for f in got_c.output_formats] == [
        f.layout.major_to_minor for f in want_c.output_formats]
    assert got_c.output_formats[0].layout.major_to_minor == (1, 2, 0)
    for g, w in zip(got, want):
        assert g.format.layout == w.format.layout
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def test_explicit_row_major_layout_runs():
    d = get_kiln_device()
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    fmt = Format(Layout(major_to_minor=(0, 1)), SingleDeviceSharding(d))
    arg = jax.device_put(x, fmt)
    assert arg.format.layout.major_to_minor == (0, 1)
    out = jax.jit(lambda a: a + 1, in_shardings=fmt, out_shardings=fmt)(arg)
    assert out.format.layout.major_to_minor == (0, 1)
    np.testing.assert_array_equal(np.asarray(out), x + 1)


@pytest.mark.parametrize("shape,m2m", [((3, 4), (1, 0)), ((2, 3, 4), (2, 0, 1)),
                                         ((2, 3, 4), (0, 2, 1)), ((5,), (0,))])
def test_device_put_in_another_layout(shape, m2m):
    # The array is stored in that order; its values and reported layout are the CPU backend's.
    x = np.arange(np.prod(shape), dtype=np.int32).reshape(shape)
    got = jax.device_put(x, Format(Layout(major_to_minor=m2m),
                                   SingleDeviceSharding(get_kiln_device())))
    want = jax.device_put(x, Format(Layout(major_to_minor=m2m),
                                    SingleDeviceSharding(get_cpu_device())))
    assert got.format.layout.major_to_minor == want.format.layout.major_to_minor == m2m
    np.testing.assert_array_equal(np.asarray(got), x)
    # Copies to another memory keep the layout.
    host = jax.device_put(got, SingleDeviceSharding(get_kiln_device(), memory_kind="pinned_host"))
    assert host.format.layout.major_to_minor == m2m
    np.testing.assert_array_equal(np.asarray(host), x)


def test_jit_with_other_layouts_runs_like_cpu():
    # Arguments and results in column-major (and a permuted 3-d) order: Kiln transposes at the
    # program's edges; values and formats equal the CPU backend's.
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    y = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    fn = lambda a, b: (a.T @ a, b * 2 + a[None, :, :], a + 1)  # noqa: E731

    def run(device):
        col = Format(Layout(major_to_minor=(1, 0)), SingleDeviceSharding(device))
        odd = Format(Layout(major_to_minor=(1, 2, 0)), SingleDeviceSharding(device))
        row = Format(Layout(major_to_minor=(0, 1)), SingleDeviceSharding(device))
        f = jax.jit(fn, in_shardings=(col, odd), out_shardings=(col, odd, row))
        return f(jax.device_put(x, col), jax.device_put(y, odd))

    got, want = run(get_kiln_device()), run(get_cpu_device())
    for g, w in zip(got, want):
        assert g.format.layout.major_to_minor == w.format.layout.major_to_minor
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)


def test_argument_in_the_wrong_layout_is_refused():
    d = get_kiln_device()
    col = Format(Layout(major_to_minor=(1, 0)), SingleDeviceSharding(d))
    row_major_arg = jax.device_put(np.ones((3, 4), np.float32), d)
    with pytest.raises(ValueError, match="does not match the layout"):
        jax.jit(lambda a: a * 2, in_shardings=col)(row_major_arg)


def test_tiled_layouts_are_refused_by_name():
    d = get_kiln_device()
    x = jax.device_put(np.ones((8, 128), np.float32), d)
    tiled = Format(Layout(major_to_minor=(0, 1), tiling=((8, 128),)), SingleDeviceSharding(d))
    with pytest.raises(Exception, match=r"layout \{1,0:T\(8,128\)\}.*not supported"):
        jax.jit(lambda a: a * 2, out_shardings=tiled).lower(x).compile()


def test_layout_constraint():
    # with_sharding_constraint with a Format (@LayoutConstraint in the program): the CPU backend's
    # values for any dense layout asked for inside the program.
    def run(m2m, device):
        fmt = Format(Layout(major_to_minor=m2m), SingleDeviceSharding(device))
        f = jax.jit(lambda x: jax.lax.with_sharding_constraint(x.T * 2, fmt) + 1)
        return f(jax.device_put(x, device))

    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    for m2m in ((0, 1), (1, 0)):
        got = run(m2m, get_kiln_device())
        want = run(m2m, get_cpu_device())
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert run((0, 1), get_kiln_device()).format.layout.major_to_minor == (0, 1)


@pytest.mark.parametrize("m2m", [(0, 1, 2), (2, 0, 1), (1, 2, 0)])
def test_dlpack_export_reads_through_the_layout(m2m):
    # numpy sees the logical array, a strided view of the buffer's memory.
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    a = jax.device_put(x, Format(Layout(major_to_minor=m2m),
                                 SingleDeviceSharding(get_kiln_device())))
    np.testing.assert_array_equal(np.from_dlpack(a), x)
