"""Checks of the comparison helpers themselves: a differential suite is only as good as its
comparator, so each kind of difference must be caught (these run without touching Kiln)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from conftest import assert_array_close, assert_close
from tolerances import tolerance

FAIL = pytest.fail.Exception


def test_identical_arrays_pass():
    x = np.array([1.0, np.nan, -np.inf, -0.0], np.float32)
    assert_array_close(x, x.copy())
    assert_array_close(x, x.copy(), exact=True)


@pytest.mark.parametrize("got,want", [
    (np.float32([1.0]), np.float64([1.0])),         # dtype
    (np.float32([1.0, 2.0]), np.float32([[1.0, 2.0]])),  # shape
    (np.float32([1.0]), np.float32([1.0001])),      # value beyond rtol 1e-6
    (np.float32([np.nan]), np.float32([1.0])),      # NaN vs number
    (np.float32([1.0]), np.float32([np.nan])),
    (np.float32([np.inf]), np.float32([-np.inf])),  # wrong infinity
    (np.float32([3e38]), np.float32([np.inf])),     # finite vs inf
    (np.int32([5]), np.int32([6])),                 # ints are exact
    (np.array([True]), np.array([False])),
    (np.array([1.0], ml_dtypes.bfloat16), np.array([1.5], ml_dtypes.bfloat16)),
    (np.complex64([1 + 1j]), np.complex64([1 + 1.1j])),
])
def test_mismatches_are_caught(got, want):
    with pytest.raises((FAIL, AssertionError)):
        assert_array_close(got, want)


def test_exact_mode_checks_sign_of_zero_and_last_bit():
    with pytest.raises(FAIL):
        assert_array_close(np.float32([0.0]), np.float32([-0.0]), exact=True)
    one_ulp = np.nextafter(np.float32(1), np.float32(2))
    with pytest.raises(FAIL):
        assert_array_close(np.float32([one_ulp]), np.float32([1.0]), exact=True)
    with pytest.raises(FAIL):
        assert_array_close(np.complex64([complex(0.0, 1.0)]), np.complex64([complex(-0.0, 1.0)]),
                           exact=True)
    # ...while the tolerance mode accepts one ulp.
    assert_array_close(np.float32([one_ulp]), np.float32([1.0]))


def test_tolerance_applies_atol_and_rtol():
    assert_array_close(np.float32([1e-7]), np.float32([0.0]), rtol=0, atol=1e-6)
    with pytest.raises(FAIL):
        assert_array_close(np.float32([1e-5]), np.float32([0.0]), rtol=0.5, atol=1e-6)


def test_tree_structure_must_match():
    with pytest.raises(AssertionError):
        assert_close((np.float32(1),), [np.float32(1)])
    with pytest.raises(AssertionError):
        assert_close({"a": np.float32(1)}, {"b": np.float32(1)})
    with pytest.raises(FAIL):
        assert_close({"a": np.float32(1), "b": np.int32(2)}, {"a": np.float32(1), "b": np.int32(3)})


def test_tolerance_table():
    assert tolerance(np.int32) == (0.0, 0.0)
    assert tolerance(np.float32, "arith") == (1e-6, 0.0)
    assert tolerance(np.float32, "transcendental")[0] <= 1e-5
    with pytest.raises(KeyError):
        tolerance(np.float32, "no-such-kind")


def test_subnormal_versus_zero_is_tolerated_but_not_in_exact_mode():
    sub = np.float32(3e-39)  # subnormal: XLA:CPU flushes such results to zero
    assert_array_close(np.float32([sub]), np.float32([0.0]))
    with pytest.raises(FAIL):
        assert_array_close(np.float32([sub]), np.float32([0.0]), exact=True)
    with pytest.raises(FAIL):  # a normal number is not hidden by the flush-to-zero allowance
        assert_array_close(np.float32([1e-37]), np.float32([0.0]))
