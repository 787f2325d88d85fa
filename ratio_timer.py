import sys, time, statistics
sys.path.insert(0, "/work/wt-rng35/bench")
import jax, numpy as np
import harness
from programs import PROGRAMS, X64
from programs_users import USER_PROGRAMS, X64 as UX64
PROGRAMS = dict(PROGRAMS); PROGRAMS.update(USER_PROGRAMS); X64 = set(X64) | set(UX64)
devs = {"kiln": jax.devices("kiln")[0], "xla": jax.devices("cpu")[0]}
for name in sys.argv[1:]:
    with jax.enable_x64(name in X64):
        make, exact = PROGRAMS[name]
        fn, host = make()
        f = {k: jax.jit(fn) for k in devs}
        a = {k: jax.device_put(host, d) for k, d in devs.items()}
        outs = {k: jax.block_until_ready(f[k](*a[k])) for k in devs}
        ok = harness.tree_close(outs["kiln"], outs["xla"], exact)
        best = {}
        t = harness.run_time(f, a, 5, 0.05, best)
        print(f"{name:36s} kiln {t['kiln']*1e3:9.3f} ms  xla {t['xla']*1e3:9.3f} ms  ratio {t['kiln']/t['xla']:.2f}  best-ratio {best['kiln']/best['xla']:.2f} {'' if ok else 'MISMATCH'}", flush=True)
