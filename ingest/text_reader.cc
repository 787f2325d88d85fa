#include "ingest/text_reader.h"

#include <algorithm>
#include <array>

#include "ingest/text_parser.h"

namespace kiln::ingest {

bool IsMlirBytecode(std::span<const uint8_t> bytes) {
  constexpr std::array<uint8_t, 4> kMagic = {'M', 'L', 0xEF, 'R'};
  return bytes.size() >= kMagic.size() && std::equal(kMagic.begin(), kMagic.end(), bytes.begin());
}

StatusOr<ir::Module> ReadStableHloText(std::string_view text) {
  return ReadStableHloText(text, ReadLimits::ForInput(text.size()));
}

StatusOr<ir::Module> ReadStableHloText(std::string_view text, const ReadLimits& limits) {
  if (text.find('\0') != std::string_view::npos) {
    return InvalidArgument(
        "the program is neither MLIR bytecode (magic bytes 4D 4C EF 52) nor MLIR text (it holds a "
        "NUL byte)");
  }
  text::Parser parser(text, limits);
  return parser.Parse();
}

StatusOr<ir::Module> ReadMlirProgram(std::span<const uint8_t> bytes) {
  if (IsMlirBytecode(bytes)) return ReadPortableArtifact(bytes);
  return ReadStableHloText(
      std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

}  // namespace kiln::ingest
