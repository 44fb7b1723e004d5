#pragma once
// One op call as data (backend/forwarding_ops.h): its row of the op table (core/op_table.h), its
// kernel mode, the buffers it reads and writes at the positions the row names, and the call itself
// on the decorated backend. A decorator observes every op through one hook over these calls (the
// op recorder, bench's timer) instead of one override per op. Nothing here allocates: a call is
// described on every op of a decorated backend, recorded or not.
#include <array>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <variant>

#include "backend/geometry.h"
#include "backend/modes.h"
#include "core/digest.h"
#include "core/op_table.h"

namespace ra::backend {

// One buffer an op reads or writes: `count` elements of `dtype` at `data`, in the backend's
// memory, or in host memory when `host` (a loss value, returned to the caller).
struct OpRegion {
  DType dtype = DType::f32;
  const void* data = nullptr;
  std::int64_t count = 0;
  bool host = false;
  std::size_t bytes() const { return static_cast<std::size_t>(count) * dtype_bytes(dtype); }
};

// The regions of one side of a call, in order (an op has at most 6 inputs and 5 outputs).
class OpRegions {
 public:
  OpRegions() = default;
  OpRegions(std::initializer_list<OpRegion> regions) {
    for (const OpRegion& r : regions) add(r);
  }
  void add(const OpRegion& region) {
    if (size_ == items_.size()) throw std::logic_error("OpRegions: more than 6 regions");
    items_[size_++] = region;
  }
  // An optional f32 buffer (a bias, a relu gate, an optimizer state): only when present.
  void add_if(const float* data, std::int64_t count) {
    if (data != nullptr) add(OpRegion{DType::f32, data, count});
  }
  std::size_t size() const noexcept { return size_; }
  const OpRegion& operator[](std::size_t i) const noexcept { return items_[i]; }
  const OpRegion* begin() const noexcept { return items_.data(); }
  const OpRegion* end() const noexcept { return items_.data() + size_; }

 private:
  std::array<OpRegion, 6> items_{};
  std::size_t size_ = 0;
};

// The op itself: a reference to a callable (a lambda of the ForwardingOps method that describes
// the call), no copy, no allocation. The callable must outlive the reference: build the OpCall in
// the full expression that dispatches it, or from a named lambda.
class OpRun {
 public:
  template <class F>
  requires(!std::is_same_v<std::remove_cvref_t<F>, OpRun>) OpRun(F&& f)
  noexcept  // NOLINT(google-explicit-constructor): a lambda passes as one
      : target_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* target) { (*static_cast<std::remove_reference_t<F>*>(target))(); }) {}
  void operator()() const { call_(target_); }

 private:
  void* target_;
  void (*call_)(void*);
};

// The shape a loss's ledger entry is keyed by (backend/geometry_key.h).
struct LossShape {
  int n = 0, classes = 0;
};
// The geometry of the call's algorithm-ledger entry, or none (an op without an entry).
using OpGeometry =
    std::variant<std::monostate, const ConvGeometry*, const DenseGeometry*, LossShape>;

struct OpCall {
  const OpInfo& op;
  std::optional<KernelMode> mode{};  // the reduction's mode; none for an op that takes none
  OpGeometry geometry{};
  OpRegions inputs{}, outputs{};
  OpRun run;  // the op on the decorated backend: a hook runs it once (or not: `declinable`)
  // The dropout's stream, of which its mask is a function alone (key, draw, drop threshold,
  // count): the recorder's pseudo-op "dropout_mask" digests it. The mask, written by the op, is
  // the call's second input, as the record names it.
  std::array<std::uint64_t, 4> stream{};
  // optimizer_update_digested: a hook that does not run it declines the fused update, and the
  // caller then updates and digests with separate calls (which it observes as usual).
  bool declinable = false;
};

// The ledger key of the call's geometry ("conv 128x1x28x28 k32 3x3 s1 p0"), "" for none.
std::string ledger_key(const OpCall& call);

}  // namespace ra::backend
