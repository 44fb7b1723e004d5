#pragma once
// Names of op geometries, as the algorithm ledger keys its entries (backend/cuda/ledger.h) and
// the op records of a trace name the entry an op used (record/op_recorder.h). Pure formatting.
#include <string>

#include "backend/geometry.h"

namespace ra::backend {

// "conv 128x1x28x28 k32 3x3 s1 p0": input NxCxHxW, filters, kernel RxS, stride (one number when
// equal, else "s2x1"), padding (one number when all four equal, else "p(t1 l0 b2 r1)").
std::string conv_geometry_key(const ConvGeometry& g);
// "dense 128x9216->128": batch x in -> out.
std::string dense_geometry_key(const DenseGeometry& g);
// "batchnorm 128x16x32x32": the op family, input NxCxHxW.
std::string channel_geometry_key(const std::string& family, const ChannelGeometry& g);
// "softmax_cross_entropy 128x10": the loss's name, batch x classes.
std::string loss_geometry_key(const std::string& loss, int n, int classes);

}  // namespace ra::backend
