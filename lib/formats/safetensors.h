#pragma once
// Weight snapshots in the safetensors format (https://github.com/huggingface/safetensors), so
// that `safetensors.torch.load_file` or ten lines of NumPy can open what an audit wrote:
//   8 bytes     N, the header length, unsigned little-endian
//   N bytes     JSON header {"<name>": {"dtype": "F32", "shape": [..], "data_offsets": [b, e]},
//               ..., "__metadata__": {"<key>": "<value>"}}, padded with spaces to a multiple of 8
//               (so the data that follows is 8-byte aligned)
//   data        raw little-endian elements; offsets are relative to the start of the data, tensors
//               lie back to back in the order written, with no gaps and nothing after the last.
// Only F32 is written and accepted: every tensor repro-audit snapshots is fp32.
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace ra::formats {

struct NamedTensor {
  std::string name;
  const Tensor* tensor;
};

// Writes atomically (write_file_atomic): RuntimeFailure on I/O errors. Names must be unique,
// non-empty and not "__metadata__"; every tensor non-null with size() == element_count(shape)
// (std::invalid_argument otherwise: a caller's bug, not a user's input).
void write_safetensors(const std::filesystem::path& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// Serialises to bytes (what write_safetensors writes), for callers that stream or hash them.
std::string encode_safetensors(const std::vector<NamedTensor>& tensors,
                               const std::map<std::string, std::string>& metadata = {});

struct SafetensorsFile {
  std::map<std::string, std::string> metadata;
  std::vector<std::pair<std::string, Tensor>> tensors;  // in file order (sorted by data offset)
  const Tensor* find(std::string_view name) const;      // nullptr when absent
};

// ra::InputError naming the file (and the tensor, where one is at fault) on: a missing or
// unreadable file, a short header, a header length beyond the file, bad JSON or a JSON value of
// the wrong kind, a duplicate name, a dtype other than F32, offsets that are out of range, leave
// gaps, overlap or do not match shape * 4 bytes, and bytes after the last tensor.
SafetensorsFile read_safetensors(const std::filesystem::path& path);

// Parses bytes already in memory; `source` names them in error messages.
SafetensorsFile decode_safetensors(std::string_view bytes, const std::string& source);

}  // namespace ra::formats
