#pragma once
// The reader of PyTorch's records as the engine's ops (compare/op_families.h pytorch_view), for its
// two sources: compare/pytorch_op_view.cpp (lookups, the forward ops, the view) and
// compare/pytorch_op_backward.cpp (the backward ops, the optimizer's updates). Internal to
// lib/compare.
//
// Each record is tried, in order, as the start of a family's run (its anchor: the convolution,
// the addmm, the log-softmax); the run's other records are found by what flows between them (the
// activation that reads the anchor's output, the transpose that made the weight it reads), so
// other ops interleaved (detach, autograd's bookkeeping) do not break a run.
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "compare/op_families.h"

namespace ra::compare::op_view {

using trace::OpRecord;
using Names = std::initializer_list<std::string_view>;

extern const Names kConvolutions, kActivations, kActivationBackwards, kTransposes;

// Whether the record's op is one of the aten ops `names` (aten_base_name's).
bool named_one_of(const OpRecord& r, Names names);

// A tensor an op reads or writes: its digest and its type ("f32[64,10]").
struct Value {
  Digest128 digest;
  std::string type;
};

// The elements of a type "f32[64,1,10]" (640); 0 for one that is not a tensor's.
std::size_t elements_of(const std::string& type);

struct ValueDigestHash {
  std::size_t operator()(const Digest128& d) const {
    return static_cast<std::size_t>(d.high ^ (d.low * 0x9e3779b97f4a7c15u));
  }
};

// What the forward of a layer read: where its backward's records are recognised.
struct LayerForward {
  bool dense = false;
  Value x, weight;
  std::optional<Value> bias;
};

class PytorchReader {
 public:
  // `gated`: the layers whose engine backward applies the previous layer's relu backward.
  PytorchReader(const std::vector<OpRecord>& records, std::set<std::string> gated);
  StepView read();

 private:
  struct Piece {
    std::size_t position;  // of its anchor: where the op stands in the view
    OpRecord op;
    ViewedOp source;
  };

  // The tensors record i reads, in order (its non-tensor arguments and generator left out).
  std::vector<Value> inputs(std::size_t i) const;
  Value output(std::size_t i, std::size_t k) const;
  // The latest record before `before` that made `d`: not one that only passed it on (a detach
  // of it, an in-place op that left it as it was).
  std::optional<std::size_t> producer(std::size_t before, const Digest128& d) const;
  // The first record after `after`, not yet read into an op, that reads `d` first and is one of
  // `names` (in `layer` unless that is empty).
  std::optional<std::size_t> reader(std::size_t after, const Digest128& d, Names names,
                                    const std::string& layer = "") const;
  // `v` as the value it is the transpose of, when a transpose not yet read into an op made it;
  // the transpose joins `run`.
  Value untransposed(std::size_t at, const Value& v, std::vector<std::size_t>& run) const;
  // Whether `v` is `target`, as it is or as the transpose of what a transpose not yet read into
  // an op made it from (PyTorch reads a dense layer's weight through t, and t again backward);
  // that transpose joins `run`.
  bool reads_as(std::size_t at, const Value& v, const Digest128& target,
                std::vector<std::size_t>& run) const;
  std::optional<std::size_t> transpose_before(std::size_t at, const Value& v) const;
  // The activation's backward reading `dx` (output of record i), where the engine applies it
  // in the op of `layer`.
  std::optional<std::size_t> gate_after(std::size_t i, const Value& dx,
                                        const std::string& layer) const;

  // A piece of the view: its run's records are read into it.
  void add(std::size_t position, const std::string& op, const std::string& layer,
           const std::vector<Value>& in, const std::vector<Value>& out,
           std::vector<std::size_t> run, std::size_t outputs_of, std::vector<std::size_t> outputs);

  // The families (op_families()): each true when record i was read as one.
  bool conv_forward(std::size_t i);
  bool dense_forward(std::size_t i);
  bool loss_forward(std::size_t i);
  bool loss_gradient(std::size_t i);
  bool conv_backward(std::size_t i);
  bool dense_backward(std::size_t i);
  bool dense_bias_backward(std::size_t i);
  bool pool_backward(std::size_t i);
  bool read_at(std::size_t i);
  void optimizer_updates();
  void update_of(const std::string& name, const Value& value, const Value& gradient,
                 std::size_t from);
  void with_feeding_records(std::vector<std::size_t>& run) const;
  std::size_t passes_on(std::size_t i);
  std::vector<Piece> in_engine_order(std::vector<Piece> pieces) const;

  const std::vector<OpRecord>& records_;
  std::vector<bool> used_;
  std::set<std::string> gated_;
  std::unordered_map<Digest128, std::vector<std::size_t>, ValueDigestHash> producers_, readers_;
  std::map<std::string, LayerForward> forward_;
  std::vector<Piece> pieces_;
  std::size_t fused_ = 0;
};

}  // namespace ra::compare::op_view
