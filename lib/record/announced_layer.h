#pragma once
// The layer a decorator of the backend files each op under (Ops::enter_layer): the name the model
// announced, split where it announced a conv and the max-pool computed with it in one call
// ("conv2d_1+maxpool2d_0": the conv's ops are conv2d_1's, the pool's maxpool2d_0's; a decorator
// sees the pair's parts). Shared by the op recorder and the invariance recorder, so that both
// name an op's module alike.
#include <string>
#include <string_view>

namespace ra::record {

class AnnouncedLayer {
 public:
  void enter(const std::string& name) {
    const auto plus = name.find('+');
    layer_ = name.substr(0, plus);
    pool_layer_ = plus == std::string::npos ? name : name.substr(plus + 1);
  }
  // The layer of op `trace_name` ("maxpool2d.forward": the pool's; any other: the conv's).
  const std::string& of(std::string_view trace_name) const {
    return trace_name.starts_with("maxpool2d") ? pool_layer_ : layer_;
  }

 private:
  std::string layer_, pool_layer_;
};

}  // namespace ra::record
