"""An op that Kiln rejects at compile time, for the tests of what happens then: a custom call to a
target that no library provides (Kiln must always refuse unknown targets, by name)."""

from __future__ import annotations

import jax

UNSUPPORTED_OP = "stablehlo.custom_call"


def unknown_call(x, target: str = "kiln_test_no_such_target"):
    """x -> custom_call @target(x), same shape and dtype."""
    return jax.ffi.ffi_call(target, jax.ShapeDtypeStruct(x.shape, x.dtype))(x)
