"""The Layouts extension: Kiln keeps arrays dense and row-major, and says so. Buffers, compiled
programs' input and output formats and the default layout agree with the CPU backend for the
row-major layout; a program asking for another layout is refused at compile time, naming it."""

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


def test_auto_layout_is_row_major():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    fn = lambda a: a.T * 2  # noqa: E731
    sds = jax.ShapeDtypeStruct(x.shape, x.dtype,
                               sharding=SingleDeviceSharding(get_kiln_device()))
    compiled = jax.jit(fn, in_shardings=Format(Layout.AUTO),
                       out_shardings=Format(Layout.AUTO)).lower(sds).compile()
    assert compiled.input_formats[0][0].layout.major_to_minor == (0, 1)
    assert compiled.output_formats.layout.major_to_minor == (0, 1)
    arg = jax.device_put(x, compiled.input_formats[0][0])
    np.testing.assert_array_equal(np.asarray(compiled(arg)), x.T * 2)


def test_explicit_row_major_layout_runs():
    d = get_kiln_device()
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    fmt = Format(Layout(major_to_minor=(0, 1)), SingleDeviceSharding(d))
    arg = jax.device_put(x, fmt)
    assert arg.format.layout.major_to_minor == (0, 1)
    out = jax.jit(lambda a: a + 1, in_shardings=fmt, out_shardings=fmt)(arg)
    assert out.format.layout.major_to_minor == (0, 1)
    np.testing.assert_array_equal(np.asarray(out), x + 1)


def test_other_layouts_are_refused_by_name():
    d = get_kiln_device()
    x = jax.device_put(np.ones((3, 4), np.float32), d)
    column_major = Format(Layout(major_to_minor=(1, 0)), SingleDeviceSharding(d))
    with pytest.raises(Exception, match=r"layout \{0,1\}.*not supported"):
        jax.jit(lambda a: a * 2, out_shardings=column_major).lower(x).compile()


def test_layout_constraint():
    # with_sharding_constraint with a Format: @LayoutConstraint in the program. Row-major runs (and
    # gives the CPU backend's values); another layout is refused by name.
    def run(m2m, device):
        fmt = Format(Layout(major_to_minor=m2m), SingleDeviceSharding(device))
        f = jax.jit(lambda x: jax.lax.with_sharding_constraint(x.T * 2, fmt))
        return f(jax.device_put(x, device))

    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    got = run((0, 1), get_kiln_device())
    want = run((0, 1), get_cpu_device())
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert got.format.layout.major_to_minor == (0, 1)
    with pytest.raises(Exception, match=r"layout \{0,1\}.*not supported"):
        run((1, 0), get_kiln_device())
