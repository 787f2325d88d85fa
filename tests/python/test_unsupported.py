"""An op Kiln does not implement (a custom call to an unknown target, unsupported_op.py) must fail
at compile time with a clean Python exception that names the op and the user's source file and
line; the process must survive."""

from __future__ import annotations

import inspect
import os
import re

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax import lax

from unsupported_op import UNSUPPORTED_OP

# Called here rather than through unsupported_op.unknown_call so that the op's source location (the
# innermost user frame) is a line of this file.
ffi_call = jax.ffi.ffi_call


def like(x):
    return jax.ShapeDtypeStruct(x.shape, x.dtype)

pytestmark = pytest.mark.requires_kiln

THIS_FILE = os.path.basename(__file__)


def uses_unknown(x):
    return ffi_call("kiln_test_no_such_target", like(x))(x)


def uses_two_unknown(x):
    a = ffi_call("kiln_test_no_such_target", like(x))(x)
    b = ffi_call("kiln_test_other_target", like(x))(a * 2)
    return a, b


def unknown_inside_loop(x):
    def body(i, c):
        return c + ffi_call("kiln_test_no_such_target", like(c))(c)
    return lax.fori_loop(0, 3, body, x)


def line_of(fn, needle: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    for i, text in enumerate(lines):
        if needle in text:
            return first + i
    raise AssertionError(f"{needle!r} not found in {fn.__name__}")


def lines_named(message: str, file_name: str) -> set[int]:
    """Line numbers that the message gives for `file_name` (e.g. 'x.py:12', '"x.py":12:5')."""
    pat = re.escape(file_name) + r"""["']?[:(, ]+(?:line )?(\d+)"""
    return {int(m) for m in re.findall(pat, message)}


def compile_error(fn, *args) -> str:
    with pytest.raises(Exception) as info:
        jax.block_until_ready(jax.jit(fn)(*args))
    return str(info.value)


def test_error_names_op_file_and_line(kiln_device):
    x = jax.device_put(np.arange(8, dtype=np.float32), kiln_device)
    msg = compile_error(uses_unknown, x)
    assert UNSUPPORTED_OP in msg, msg
    assert "UNIMPLEMENTED" in msg, msg
    assert THIS_FILE in msg, msg
    want = line_of(uses_unknown, "ffi_call(")
    assert want in lines_named(msg, THIS_FILE), f"expected {THIS_FILE}:{want} in:\n{msg}"


def test_error_lists_every_unsupported_op(kiln_device):
    x = jax.device_put(np.arange(8, dtype=np.float32), kiln_device)
    msg = compile_error(uses_two_unknown, x)
    assert msg.count(UNSUPPORTED_OP) >= 2, msg
    lines = lines_named(msg, THIS_FILE)
    assert line_of(uses_two_unknown, "kiln_test_no_such_target") in lines, msg
    assert line_of(uses_two_unknown, "kiln_test_other_target") in lines, msg
    assert "kiln_test_no_such_target" in msg and "kiln_test_other_target" in msg, msg


def test_op_in_nested_region_is_reported(kiln_device):
    x = jax.device_put(np.arange(8, dtype=np.float32), kiln_device)
    msg = compile_error(unknown_inside_loop, x)
    assert UNSUPPORTED_OP in msg, msg
    assert line_of(unknown_inside_loop, "ffi_call(") in lines_named(msg, THIS_FILE), msg


def test_eager_call_raises(kiln_device):
    x = jax.device_put(np.arange(8, dtype=np.float32), kiln_device)
    with pytest.raises(Exception) as info:
        jax.block_until_ready(uses_unknown(x))
    assert UNSUPPORTED_OP in str(info.value)


def test_process_survives_and_next_jit_works(kiln_device):
    x = jax.device_put(np.arange(8, dtype=np.float32), kiln_device)
    before = jax.jit(lambda a: a * 3.0)(x)  # compiled before the failure
    for _ in range(3):                         # and the failure is repeatable
        msg = compile_error(uses_unknown, x)
        assert UNSUPPORTED_OP in msg
    y = jax.jit(lambda a: jnp.sum(a * a) + 1.0)(x)
    assert y.devices() == {kiln_device}
    assert float(y) == float(np.sum(np.arange(8.0) ** 2) + 1.0)
    assert np.asarray(before).tolist() == [3.0 * i for i in range(8)]
    assert np.asarray(jax.jit(lambda a: a * 3.0)(x)).tolist() == [3.0 * i for i in range(8)]
    assert int(jnp.add(1, 1)) == 2


def test_error_says_what_to_do_next(kiln_device):
    x = jax.device_put(np.arange(8, dtype=np.float32), kiln_device)
    msg = compile_error(uses_unknown, x)
    assert 'jax.devices("cpu")' in msg and "report" in msg, msg
    # ... and the suggested fallback works.
    cpu_x = jax.device_put(np.arange(8, dtype=np.float32), jax.devices("cpu")[0])
    assert np.asarray(jax.jit(lambda a: a * 2)(cpu_x)).tolist() == [2.0 * i for i in range(8)]
