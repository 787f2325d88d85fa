"""stablehlo.fft on Kiln vs JAX's CPU backend: FFT, IFFT, RFFT, IRFFT over 1-3 innermost dims,
f32/c64 and (x64) f64/c128, odd and even lengths, batches, padding/cropping via `n`/`s`, and
gradients. Compared with the "transcendental" tolerance (twiddle factors are computed, not exact).
"""

from __future__ import annotations

import numpy as np
import pytest

import jax
import jax.numpy as jnp

from opdata import C64, F32, F64, rand
from test_ops import check

C128 = np.dtype(np.complex128)

# name -> (function, input is complex, input shape)
CASES = {
    "fft": (jnp.fft.fft, True, (4, 10)),
    "fft_odd": (jnp.fft.fft, True, (3, 7)),
    "fft_prime_long": (jnp.fft.fft, True, (2, 257)),
    "ifft": (jnp.fft.ifft, True, (4, 10)),
    "fft_n_pad": (lambda x: jnp.fft.fft(x, n=16), True, (3, 10)),
    "fft_n_crop": (lambda x: jnp.fft.fft(x, n=6), True, (3, 10)),
    "fft_axis0": (lambda x: jnp.fft.fft(x, axis=0), True, (6, 5)),
    "fft2": (jnp.fft.fft2, True, (2, 6, 8)),
    "ifft2": (jnp.fft.ifft2, True, (2, 6, 8)),
    "fftn3": (jnp.fft.fftn, True, (4, 5, 6)),
    "ifftn3": (jnp.fft.ifftn, True, (2, 4, 5, 6)),
    "rfft": (jnp.fft.rfft, False, (4, 10)),
    "rfft_odd": (jnp.fft.rfft, False, (4, 9)),
    "irfft": (jnp.fft.irfft, True, (4, 6)),
    "irfft_odd_n": (lambda x: jnp.fft.irfft(x, n=11), True, (4, 6)),
    "rfft2": (jnp.fft.rfft2, False, (3, 6, 8)),
    "irfft2": (jnp.fft.irfft2, True, (3, 6, 5)),
    "rfftn3": (jnp.fft.rfftn, False, (2, 4, 6, 8)),
    "irfftn3": (lambda x: jnp.fft.irfftn(x, s=(4, 6, 9)), True, (4, 6, 5)),
    "scalar_batch": (jnp.fft.fft, True, (16,)),
    "fftshift_roundtrip": (lambda x: jnp.fft.ifft(jnp.fft.fftshift(jnp.fft.fft(x))), True, (5, 8)),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("wide", [False, True], ids=["32", "64"])
def test_fft(name, wide):
    f, is_complex, shape = CASES[name]
    dtype = (C128 if wide else C64) if is_complex else (F64 if wide else F32)
    check(f, rand(dtype, shape, "unit"), kind="transcendental")


def test_fft_gradients():
    x = rand(F32, (3, 12), "unit")

    def loss(x):
        spec = jnp.fft.rfft(x)
        back = jnp.fft.irfft(spec * jnp.exp(-jnp.arange(spec.shape[-1]) / 4.0), n=12)
        return jnp.sum(back ** 2) + jnp.sum(jnp.abs(jnp.fft.fft(x)) ** 2)

    check(jax.grad(loss), x, kind="transcendental")


def test_fft_large_batch_runs_in_parallel_chunks():
    x = rand(C64, (512, 256), "unit")
    check(lambda x: jnp.fft.ifft(jnp.fft.fft(x) * 2), x, kind="transcendental")
