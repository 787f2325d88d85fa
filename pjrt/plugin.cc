// PJRT_Plugin_Initialize and PJRT_Plugin_Attributes.
#include <cstring>
#include <string>

#include "ingest/artifact_reader.h"
#include "pjrt/args_check.h"
#include "pjrt/entry_points.h"
#include "pjrt/error.h"

namespace kiln::pjrt {
namespace {

// Plugin attributes live for the whole process (jaxlib keeps the pointers).
struct PluginAttributes {
  PluginAttributes() {
    Int64("xla_version", xla_version);
    List("stablehlo_current_version", current);
    List("stablehlo_minimum_version", minimum);
  }

  void Int64(const char* name, int64_t value) {
    PJRT_NamedValue v;
    std::memset(&v, 0, sizeof(v));
    v.struct_size = PJRT_NamedValue_STRUCT_SIZE;
    v.name = name;
    v.name_size = std::strlen(name);
    v.type = PJRT_NamedValue_kInt64;
    v.int64_value = value;
    v.value_size = 1;
    values[count++] = v;
  }
  void List(const char* name, const int64_t (&list)[3]) {
    PJRT_NamedValue v;
    std::memset(&v, 0, sizeof(v));
    v.struct_size = PJRT_NamedValue_STRUCT_SIZE;
    v.name = name;
    v.name_size = std::strlen(name);
    v.type = PJRT_NamedValue_kInt64List;
    v.int64_array_value = list;
    v.value_size = 3;
    values[count++] = v;
  }

  // The VHLO versions the artifact reader understands: jaxlib serializes programs for
  // min(stablehlo_current_version, its own current version).
  const int64_t current[3] = {ingest::kCurrentReadableVersion.major,
                              ingest::kCurrentReadableVersion.minor,
                              ingest::kCurrentReadableVersion.patch};
  const int64_t minimum[3] = {ingest::kMinimumReadableVersion.major,
                              ingest::kMinimumReadableVersion.minor,
                              ingest::kMinimumReadableVersion.patch};
  static constexpr int64_t xla_version = 2;  // what XLA's own plugins report
  PJRT_NamedValue values[3];
  size_t count = 0;
};

const PluginAttributes& Attributes() {
  static const PluginAttributes* attrs = new PluginAttributes();  // never destroyed
  return *attrs;
}

}  // namespace

PJRT_Error* Plugin_Initialize(PJRT_Plugin_Initialize_Args* args) {
  (void)args;  // nothing to set up: clients own all state
  return nullptr;
}

PJRT_Error* Plugin_Attributes(PJRT_Plugin_Attributes_Args* args) {
  return Guard("PJRT_Plugin_Attributes", [&]() -> Status {
    // Every version of this struct has `num_attributes`, but the PJRT headers before ~0.7 declared
    // its size only up to `attributes` (PJRT_DEFINE_STRUCT_TRAITS named the wrong last field), so
    // jaxlib 0.4.x-0.6.x send struct_size 24 for a 32-byte struct. Accept 24 and write both.
    KILN_CHECK_ARGS(args, PJRT_Plugin_Attributes_Args, attributes, "PJRT_Plugin_Attributes");
    const PluginAttributes& a = Attributes();
    args->attributes = a.values;
    args->num_attributes = a.count;
    return Status::Ok();
  });
}

}  // namespace kiln::pjrt
