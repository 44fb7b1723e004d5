#include "ops/op_case.h"

#include <algorithm>
#include <stdexcept>

namespace ops_test {

BackendArrays::BackendArrays(ra::Memory& memory, const Arrays& host) : memory_(memory) {
  try {
    upload_all(host.f32, f32_);
    upload_all(host.i32, i32_);
    upload_all(host.u8, u8_);
  } catch (...) {
    release();
    throw;
  }
}

BackendArrays::~BackendArrays() {
  release();
}

void BackendArrays::release() noexcept {
  for (auto* buffers : {&f32_, &i32_, &u8_}) {
    for (auto& [name, buffer] : *buffers) memory_.deallocate(buffer.data);
    buffers->clear();
  }
}

template <class T>
void BackendArrays::upload_all(const std::map<std::string, std::vector<T>>& arrays,
                               std::map<std::string, Buffer>& into) {
  for (const auto& [name, values] : arrays) {
    // One byte at least, so that an empty array still has an address of its own.
    Buffer buffer{memory_.allocate(std::max<std::size_t>(1, values.size() * sizeof(T))),
                  values.size() * sizeof(T)};
    into[name] = buffer;
    if (buffer.bytes > 0) memory_.upload(buffer.data, values.data(), buffer.bytes);
  }
}

BackendArrays::Buffer& BackendArrays::find(std::map<std::string, Buffer>& buffers,
                                           const std::string& name) {
  const auto it = buffers.find(name);
  if (it == buffers.end()) throw std::logic_error("op case has no array '" + name + "'");
  return it->second;
}

float* BackendArrays::f32(const std::string& name) {
  return static_cast<float*>(find(f32_, name).data);
}
std::int32_t* BackendArrays::i32(const std::string& name) {
  return static_cast<std::int32_t*>(find(i32_, name).data);
}
std::uint8_t* BackendArrays::u8(const std::string& name) {
  return static_cast<std::uint8_t*>(find(u8_, name).data);
}

namespace {
template <class T>
void download_all(ra::Memory& memory, const std::map<std::string, std::vector<T>>& returned,
                  const auto& buffers, std::map<std::string, std::vector<T>>& into) {
  into = returned;
  for (const auto& [name, buffer] : buffers) {
    std::vector<T> values(buffer.bytes / sizeof(T));
    if (buffer.bytes > 0) memory.download(values.data(), buffer.data, buffer.bytes);
    into[name] = std::move(values);
  }
}
}  // namespace

Arrays BackendArrays::download() const {
  Arrays host;
  download_all(memory_, returned_.f32, f32_, host.f32);
  download_all(memory_, returned_.i32, i32_, host.i32);
  download_all(memory_, returned_.u8, u8_, host.u8);
  return host;
}

std::vector<std::string> op_names() {
  std::vector<std::string> names;
  for (const OpCase& c : op_table()) {
    if (std::find(names.begin(), names.end(), c.op) == names.end()) names.push_back(c.op);
  }
  return names;
}

}  // namespace ops_test
