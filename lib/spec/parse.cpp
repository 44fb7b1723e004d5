#include "spec/parse.h"

#include <filesystem>
#include <limits>
#include <optional>

#include "spec/experiment_name.h"
#include "spec/json_file.h"
#include "spec/json_reader.h"
#include "spec/limits.h"
#include "spec/memory_plan.h"
#include "spec/parse_data.h"
#include "spec/parse_model.h"
#include "spec/resolve_steps.h"

namespace ra::spec {
namespace {

using detail::IntRange;
using detail::Json;
using detail::kNonNegative;
using detail::kPositive;
using detail::kUnitInterval;
using detail::ObjectReader;
using detail::parse_data;
using detail::ParsedData;
using detail::Problems;

// Keras 2.x defaults per optimizer type.
OptimizerSpec optimizer_defaults(OptimizerType type) {
  OptimizerSpec o;
  o.type = type;
  switch (type) {
    case OptimizerType::sgd:
      o.lr = 0.01;
      break;
    case OptimizerType::adam:
      o.lr = 0.001;
      o.beta1 = 0.9;
      o.beta2 = 0.999;
      o.eps = 1e-7;
      break;
    case OptimizerType::rmsprop:
      o.lr = 0.001;
      o.rho = 0.9;
      o.eps = 1e-7;
      break;
    case OptimizerType::adadelta:
      o.lr = 1.0;
      o.rho = 0.95;
      o.eps = 1e-7;
      break;
  }
  return o;
}

void parse_optimizer(const Json& value, OptimizerSpec& o, Problems& problems) {
  ObjectReader r(value, "optimizer", problems);
  if (!r.is_object()) return;
  OptimizerType type = OptimizerType::sgd;
  if (!r.require("type", "one of \"sgd\", \"adam\", \"rmsprop\", \"adadelta\"") ||
      !r.choice("type", type,
                {OptimizerType::sgd, OptimizerType::adam, OptimizerType::rmsprop,
                 OptimizerType::adadelta})) {
    return;  // the allowed keys depend on the type
  }
  o = optimizer_defaults(type);
  std::vector<std::string> allowed{"type", "lr", "decay", "weight_decay"};
  switch (type) {
    case OptimizerType::sgd:
      allowed.insert(allowed.end(), {"momentum", "dampening", "nesterov"});
      break;
    case OptimizerType::adam:
      allowed.insert(allowed.end(), {"beta1", "beta2", "eps"});
      break;
    case OptimizerType::rmsprop:
    case OptimizerType::adadelta:
      allowed.insert(allowed.end(), {"rho", "eps"});
      break;
  }
  r.report_unknown_keys(allowed, std::string(to_string(type)) + " optimizers");
  r.real("lr", o.lr, kPositive);
  r.real("decay", o.decay, kNonNegative);
  r.real("weight_decay", o.weight_decay, kNonNegative);
  switch (type) {
    case OptimizerType::sgd: {
      const bool momentum_ok = !r.find("momentum") || r.real("momentum", o.momentum, kUnitInterval);
      const bool dampening_ok =
          !r.find("dampening") || r.real("dampening", o.dampening, kUnitInterval);
      // PyTorch refuses Nesterov momentum without momentum or with dampening.
      if (r.boolean("nesterov", o.nesterov) && o.nesterov && momentum_ok && dampening_ok &&
          (o.momentum <= 0.0 || o.dampening != 0.0)) {
        problems.push_back(
            {r.path_of("nesterov"), "nesterov needs momentum > 0 and dampening 0, got momentum " +
                                        detail::describe(Json(o.momentum)) + " and dampening " +
                                        detail::describe(Json(o.dampening))});
      }
      break;
    }
    case OptimizerType::adam:
      r.real("beta1", o.beta1, kUnitInterval);
      r.real("beta2", o.beta2, kUnitInterval);
      r.real("eps", o.eps, kPositive);
      break;
    case OptimizerType::rmsprop:
    case OptimizerType::adadelta:
      r.real("rho", o.rho, kUnitInterval);
      r.real("eps", o.eps, kPositive);
      break;
  }
}

void parse_train(const Json& value, TrainSpec& t, Problems& problems) {
  ObjectReader r(value, "train", problems);
  r.report_unknown_keys({"epochs", "max_steps"}, "train sections");
  r.integer("epochs", t.epochs, IntRange{1, kMaxEpochs});
  r.integer("max_steps", t.max_steps, IntRange{0, kMaxSteps});
}

const std::vector<KernelMode> kModes{KernelMode::deterministic, KernelMode::nondeterministic,
                                     KernelMode::autotune, KernelMode::batch_invariant};

void parse_determinism(const Json& value, DeterminismSpec& d, Problems& problems) {
  ObjectReader r(value, "determinism", problems);
  r.report_unknown_keys({"mode", "ops"}, "determinism sections");
  r.choice("mode", d.mode, kModes);
  const Json* ops = r.find("ops");
  if (ops == nullptr) return;
  ObjectReader ops_reader(*ops, r.path_of("ops"), problems);
  if (!ops_reader.is_object()) return;
  std::vector<std::string> op_names;
  for (int i = 0; i < kReducingOpCount; ++i) {
    op_names.emplace_back(to_string(static_cast<ReducingOp>(i)));
  }
  ops_reader.report_unknown_keys(op_names, "determinism.ops");
  for (const std::string& name : op_names) {
    KernelMode mode{};
    if (ops_reader.choice(name, mode, kModes)) d.ops[*reducing_op_from_string(name)] = mode;
  }
}

// Checks between sections: synthetic sets against the model's input and output.
void check_data_against_model(const ExperimentSpec& s, const ParsedData& data, bool input_ok,
                              const std::optional<ResolvedModel>& resolved, Problems& problems) {
  struct Role {
    const DatasetSpec* set;
    bool ok;
    const char* path;
  };
  const Role roles[] = {{&s.data.train, data.train_ok, "data.train"},
                        {s.data.eval ? &*s.data.eval : nullptr, data.eval_ok, "data.eval"}};
  for (const Role& role : roles) {
    // idx and npy files are not opened here: their shape is checked when the data is loaded.
    if (role.set == nullptr || !role.ok || !input_ok) continue;
    const DataFormat format = role.set->format;
    if (format == DataFormat::idx || format == DataFormat::npy) continue;
    if (role.set->shape != s.model.input) {
      const std::string input = ra::to_string(s.model.input);
      if (format == DataFormat::cifar10) {
        problems.push_back({role.path, "CIFAR-10 samples are " + ra::to_string(role.set->shape) +
                                           " and do not fit model.input " + input});
      } else {
        problems.push_back({std::string(role.path) + ".shape",
                            "samples of shape " + ra::to_string(role.set->shape) +
                                " do not fit model.input " + input});
      }
    }
  }
  if (!resolved) return;
  const std::string last = "model.layers[" + std::to_string(resolved->layers.size() - 1) + "]";
  if (resolved->output.size() != 1) {
    problems.push_back({last, "the model must end with a flat [classes] output, got " +
                                  ra::to_string(resolved->output) +
                                  "; add flatten and dense layers"});
    return;
  }
  const std::int64_t outputs = resolved->output[0];
  // The classes of idx and npy sets are known only from their label files (at least 10; more
  // when a label >= 10 occurs), so only synthetic and cifar10 sets are checked here.
  const auto classes_known = [](const DatasetSpec& set) {
    return set.format != DataFormat::idx && set.format != DataFormat::npy;
  };
  if (data.train_ok && classes_known(s.data.train) && outputs != s.data.train.classes) {
    problems.push_back({last, "the model's output is " + ra::to_string(resolved->output) +
                                  " but data.train has " + std::to_string(s.data.train.classes) +
                                  " classes; the last layer must produce [" +
                                  std::to_string(s.data.train.classes) + "]"});
  }
  if (s.data.eval && data.eval_ok && classes_known(*s.data.eval) &&
      outputs != s.data.eval->classes) {
    if (s.data.eval->format == DataFormat::cifar10) {
      problems.push_back({"data.eval", "CIFAR-10 has 10 classes but the model's output is " +
                                           ra::to_string(resolved->output)});
    } else {
      problems.push_back({"data.eval.classes", "expected the model's " + std::to_string(outputs) +
                                                   " classes, got " +
                                                   std::to_string(s.data.eval->classes)});
    }
  }
}

// The memory a run would hold (spec/memory_plan.h) against kMaxPlannedBytes, reported at the
// path of what is largest, with what to change. idx sets count as empty here (their size is known
// once the files are read; train::load_data checks again then), so the plan is a lower bound.
void check_planned_memory(const ExperimentSpec& s, const ResolvedModel& model, Problems& problems) {
  const std::int64_t train = samples_used(s.data.train).value_or(0);
  const std::int64_t eval = s.data.eval ? samples_used(*s.data.eval).value_or(0) : 0;
  const MemoryPlan plan = plan_memory(s, model, train, eval);
  if (plan.total() <= kMaxPlannedBytes) return;
  const std::uint64_t model_bytes =
      saturating_add(saturating_add(plan.parameters, plan.gradients), plan.optimizer_state);
  std::string path, hint;
  if (model_bytes >= plan.activations && model_bytes >= plan.data &&
      model_bytes >= plan.step_records) {
    path = "model.layers[" + std::to_string(plan.largest_layer) + "]";
    hint = "it holds " +
           format_bytes(saturating_mul(
               static_cast<std::uint64_t>(model.layers[plan.largest_layer].params), 4)) +
           " of parameters; use fewer filters or units, or a smaller input";
  } else if (plan.activations >= plan.data && plan.activations >= plan.step_records) {
    path = "data.batch_size";
    hint = "use a smaller batch_size";
  } else if (plan.data >= plan.step_records) {
    const DatasetSpec& set = s.data.train;
    path = set.limit > 0 ? "data.train.limit" : "data.train.samples";
    hint = "use fewer samples, or a limit";
  } else {
    path = s.train.max_steps > 0 ? "train.max_steps" : "train.epochs";
    hint = "train fewer steps";
  }
  problems.push_back({path, "the run would hold " + format_bytes(plan.total()) +
                                " of memory, more than the " + format_bytes(kMaxPlannedBytes) +
                                " a spec may plan (" + describe(plan) + "); " + hint});
}

}  // namespace

ExperimentSpec parse_spec(const nlohmann::json& doc, const std::string& base_dir) {
  Problems problems;
  ExperimentSpec s;
  s.base_dir = base_dir;
  ObjectReader root(doc, "", problems);
  root.report_unknown_keys({"name", "seed", "device", "threads", "data", "model", "loss",
                            "optimizer", "train", "determinism"},
                           "specs");
  if (root.string("name", s.name) && !s.name.empty()) {
    // "" is the canonical form of an unnamed spec (to_json); load_spec demands a name.
    if (auto why = name_problem(s.name)) problems.push_back({"name", "expected " + *why});
  }
  root.uint64("seed", s.seed);
  root.choice("device", s.device, {Device::auto_select, Device::cpu, Device::cuda});
  root.integer("threads", s.threads, IntRange{0, kMaxThreads});

  ParsedData data;
  if (const Json* d = root.require("data", "an object with at least \"train\"")) {
    data = parse_data(*d, base_dir, s.data, problems);
  }
  bool input_ok = false;
  std::optional<ResolvedModel> resolved;
  if (const Json* m = root.require("model", "an object with \"input\" and \"layers\"")) {
    detail::ParsedModel parsed = detail::parse_model(*m, problems);
    s.model = std::move(parsed.model);
    input_ok = s.model.input.size() == 3;
    if (parsed.complete) resolved = detail::resolve_shapes(s.model, problems);
  }
  root.choice("loss", s.loss, {Loss::softmax_cross_entropy, Loss::mean_squared_error});
  if (const Json* o = root.find("optimizer")) parse_optimizer(*o, s.optimizer, problems);
  if (const Json* t = root.find("train")) parse_train(*t, s.train, problems);
  if (const Json* d = root.find("determinism")) parse_determinism(*d, s.determinism, problems);

  check_data_against_model(s, data, input_ok, resolved, problems);
  if (resolved && data.train_ok && (!s.data.eval || data.eval_ok)) {
    check_planned_memory(s, *resolved, problems);
  }
  if (!problems.empty()) throw ValidationError(std::move(problems));
  return s;
}

ExperimentSpec load_spec(const std::string& path) {
  namespace fs = std::filesystem;
  const Json doc = detail::read_json_file(path);
  const fs::path folder = fs::path(path).parent_path();
  const std::string base_dir = folder.empty() ? std::string(".") : folder.string();
  // A spec from a file becomes a folder and a report title: it needs a usable name, its own or
  // its file's stem. Problems of the name join the document's.
  Problems problems;
  std::optional<ExperimentSpec> s;
  try {
    s = parse_spec(doc, base_dir);
  } catch (const ValidationError& e) {
    problems = e.problems();
  }
  const bool named = doc.is_object() && doc.contains("name");
  const std::string name =
      named ? (s ? s->name : std::string("?")) : fs::path(path).stem().string();
  if (named && s && name.empty()) {
    problems.push_back({"name", "expected " + *name_problem("")});
  } else if (!named) {
    if (auto why = name_problem(name)) {
      problems.insert(problems.begin(),
                      {"name",
                       "the spec has no \"name\", and its file name does not give one: "
                       "expected " +
                           *why + "; add a \"name\""});
    }
  }
  if (!problems.empty()) throw ValidationError(std::move(problems));
  s->name = name;
  return std::move(*s);
}

ExperimentSpec parse_spec_text(std::string_view text, const std::string& source,
                               const std::string& base_dir) {
  return parse_spec(detail::parse_json_text(text, source), base_dir);
}

}  // namespace ra::spec
