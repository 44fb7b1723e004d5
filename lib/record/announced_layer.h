#pragma once
// The layer a decorator of the backend files each op under (Ops::enter_layer): the name the model
// announced, split where it announced a pair computed in one call, a conv and its max-pool
// ("conv2d_1+maxpool2d_0": the conv's ops are conv2d_1's, the pool's maxpool2d_0's), a batch
// normalisation and its activation ("batchnorm_0+relu_0": the activation's ops are relu_0's), or
// a residual block's first batch normalisation and the block's add ("b.batchnorm_0+b": the add
// is b's); a decorator sees the pair's parts. Shared by the op recorder and the invariance
// recorder, so that both name an op's module alike.
#include <string>
#include <string_view>

namespace ra::record {

class AnnouncedLayer {
 public:
  void enter(const std::string& name) {
    const auto plus = name.find('+');
    layer_ = name.substr(0, plus);
    second_layer_ = plus == std::string::npos ? name : name.substr(plus + 1);
  }
  // The layer of op `trace_name` ("maxpool2d.forward", "activation.forward", "residual.add": the
  // pair's second; any other: the first).
  const std::string& of(std::string_view trace_name) const {
    return trace_name.starts_with("maxpool2d") || trace_name.starts_with("activation") ||
                   trace_name.starts_with("residual")
               ? second_layer_
               : layer_;
  }

 private:
  std::string layer_, second_layer_;
};

}  // namespace ra::record
