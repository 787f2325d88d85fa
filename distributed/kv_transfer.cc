#include "distributed/kv_transfer.h"

#include <algorithm>
#include <cstring>
#include <string_view>
#include <vector>

namespace kiln::distributed {
namespace {

constexpr char kMagic[] = "kiln-xfer-1";
// One blocking Get lasts at most this long, so a cancelled receive is noticed quickly.
constexpr std::chrono::milliseconds kPollSlice{1000};

std::string JoinDims(std::span<const int64_t> dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) s += ',';
    s += std::to_string(dims[i]);
  }
  return "[" + s + "]";
}

// Header: "kiln-xfer-1|<status code>|<dtype>|<dims>|<bytes>|<chunks>|<error message>".
std::string EncodeHeader(StatusCode code, std::string_view dtype, std::span<const int64_t> dims,
                         size_t bytes, size_t chunks, std::string_view message) {
  std::string h = kMagic;
  h += '|' + std::to_string(static_cast<int>(code)) + '|' + std::string(dtype) + '|' +
       JoinDims(dims) + '|' + std::to_string(bytes) + '|' + std::to_string(chunks) + '|';
  h += message;
  return h;
}

struct Header {
  StatusCode code = StatusCode::kOk;
  std::string dtype;
  std::string dims;
  size_t bytes = 0;
  size_t chunks = 0;
  std::string message;
};

StatusOr<Header> DecodeHeader(const std::string& h, const std::string& what) {
  std::vector<std::string> f;
  size_t start = 0;
  while (f.size() < 6) {
    const size_t bar = h.find('|', start);
    if (bar == std::string::npos) return DataLoss(what + ": malformed header '" + h + "'");
    f.push_back(h.substr(start, bar - start));
    start = bar + 1;
  }
  if (f[0] != kMagic) return DataLoss(what + ": unknown header format '" + f[0] + "'");
  Header out;
  try {
    out.code = static_cast<StatusCode>(std::stoi(f[1]));
    out.bytes = static_cast<size_t>(std::stoull(f[4]));
    out.chunks = static_cast<size_t>(std::stoull(f[5]));
  } catch (const std::exception&) {
    return DataLoss(what + ": malformed header '" + h + "'");
  }
  out.dtype = f[2];
  out.dims = f[3];
  out.message = h.substr(start);
  return out;
}

size_t ChunkCount(size_t bytes) { return (bytes + kTransferChunkBytes - 1) / kTransferChunkBytes; }

bool Retryable(const Status& s) {
  return s.code() == StatusCode::kDeadlineExceeded || s.code() == StatusCode::kNotFound;
}

}  // namespace

std::string TransferId::KeyPrefix() const {
  return "xfer/" + std::to_string(key) + "/" + std::to_string(src_device) + "-" +
         std::to_string(dst_device) + "/";
}

std::string TransferId::Describe() const {
  return "cross-host transfer " + std::to_string(key) + " (device " + std::to_string(src_device) +
         " of process " + std::to_string(src_process) + " -> device " + std::to_string(dst_device) +
         ")";
}

Status PutArray(KeyValueStore& store, const TransferId& id, const runtime::Array& array) {
  const std::string prefix = id.KeyPrefix();
  const size_t bytes = array.byte_size();
  const size_t chunks = ChunkCount(bytes);
  const char* data = bytes == 0 ? nullptr : static_cast<const char*>(array.data());
  for (size_t c = 0; c < chunks; ++c) {
    const size_t begin = c * kTransferChunkBytes;
    const size_t n = std::min(kTransferChunkBytes, bytes - begin);
    KILN_RETURN_IF_ERROR(
        store.Put(prefix + "c" + std::to_string(c), std::string_view(data + begin, n)),
        id.Describe());
  }
  const std::string header =
      EncodeHeader(StatusCode::kOk, ir::DTypeName(array.dtype), array.dims, bytes, chunks, {});
  return store.Put(prefix + "h", header).WithContext(id.Describe());
}

Status PutError(KeyValueStore& store, const TransferId& id, const Status& error) {
  const StatusCode code = error.ok() ? StatusCode::kInternal : error.code();
  const std::string header = EncodeHeader(code, "", {}, 0, 0, error.message());
  return store.Put(id.KeyPrefix() + "h", header).WithContext(id.Describe());
}

StatusOr<runtime::Array> GetArray(KeyValueStore& store, const TransferId& id, ir::DType dtype,
                                  std::span<const int64_t> dims, std::chrono::milliseconds timeout,
                                  const std::atomic<bool>* cancelled) {
  const std::string what = id.Describe();
  const std::string prefix = id.KeyPrefix();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string raw;
  while (true) {
    if (cancelled != nullptr && cancelled->load()) {
      return Status(StatusCode::kCancelled, what + ": cancelled (the client is shutting down)");
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return Status(StatusCode::kDeadlineExceeded, what + ": nothing arrived from process " +
                                                       std::to_string(id.src_process) + " within " +
                                                       std::to_string(timeout.count() / 1000.0) +
                                                       " s (KILN_COLLECTIVE_TIMEOUT)");
    }
    StatusOr<std::string> got = store.Get(prefix + "h", std::min(left, kPollSlice));
    if (got.ok()) {
      raw = std::move(*got);
      break;
    }
    if (!Retryable(got.status())) return got.status().WithContext(what);
  }
  KILN_ASSIGN_OR_RETURN(Header h, DecodeHeader(raw, what));
  if (h.code != StatusCode::kOk) {
    return Status(h.code, what + ": the sender failed: " + h.message);
  }
  const std::string want_dtype(ir::DTypeName(dtype));
  if (h.dtype != want_dtype || h.dims != JoinDims(dims)) {
    return InvalidArgument(what + ": the sender sent " + h.dtype + h.dims + " but " + want_dtype +
                           JoinDims(dims) + " was expected");
  }
  KILN_ASSIGN_OR_RETURN(
      runtime::Array array,
      runtime::Array::Allocate(dtype, std::vector<int64_t>(dims.begin(), dims.end())));
  if (h.bytes != array.byte_size() || h.chunks != ChunkCount(h.bytes)) {
    return DataLoss(what + ": the header announces " + std::to_string(h.bytes) + " bytes in " +
                    std::to_string(h.chunks) + " chunks; expected " +
                    std::to_string(array.byte_size()) + " bytes");
  }
  char* out = h.bytes == 0 ? nullptr : static_cast<char*>(array.data());
  for (size_t c = 0; c < h.chunks; ++c) {
    // The header is written last, so every chunk is already there.
    KILN_ASSIGN_OR_RETURN(std::string chunk, store.Get(prefix + "c" + std::to_string(c), timeout),
                          what);
    const size_t begin = c * kTransferChunkBytes;
    const size_t n = std::min(kTransferChunkBytes, h.bytes - begin);
    if (chunk.size() != n) {
      return DataLoss(what + ": chunk " + std::to_string(c) + " has " +
                      std::to_string(chunk.size()) + " bytes, expected " + std::to_string(n));
    }
    std::memcpy(out + begin, chunk.data(), n);
  }
  return array;
}

}  // namespace kiln::distributed
