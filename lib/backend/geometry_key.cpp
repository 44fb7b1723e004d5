#include "backend/geometry_key.h"

#include <sstream>

namespace ra::backend {

std::string conv_geometry_key(const ConvGeometry& g) {
  std::ostringstream key;
  key << "conv " << g.n << 'x' << g.c << 'x' << g.h << 'x' << g.w << " k" << g.k << ' ' << g.r
      << 'x' << g.s << " s" << g.stride_h;
  if (g.stride_w != g.stride_h) key << 'x' << g.stride_w;
  if (g.pad_top == g.pad_left && g.pad_top == g.pad_bottom && g.pad_top == g.pad_right) {
    key << " p" << g.pad_top;
  } else {
    key << " p(t" << g.pad_top << " l" << g.pad_left << " b" << g.pad_bottom << " r" << g.pad_right
        << ')';
  }
  return key.str();
}

std::string dense_geometry_key(const DenseGeometry& g) {
  std::ostringstream key;
  key << "dense " << g.n << 'x' << g.in << "->" << g.out;
  return key.str();
}

std::string channel_geometry_key(const std::string& family, const ChannelGeometry& g) {
  std::ostringstream key;
  key << family << ' ' << g.n << 'x' << g.c << 'x' << g.h << 'x' << g.w;
  return key.str();
}

std::string loss_geometry_key(const std::string& loss, int n, int classes) {
  return loss + ' ' + std::to_string(n) + 'x' + std::to_string(classes);
}

}  // namespace ra::backend
