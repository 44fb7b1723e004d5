#include "backend/op_call.h"

#include "backend/geometry_key.h"

namespace ra::backend {

std::string ledger_key(const OpCall& call) {
  if (const auto* conv = std::get_if<const ConvGeometry*>(&call.geometry)) {
    return conv_geometry_key(**conv);
  }
  if (const auto* dense = std::get_if<const DenseGeometry*>(&call.geometry)) {
    return dense_geometry_key(**dense);
  }
  if (const auto* loss = std::get_if<LossShape>(&call.geometry)) {
    return loss_geometry_key(std::string(call.op.trace_name), loss->n, loss->classes);
  }
  return "";
}

}  // namespace ra::backend
