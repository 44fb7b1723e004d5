#include "spec/resolve.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <limits>
#include <map>
#include <optional>
#include <string>

#include "core/integer_math.h"
#include "core/printable.h"
#include "spec/limits.h"
#include "spec/resolve_steps.h"

namespace ra::spec {
namespace detail {
namespace {

using Problems = std::vector<Problem>;

std::string layer_path(std::size_t i) {
  return "model.layers[" + std::to_string(i) + "]";
}

// A refused name as a message shows it: escaped (core/printable.h) and cut after 64 bytes, so a
// megabyte name is not echoed whole.
std::string shown_name(const std::string& name) {
  constexpr std::size_t kShown = 64;
  return "\"" + printable(std::string_view(name).substr(0, kShown)) + "\"" +
         (name.size() > kShown ? "... (" + std::to_string(name.size()) + " bytes)" : "");
}

bool is_valid_name(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(),
                                      [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

// Products and sums of counts that remember an int64 overflow (possible only for absurd specs,
// e.g. a "same" conv with a 10^6 x 10^6 kernel; they are reported, not wrapped).
struct Count {
  std::int64_t value = 0;
  bool overflow = false;
  explicit Count(std::int64_t v) : value(v) {}
  Count& operator*=(std::int64_t f) {
    overflow = overflow || __builtin_mul_overflow(value, f, &value);
    return *this;
  }
  Count& operator+=(const Count& o) {
    overflow = overflow || o.overflow || __builtin_add_overflow(value, o.value, &value);
    return *this;
  }
};
Count product(std::initializer_list<std::int64_t> factors) {
  Count c(1);
  for (std::int64_t f : factors) c *= f;
  return c;
}

// One spatial dimension of a conv or pool window sliding over `in` cells.
struct Window {
  std::int64_t out = 0;
  int pad_begin = 0, pad_end = 0;
};
// valid: out = floor((in - k) / stride) + 1, needs in >= k.
// same (TensorFlow): out = ceil(in / stride); total pad = max((out - 1) * stride + k - in, 0),
// top/left = total / 2, bottom/right = the rest. Since (out - 1) * stride < in, total < k: every
// window holds at least one real cell, and no side is padded by a whole kernel.
// E.g. in 7, k 3, stride 2: out = 4, total = 3*2 + 3 - 7 = 2 -> pads 1 and 1;
//      in 28, k 3, stride 2: out = 14, total = 13*2 + 3 - 28 = 1 -> pads 0 and 1.
std::optional<Window> slide(std::int64_t in, int k, int stride, Padding padding) {
  if (padding == Padding::same) {
    const std::int64_t out = ceil_div(in, stride);
    const std::int64_t total = std::max<std::int64_t>((out - 1) * stride + k - in, 0);
    return Window{out, static_cast<int>(total / 2), static_cast<int>(total - total / 2)};
  }
  if (in < k) return std::nullopt;
  return Window{(in - k) / stride + 1, 0, 0};
}

std::string hw(int h, int w) {
  return std::to_string(h) + "x" + std::to_string(w);
}

// Field ranges that a ModelSpec built in code could break (the JSON reader checks them too).
void check_layer_fields(const LayerSpec& l, std::size_t i, Problems& problems) {
  const std::string at = layer_path(i);
  // Each value in 1..max (spec/limits.h); a pair reports its worst member.
  auto in_range = [&](std::initializer_list<int> values, std::int64_t max, const char* field) {
    for (int v : values) {
      if (v < 1 || v > max) {
        problems.push_back({at + "." + field, "expected an integer in 1.." + std::to_string(max) +
                                                  ", got " + std::to_string(v)});
        return;
      }
    }
  };
  switch (l.type) {
    case LayerType::conv2d:
      in_range({l.filters}, kMaxFilters, "filters");
      in_range({l.kernel_h, l.kernel_w}, kMaxWindow, "kernel");
      in_range({l.stride_h, l.stride_w}, kMaxWindow, "stride");
      break;
    case LayerType::maxpool2d:
      in_range({l.pool_h, l.pool_w}, kMaxWindow, "pool");
      in_range({l.stride_h, l.stride_w}, kMaxWindow, "stride");
      break;
    case LayerType::dense:
      in_range({l.units}, kMaxUnits, "units");
      break;
    case LayerType::dropout:
      if (!(l.rate >= 0.0f && l.rate < 1.0f)) {
        problems.push_back(
            {at + ".rate", "expected a number in [0, 1), got " + std::to_string(l.rate)});
      }
      break;
    case LayerType::batchnorm:
      if (!(l.momentum >= 0.0f && l.momentum <= 1.0f)) {
        problems.push_back(
            {at + ".momentum", "expected a number in [0, 1], got " + std::to_string(l.momentum)});
      }
      if (!(l.epsilon > 0.0f)) {
        problems.push_back(
            {at + ".epsilon", "expected a number > 0, got " + std::to_string(l.epsilon)});
      }
      break;
    case LayerType::residual:
      if (l.filters != 0) {
        in_range({l.filters}, kMaxFilters, "shortcut.filters");
        in_range({l.stride_h, l.stride_w}, kMaxWindow, "shortcut.stride");
      }
      break;
    case LayerType::flatten:
    case LayerType::activation:
    case LayerType::global_avgpool:
      break;
  }
}

// conv2d and maxpool2d: the output [channels, P, Q] and the pads, or a problem.
bool resolve_window(ResolvedLayer& r, std::size_t i, int kh, int kw, std::int64_t channels,
                    Problems& problems) {
  const LayerSpec& l = r.spec;
  const char* what = l.type == LayerType::conv2d ? "kernel" : "pool";
  if (r.input.size() != 3) {
    problems.push_back(
        {layer_path(i), std::string(to_string(l.type)) + " needs a [C, H, W] input, got the flat " +
                            ra::to_string(r.input) + "; it cannot follow flatten or dense layers"});
    return false;
  }
  const auto rows = slide(r.input[1], kh, l.stride_h, l.padding);
  const auto cols = slide(r.input[2], kw, l.stride_w, l.padding);
  if (!rows || !cols) {
    problems.push_back({layer_path(i), std::string(what) + " " + hw(kh, kw) +
                                           " is larger than its " + std::to_string(r.input[1]) +
                                           "x" + std::to_string(r.input[2]) +
                                           " input (padding \"valid\"); use a smaller " + what +
                                           " or padding \"same\""});
    return false;
  }
  r.output = {channels, rows->out, cols->out};
  r.pad_top = rows->pad_begin;
  r.pad_bottom = rows->pad_end;
  r.pad_left = cols->pad_begin;
  r.pad_right = cols->pad_end;
  return true;
}

// batchnorm and global_avgpool: per channel of a [C, H, W] input (BatchNorm2d, a global pool over
// H and W), or a problem naming the layer.
bool resolve_per_channel(ResolvedLayer& r, std::size_t i, Problems& problems) {
  const LayerSpec& l = r.spec;
  if (r.input.size() != 3) {
    problems.push_back({layer_path(i), std::string(to_string(l.type)) + " '" + l.name +
                                           "' works per channel of a [C, H, W] input, got " +
                                           ra::to_string(r.input) + " (rank " +
                                           std::to_string(r.input.size()) +
                                           "); put it before the flatten or dense layers"});
    return false;
  }
  r.output = l.type == LayerType::batchnorm ? r.input : Shape{r.input[0]};
  return true;
}

// Output shape, parameters and FLOPs of one layer (rules in docs/spec.md).
bool resolve_layer(ResolvedLayer& r, std::size_t i, Problems& problems) {
  const LayerSpec& l = r.spec;
  const std::int64_t in_elements = element_count(r.input);
  Count params(0), flops(0);
  switch (l.type) {
    case LayerType::conv2d: {
      if (!resolve_window(r, i, l.kernel_h, l.kernel_w, l.filters, problems)) return false;
      const std::int64_t c = r.input[0], k = l.filters, pq = r.output[1] * r.output[2];
      params = product({k, c, l.kernel_h, l.kernel_w});
      flops = product({2, k, c, l.kernel_h, l.kernel_w, pq});
      if (l.use_bias) {
        params += Count(k);
        flops += product({k, pq});
      }
      if (l.activation != Activation::none) flops += product({k, pq});
      break;
    }
    case LayerType::maxpool2d: {
      if (!resolve_window(r, i, l.pool_h, l.pool_w, r.input[0], problems)) return false;
      flops = product({l.pool_h, l.pool_w, r.input[0], r.output[1], r.output[2]});
      break;
    }
    case LayerType::dense: {
      if (r.input.size() != 1) {
        problems.push_back({layer_path(i), "dense needs a flat [features] input, got " +
                                               ra::to_string(r.input) +
                                               "; add a flatten layer before it"});
        return false;
      }
      r.output = {l.units};
      params = product({l.units, in_elements});
      flops = product({2, in_elements, l.units});
      if (l.use_bias) {
        params += Count(l.units);
        flops += Count(l.units);
      }
      if (l.activation != Activation::none) flops += Count(l.units);
      break;
    }
    case LayerType::flatten:
      r.output = {in_elements};
      break;
    case LayerType::dropout:
      r.output = r.input;
      flops = Count(in_elements);
      break;
    case LayerType::activation:
      r.output = r.input;
      flops = Count(l.activation == Activation::none ? 0 : in_elements);
      break;
    case LayerType::residual:
      if (!resolve_residual(r, layer_path(i), problems)) return false;
      params = Count(r.params);
      flops = Count(r.flops);
      break;
    case LayerType::batchnorm:
    case LayerType::global_avgpool:
      if (!resolve_per_channel(r, i, problems)) return false;
      params = Count(l.type == LayerType::batchnorm ? 2 * r.input[0] : 0);
      // batchnorm: the statistics and the normalisation, 4 per element; the pool: 1 per element.
      flops = Count(l.type == LayerType::batchnorm ? 4 * in_elements : in_elements);
      break;
  }
  if (element_count(r.output) > kMaxSampleElements) {
    problems.push_back({layer_path(i), "output " + ra::to_string(r.output) +
                                           " has more than 2^31 - 1 elements per sample"});
    return false;
  }
  if (params.overflow || flops.overflow) {
    problems.push_back({layer_path(i), "too large: its parameter or FLOP count overflows 64 bits"});
    return false;
  }
  r.params = params.value;
  r.flops = flops.value;
  return true;
}

}  // namespace

void name_layers(std::vector<LayerSpec>& layers, Problems& problems) {
  std::array<int, 9> per_type{};  // layers seen so far of each LayerType
  std::map<std::string, std::size_t> first_use;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    LayerSpec& l = layers[i];
    const int index = per_type.at(static_cast<std::size_t>(l.type))++;
    if (l.name.empty()) {
      l.name = std::string(to_string(l.type)) + "_" + std::to_string(index);
    } else if (!is_valid_name(l.name)) {
      // Layer names become tensor names ("conv1.weight"), so they stay plain identifiers.
      problems.push_back(
          {layer_path(i) + ".name",
           "expected letters, digits and underscores ([A-Za-z0-9_]+), got " + shown_name(l.name)});
      continue;
    }
    const auto [it, inserted] = first_use.emplace(l.name, i);
    if (!inserted) {
      problems.push_back({layer_path(i) + ".name", "duplicate layer name '" + l.name +
                                                       "' (already the name of " +
                                                       layer_path(it->second) + ")"});
    }
  }
}

std::optional<ResolvedModel> resolve_shapes(const ModelSpec& model, Problems& problems) {
  // Each dimension is checked before the product is taken, so the product fits (2^60 at most).
  const bool input_ok = model.input.size() == 3 &&
                        std::all_of(model.input.begin(), model.input.end(),
                                    [](std::int64_t d) { return d > 0 && d <= kMaxDimension; }) &&
                        element_count(model.input) <= kMaxSampleElements;
  if (!input_ok) {
    problems.push_back(
        {"model.input", "expected [C, H, W] of integers in 1.." + std::to_string(kMaxDimension) +
                            " with at most 2^31 - 1 elements, got " + ra::to_string(model.input)});
  }
  if (model.layers.empty()) {
    problems.push_back({"model.layers", "expected at least one layer"});
  } else if (model.layers.size() > static_cast<std::size_t>(kMaxLayers)) {
    problems.push_back({"model.layers", "expected at most " + std::to_string(kMaxLayers) +
                                            " layers, got " + std::to_string(model.layers.size())});
  }
  const std::size_t before = problems.size();
  for (std::size_t i = 0; i < model.layers.size(); ++i) {
    check_layer_fields(model.layers[i], i, problems);
  }
  if (!input_ok || model.layers.empty() ||
      model.layers.size() > static_cast<std::size_t>(kMaxLayers) || problems.size() != before) {
    return std::nullopt;
  }

  ResolvedModel resolved;
  resolved.input = model.input;
  Shape current = model.input;
  Count params(0), flops(0);
  for (std::size_t i = 0; i < model.layers.size(); ++i) {
    ResolvedLayer r;
    r.spec = model.layers[i];
    r.input = current;
    // After the first impossible shape the later shapes are unknown: stop there.
    if (!resolve_layer(r, i, problems)) return std::nullopt;
    params += Count(r.params);
    flops += Count(r.flops);
    current = r.output;
    resolved.layers.push_back(std::move(r));
  }
  if (params.overflow || flops.overflow) {
    problems.push_back({"model.layers", "too large: the total parameter or FLOP count overflows"});
    return std::nullopt;
  }
  resolved.output = current;
  resolved.params = params.value;
  resolved.flops = flops.value;
  return resolved;
}

}  // namespace detail

ResolvedModel resolve_model(const ModelSpec& model) {
  std::vector<Problem> problems;
  ModelSpec named = model;
  detail::name_layers(named.layers, problems);
  auto resolved = detail::resolve_shapes(named, problems);
  if (!problems.empty() || !resolved) throw ValidationError(std::move(problems));
  return std::move(*resolved);
}

}  // namespace ra::spec
