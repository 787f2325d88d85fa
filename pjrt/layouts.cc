#include "pjrt/layouts.h"

#include <memory>

#include "pjrt/args_check.h"
#include "pjrt/buffer.h"
#include "pjrt/client.h"
#include "pjrt/error.h"
#include "pjrt/executable.h"

// What MemoryLayout_Serialize hands out: the text, freed by the deleter it returns.
struct PJRT_Layouts_SerializedLayout {
  std::string text;
};

namespace kiln::pjrt {
namespace {

PJRT_Layouts_MemoryLayout* NewLayout(size_t rank) {
  auto* layout = new PJRT_Layouts_MemoryLayout;
  layout->minor_to_major = RowMajorMinorToMajor(rank);
  return layout;
}

void DeleteSerialized(PJRT_Layouts_SerializedLayout* serialized) { delete serialized; }

PJRT_Error* MemoryLayout_Destroy(PJRT_Layouts_MemoryLayout_Destroy_Args* args) {
  constexpr char kFn[] = "PJRT_Layouts_MemoryLayout_Destroy";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Layouts_MemoryLayout_Destroy_Args, layout, kFn);
    delete args->layout;
    return Status::Ok();
  });
}

PJRT_Error* MemoryLayout_Serialize(PJRT_Layouts_MemoryLayout_Serialize_Args* args) {
  constexpr char kFn[] = "PJRT_Layouts_MemoryLayout_Serialize";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Layouts_MemoryLayout_Serialize_Args, serialized_layout_deleter, kFn);
    KILN_CHECK_NOT_NULL(args->layout, kFn);
    auto* serialized = new PJRT_Layouts_SerializedLayout{LayoutText(args->layout->minor_to_major)};
    args->serialized_bytes = serialized->text.data();
    args->serialized_bytes_size = serialized->text.size();
    args->serialized_layout = serialized;
    args->serialized_layout_deleter = &DeleteSerialized;
    return Status::Ok();
  });
}

// The default layout of an array type: row-major whatever the type (checked all the same).
template <typename Args>
Status DefaultLayout(Args* args, const char* fn) {
  KILN_ASSIGN_OR_RETURN(ir::DType dtype, BufferDType(RawEnum(args->type), fn));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> dims, ReadDims(args->dims, args->num_dims, dtype, fn));
  args->layout = NewLayout(dims.size());
  return Status::Ok();
}

PJRT_Error* Client_GetDefaultLayout(PJRT_Layouts_PJRT_Client_GetDefaultLayout_Args* args) {
  constexpr char kFn[] = "PJRT_Layouts_PJRT_Client_GetDefaultLayout";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Layouts_PJRT_Client_GetDefaultLayout_Args, layout, kFn);
    KILN_CHECK_NOT_NULL(args->client, kFn);
    return DefaultLayout(args, kFn);
  });
}

PJRT_Error* Topology_GetDefaultLayout(PJRT_Layouts_PJRT_Topology_GetDefaultLayout_Args* args) {
  constexpr char kFn[] = "PJRT_Layouts_PJRT_Topology_GetDefaultLayout";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Layouts_PJRT_Topology_GetDefaultLayout_Args, layout, kFn);
    KILN_CHECK_NOT_NULL(args->topology_description, kFn);
    return DefaultLayout(args, kFn);
  });
}

PJRT_Error* Buffer_MemoryLayout(PJRT_Layouts_PJRT_Buffer_MemoryLayout_Args* args) {
  constexpr char kFn[] = "PJRT_Layouts_PJRT_Buffer_MemoryLayout";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Layouts_PJRT_Buffer_MemoryLayout_Args, layout, kFn);
    KILN_CHECK_NOT_NULL(args->buffer, kFn);
    auto* layout = new PJRT_Layouts_MemoryLayout;
    layout->minor_to_major = args->buffer->minor_to_major;
    args->layout = layout;
    return Status::Ok();
  });
}

PJRT_Error* Executable_GetOutputLayouts(PJRT_Layouts_PJRT_Executable_GetOutputLayouts_Args* args) {
  constexpr char kFn[] = "PJRT_Layouts_PJRT_Executable_GetOutputLayouts";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Layouts_PJRT_Executable_GetOutputLayouts_Args, layouts, kFn);
    KILN_ASSIGN_OR_RETURN(const ExecutableInfo* info, InfoOf(args->executable, kFn));
    args->num_outputs = info->output_layouts.size();
    args->layouts = const_cast<PJRT_Layouts_MemoryLayout**>(info->output_layouts.data());
    return Status::Ok();
  });
}

PJRT_Error* Executable_GetParameterLayouts(
    PJRT_Layouts_PJRT_Executable_GetParameterLayouts_Args* args) {
  constexpr char kFn[] = "PJRT_Layouts_PJRT_Executable_GetParameterLayouts";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Layouts_PJRT_Executable_GetParameterLayouts_Args, layouts, kFn);
    KILN_ASSIGN_OR_RETURN(const ExecutableInfo* info, InfoOf(args->executable, kFn));
    args->num_parameters = info->parameter_layouts.size();
    args->layouts = const_cast<PJRT_Layouts_MemoryLayout**>(info->parameter_layouts.data());
    return Status::Ok();
  });
}

}  // namespace

std::vector<int64_t> RowMajorMinorToMajor(size_t rank) {
  std::vector<int64_t> m(rank);
  for (size_t i = 0; i < rank; ++i) m[i] = static_cast<int64_t>(rank - 1 - i);
  return m;
}

std::string LayoutText(const std::vector<int64_t>& minor_to_major) {
  std::string out = "{";
  for (size_t i = 0; i < minor_to_major.size(); ++i) {
    if (i > 0) out += ",";
    out += std::to_string(minor_to_major[i]);
  }
  return out + "}";
}

PJRT_Layouts_Extension MakeLayoutsExtension(PJRT_Extension_Base* next) {
  PJRT_Layouts_Extension ext{};
  ext.base.struct_size = sizeof(PJRT_Layouts_Extension);
  ext.base.type = PJRT_Extension_Type_Layouts;
  ext.base.next = next;
  ext.PJRT_Layouts_MemoryLayout_Destroy = &MemoryLayout_Destroy;
  ext.PJRT_Layouts_MemoryLayout_Serialize = &MemoryLayout_Serialize;
  ext.PJRT_Layouts_PJRT_Client_GetDefaultLayout = &Client_GetDefaultLayout;
  ext.PJRT_Layouts_PJRT_Buffer_MemoryLayout = &Buffer_MemoryLayout;
  ext.PJRT_Layouts_PJRT_Topology_GetDefaultLayout = &Topology_GetDefaultLayout;
  ext.PJRT_Layouts_PJRT_Executable_GetOutputLayouts = &Executable_GetOutputLayouts;
  ext.PJRT_Layouts_PJRT_Executable_GetParameterLayouts = &Executable_GetParameterLayouts;
  return ext;
}

}  // namespace kiln::pjrt
