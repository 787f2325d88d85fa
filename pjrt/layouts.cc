#include "pjrt/layouts.h"

#include <cctype>
#include <memory>
#include <optional>

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

// "{2,0,1}" (an xla::Layout without tiles or other parts) as minor_to_major, else nullopt.
std::optional<std::vector<int64_t>> ParseLayoutText(std::string_view text) {
  if (text.size() < 2 || text.front() != '{' || text.back() != '}') return std::nullopt;
  std::vector<int64_t> out;
  size_t i = 1;
  const size_t end = text.size() - 1;
  while (i < end) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return std::nullopt;
    int64_t v = 0;
    while (i < end && std::isdigit(static_cast<unsigned char>(text[i]))) {
      v = v * 10 + (text[i] - '0');
      if (v > 1'000'000) return std::nullopt;
      ++i;
    }
    out.push_back(v);
    if (i < end) {
      if (text[i] != ',') return std::nullopt;
      ++i;
      if (i == end) return std::nullopt;
    }
  }
  return out;
}

Status CheckLayoutMode(const ir::Attr& attrs, size_t rank, const std::string& what) {
  if (attrs.kind != ir::Attr::Kind::kDict) return Status::Ok();
  const ir::Attr* mode = attrs.Find("mhlo.layout_mode");
  if (mode == nullptr || mode->kind != ir::Attr::Kind::kString) return Status::Ok();
  if (mode->str == "default" || mode->str == "auto") return Status::Ok();
  std::optional<std::vector<int64_t>> m2m = ParseLayoutText(mode->str);
  if (m2m.has_value() && *m2m == RowMajorMinorToMajor(rank)) return Status::Ok();
  return Unimplemented("the layout " + mode->str + " (mhlo.layout_mode) of " + what +
                       " is not supported: Kiln keeps arrays row-major (minor_to_major " +
                       LayoutText(RowMajorMinorToMajor(rank)) + ")");
}

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

Status CheckEntryLayouts(const ir::Function& main) {
  for (size_t i = 0; i < main.arg_attrs.size() && i < main.arg_types.size(); ++i) {
    KILN_RETURN_IF_ERROR(CheckLayoutMode(main.arg_attrs[i], main.arg_types[i].dims.size(),
                                         "argument #" + std::to_string(i) + " of @" + main.name));
  }
  for (size_t i = 0; i < main.result_attrs.size() && i < main.result_types.size(); ++i) {
    KILN_RETURN_IF_ERROR(CheckLayoutMode(main.result_attrs[i], main.result_types[i].dims.size(),
                                         "result #" + std::to_string(i) + " of @" + main.name));
  }
  return Status::Ok();
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
