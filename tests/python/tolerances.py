"""The comparison tolerances of the Python test suite, in one place.

Results are compared as |kiln - cpu| <= atol + rtol * |cpu| (NaN must match NaN, +-inf the same
infinity). Integer and bool results are always compared exactly, and so are floating-point results
of pure data movement (transpose, slice, gather, sort, ...), which must be bit-for-bit equal.

Subnormals: XLA:CPU runs with flush-to-zero (a subnormal result becomes +-0); an IEEE-conforming
kernel returns the subnormal. So every non-exact comparison uses atol >= the dtype's smallest normal
number (finfo.tiny, 1.2e-38 for f32), which hides exactly these differences and nothing of
practical size. Test inputs contain no subnormals.

Kinds of computation:
  arith           one correctly rounded IEEE operation per element (add, sub, mul, div, sqrt, min,
                  max, floor, convert, ...). XLA:CPU and a straightforward kernel should agree
                  exactly; we allow a few ulps (rtol ~ 8 ulps) so that an FMA contraction or a
                  different but correct evaluation order is not reported as a bug.
  transcendental  exp, log, tanh, sin, pow, erf, logistic, ... XLA:CPU uses its own polynomial
                  approximations (a few ulps from correctly rounded); an independent libm-quality
                  implementation can differ by tens of ulps. atol covers results that are
                  ~0 (sin(pi), log(1)), where the relative error of either side is meaningless.
  reduction       sums/products/means over up to ~100 elements with O(1) inputs and dot products:
                  the summation order is unspecified (XLA vectorises and tree-reduces), so the
                  result can differ by ~sqrt(n) ulps of the partial sums; atol covers cancellation
                  to ~0.
  composite       multi-stage numerical programs (softmax, logsumexp, MLP loss and gradients,
                  random.normal's erf_inv): error accumulates through several transcendental and
                  reduction stages.
"""

import numpy as np
import ml_dtypes

_F16 = np.dtype(np.float16)
_BF16 = np.dtype(ml_dtypes.bfloat16)
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_C64 = np.dtype(np.complex64)
_C128 = np.dtype(np.complex128)

# (rtol, atol) per kind and dtype.
TOLERANCES = {
    "arith": {_F16: (2e-3, 0.0), _BF16: (1.6e-2, 0.0), _F32: (1e-6, 0.0), _F64: (1e-15, 0.0),
              _C64: (1e-6, 0.0), _C128: (1e-15, 0.0)},
    "transcendental": {_F16: (4e-3, 1e-3), _BF16: (3e-2, 1e-2), _F32: (1e-5, 1e-6),
                       _F64: (1e-12, 1e-14), _C64: (1e-5, 1e-6), _C128: (1e-12, 1e-14)},
    "reduction": {_F16: (1e-2, 1e-2), _BF16: (5e-2, 5e-2), _F32: (1e-5, 1e-5),
                  _F64: (1e-13, 1e-13), _C64: (1e-5, 1e-5), _C128: (1e-13, 1e-13)},
    "composite": {_F16: (1e-2, 1e-2), _BF16: (5e-2, 5e-2), _F32: (1e-5, 1e-6),
                  _F64: (1e-12, 1e-13), _C64: (1e-5, 1e-6), _C128: (1e-12, 1e-13)},
}


def tolerance(dtype, kind: str = "arith") -> tuple[float, float]:
    """(rtol, atol) for comparing floating results of `dtype` computed by `kind` of computation."""
    dtype = np.dtype(dtype)
    if dtype.kind in "biu":
        return (0.0, 0.0)
    return TOLERANCES[kind][dtype]
