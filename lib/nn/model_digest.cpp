#include "nn/model_digest.h"

#include <string>

namespace ra::nn {

Digest128 parameters_digest(const Model& model) {
  std::string bytes;
  for (const Param* p : model.params()) {
    const Digest128 d = p->value.on_host() ? digest(p->value) : digest(p->value.to_host());
    bytes += p->name;
    bytes.push_back('\0');
    bytes.append(reinterpret_cast<const char*>(&d.high), sizeof d.high);
    bytes.append(reinterpret_cast<const char*>(&d.low), sizeof d.low);
  }
  return digest_bytes(DType::u8, Shape{static_cast<std::int64_t>(bytes.size())}, bytes.data(),
                      bytes.size());
}

}  // namespace ra::nn
