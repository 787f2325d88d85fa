// Stubs for the PJRT_Api slots Kiln does not support: each returns UNIMPLEMENTED naming the
// function, which jaxlib tolerates (or turns into a Python exception) on every path Kiln has been
// driven through.
#include "pjrt/entry_points.h"
#include "pjrt/error.h"

namespace kiln::pjrt {

#define KILN_DEFINE_UNIMPLEMENTED(name)                                                      \
  PJRT_Error* name(PJRT_##name##_Args* args) {                                               \
    (void)args;                                                                              \
    return Guard("PJRT_" #name,                                                              \
                 [] { return Unimplemented("PJRT_" #name " is not implemented by Kiln"); }); \
  }
KILN_UNIMPLEMENTED_ENTRY_POINTS(KILN_DEFINE_UNIMPLEMENTED)
#undef KILN_DEFINE_UNIMPLEMENTED

}  // namespace kiln::pjrt
