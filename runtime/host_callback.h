// Host callbacks: the bridge from a running program to the Python callables Kiln's Python package
// registered (abi/kiln_extension.h). The package installs one trampoline; kernels invoke it.
#pragma once

#include <cstdint>
#include <span>

#include "abi/kiln_extension.h"
#include "support/status.h"

namespace kiln::runtime {

void SetHostCallback(Kiln_HostCallbackFn fn);

// Runs callback `id`. FAILED_PRECONDITION when no trampoline is installed; the callback's own
// error (e.g. the Python exception) as INTERNAL otherwise.
Status InvokeHostCallback(uint64_t id, std::span<void* const> args, std::span<void* const> results);

}  // namespace kiln::runtime
