// Residual blocks: the body is a model of its own on the block's input (named, checked and
// resolved by the same steps, so blocks may nest), the shortcut the identity or a 1x1 projection
// conv2d ("same" padding, as Keras' ResNet builds it), and their output shapes must agree.
#include <string>

#include "spec/resolve_steps.h"

namespace ra::spec::detail {
namespace {

// The body's problems come with paths "model.layers[j]...": the block's path takes their place.
void add_body_problems(const std::vector<Problem>& body, const std::string& path,
                       std::vector<Problem>& problems) {
  const std::string model_layers = "model.layers";
  for (Problem p : body) {
    if (p.path.rfind(model_layers, 0) == 0) {
      p.path = path + ".layers" + p.path.substr(model_layers.size());
    } else if (p.path == "model.input") {
      p.path = path;
    }
    problems.push_back(std::move(p));
  }
}

// "<block>." before every name of a resolved layer and of the layers it holds.
void prefix_names(ResolvedLayer& r, const std::string& prefix) {
  r.spec.name = prefix + r.spec.name;
  for (ResolvedLayer& inner : r.body) prefix_names(inner, prefix);
  for (ResolvedLayer& inner : r.shortcut) prefix_names(inner, prefix);
}

LayerSpec projection_of(const LayerSpec& block) {
  LayerSpec conv;
  conv.type = LayerType::conv2d;
  conv.name = "shortcut";
  conv.filters = block.filters;
  conv.kernel_h = conv.kernel_w = 1;
  conv.stride_h = block.stride_h;
  conv.stride_w = block.stride_w;
  conv.padding = Padding::same;
  conv.use_bias = block.use_bias;
  conv.kernel_initializer = block.kernel_initializer;
  conv.bias_initializer = block.bias_initializer;
  return conv;
}

}  // namespace

bool resolve_residual(ResolvedLayer& r, const std::string& path, std::vector<Problem>& problems) {
  const LayerSpec& l = r.spec;
  const std::string block = "residual '" + l.name + "'";
  if (r.input.size() != 3) {
    problems.push_back({path, block + " needs a [C, H, W] input, got " + ra::to_string(r.input)});
    return false;
  }
  std::vector<Problem> inner;
  std::vector<LayerSpec> body = l.body;
  name_layers(body, inner);
  const std::optional<ResolvedModel> resolved_body =
      inner.empty() ? resolve_shapes(ModelSpec{r.input, body}, inner) : std::nullopt;
  std::optional<ResolvedModel> projection;
  if (resolved_body && l.filters > 0) {
    projection = resolve_shapes(ModelSpec{r.input, {projection_of(l)}}, inner);
  }
  add_body_problems(inner, path, problems);
  if (!resolved_body || (l.filters > 0 && !projection)) return false;
  const Shape shortcut = projection ? projection->output : r.input;
  if (resolved_body->output != shortcut) {
    std::string hint;
    if (!projection && resolved_body->output.size() == 3) {
      const std::int64_t stride = (r.input[1] + resolved_body->output[1] - 1) /
                                  std::max<std::int64_t>(1, resolved_body->output[1]);
      hint = "; give it a projection: \"shortcut\": {\"filters\": " +
             std::to_string(resolved_body->output[0]) + ", \"stride\": " + std::to_string(stride) +
             "}";
    }
    problems.push_back(
        {path, block + ": its body's output " + ra::to_string(resolved_body->output) +
                   " differs from its shortcut's " + ra::to_string(shortcut) + hint});
    return false;
  }
  const std::int64_t elements = element_count(resolved_body->output);
  r.output = resolved_body->output;
  r.body = resolved_body->layers;
  r.params = resolved_body->params;
  r.flops = resolved_body->flops + elements + (l.activation == Activation::none ? 0 : elements);
  if (projection) {
    r.shortcut = projection->layers;
    r.params += projection->params;
    r.flops += projection->flops;
  }
  r.spec.body = body;  // named
  for (ResolvedLayer& inner_layer : r.body) prefix_names(inner_layer, l.name + ".");
  for (ResolvedLayer& inner_layer : r.shortcut) prefix_names(inner_layer, l.name + ".");
  return true;
}

}  // namespace ra::spec::detail
