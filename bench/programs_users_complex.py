"""More users' complex-number programs (issue 35), beside programs_users.py's: a complex64 FIR
filter written with elementwise products (no FFT) of a signal modulated by `jnp.exp(1j * theta)`,
and a complex128 `scan` of a damped rotation that divides. Written as a user writes them.
"""

from __future__ import annotations

import numpy as np

import jax.numpy as jnp
from jax import lax

RNG = np.random.default_rng(356)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def modulated_fir_complex64():
    """A complex64 signal of 32k samples modulated by exp(1j * theta), filtered by 8 complex taps
    as shifted elementwise products, demodulated with the conjugate carrier, and normalized by
    the input (a complex divide); returns the power and the real part."""
    n, taps = 1 << 15, 8

    def run(x, theta, w):
        carrier = jnp.exp(1j * theta)
        s = x * carrier
        acc = w[0] * s[: n - taps]
        for k in range(1, taps):
            acc = acc + w[k] * s[k : n - taps + k]
        y = acc * jnp.conj(carrier[: n - taps])
        gain = y / (x[: n - taps] + (1e-3 + 1e-3j))
        return jnp.abs(y) ** 2, jnp.real(gain) + jnp.imag(gain)

    x = (f32(n) + 1j * f32(n)).astype(np.complex64)
    theta = np.linspace(0, 200 * np.pi, n, dtype=np.float32)
    w = (f32(taps) + 1j * f32(taps)).astype(np.complex64) / 4
    return run, (x, theta, w)


def damped_rotation_scan_complex128():
    """A complex128 scan of 400 steps over 256 phasors: each step rotates by exp(1j * omega * dt),
    divides by a complex damping factor and records the mean real and imaginary parts (x64)."""
    def run(z0, omega):
        rot = jnp.exp(1j * omega * 0.01)
        damping = 1.0 + 1e-3j

        def step(z, _):
            z = z * rot / damping
            return z, (jnp.real(z).mean(), jnp.imag(z).mean())
        return lax.scan(step, z0, None, length=400)

    z0 = RNG.standard_normal(256) + 1j * RNG.standard_normal(256)
    return run, (z0, RNG.uniform(0.5, 2.0, 256))


COMPLEX_PROGRAMS = {
    "u_modulated_fir_c64_32k": (modulated_fir_complex64, False),
    "u_damped_rotation_scan_c128": (damped_rotation_scan_complex128, False),
}
COMPLEX_X64 = {"u_damped_rotation_scan_c128"}
