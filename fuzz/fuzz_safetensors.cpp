// Snapshot bytes -> decode_safetensors (the path of read_safetensors after the file is read). An
// accepted file must encode and decode back to the same names, shapes, bytes and metadata.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "formats/safetensors.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  ra::formats::SafetensorsFile file;
  if (!ra::fuzz::accepts(
          [&] { file = ra::formats::decode_safetensors(bytes, "fuzz.safetensors"); })) {
    return 0;
  }
  std::vector<ra::formats::NamedTensor> named;
  for (const auto& [name, tensor] : file.tensors) {
    // The writer takes only names it could have chosen itself; "" is legal in a file it reads.
    if (name.empty()) return 0;
    named.push_back({name, &tensor});
  }
  const std::string encoded = ra::formats::encode_safetensors(named, file.metadata);
  ra::formats::SafetensorsFile again;
  ra::fuzz::require(ra::fuzz::accepts([&] {
                      again = ra::formats::decode_safetensors(encoded, "fuzz.safetensors");
                    }),
                    "the encoding of an accepted file is refused");
  ra::fuzz::require(again.metadata == file.metadata, "metadata changes through encode/decode");
  ra::fuzz::require(again.tensors.size() == file.tensors.size(), "tensor count changes");
  for (std::size_t i = 0; i < file.tensors.size(); ++i) {
    const auto& [name, tensor] = file.tensors[i];
    const ra::Tensor* back = again.find(name);
    ra::fuzz::require(back != nullptr, "a tensor is lost through encode/decode");
    ra::fuzz::require(back->shape() == tensor.shape(), "a shape changes through encode/decode");
    ra::fuzz::require(
        tensor.bytes() == 0 || std::memcmp(back->data(), tensor.data(), tensor.bytes()) == 0,
        "tensor bytes change through encode/decode");
  }
  return 0;
}
