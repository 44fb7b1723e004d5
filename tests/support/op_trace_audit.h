#pragma once
// Specs and options shared by the tests of op records and root causes (tests/audit/root_cause_*,
// tests/backend_cuda/root_cause_gpu_test.cpp): audits that record every op of every step.
#include <nlohmann/json.hpp>

#include "audit/audit.h"
#include "support/temp_dir.h"

namespace ra::test {

// Every reducing op of the policy's list runs here: two convs (the second's backward data is
// computed), an overlapping max-pool (stride < pool: its backward adds into shared inputs), a
// dropout, two dense layers (the second's backward data is computed) and the loss; SGD with
// momentum, whose update changes its state in place.
inline nlohmann::json root_cause_spec_json() {
  return nlohmann::json::parse(R"({
    "name": "root-cause", "seed": 11, "threads": 2,
    "data": {"train": {"format": "random", "samples": 192, "shape": [2, 12, 12], "classes": 5},
             "batch_size": 32},
    "model": {"input": [2, 12, 12], "layers": [
      {"type": "conv2d", "filters": 4, "kernel": 3, "activation": "relu"},
      {"type": "conv2d", "filters": 6, "kernel": 3, "activation": "relu"},
      {"type": "maxpool2d", "pool": 3, "stride": 2},
      {"type": "dropout", "rate": 0.25},
      {"type": "flatten"},
      {"type": "dense", "units": 16, "activation": "relu"},
      {"type": "dense", "units": 5}]},
    "optimizer": {"type": "sgd", "lr": 0.05, "momentum": 0.9},
    "train": {"epochs": 1, "max_steps": 4}})");
}

// The same layers with enough work per reduction chunk (batch 256, wider layers) that, on 4
// threads, the lanes' share of chunks and their completion order vary from run to run: measured,
// every reducing op of it gave 2 or 3 outcomes in 3 runs of 3 steps (about 0.5 s an audit).
inline nlohmann::json race_spec_json() {
  nlohmann::json j = root_cause_spec_json();
  j["threads"] = 4;
  j["data"]["train"] = {
      {"format", "random"}, {"samples", 768}, {"shape", {4, 24, 24}}, {"classes", 10}};
  j["data"]["batch_size"] = 256;
  j["model"]["input"] = {4, 24, 24};
  j["model"]["layers"][0]["filters"] = 16;
  j["model"]["layers"][1]["filters"] = 16;
  j["model"]["layers"][5]["units"] = 256;
  j["model"]["layers"][6]["units"] = 10;
  j["train"]["max_steps"] = 3;
  return j;
}

// `runs` runs into `dir`, recording every op of every step, any outcome allowed.
inline audit::AuditOptions traced_audit(const TempDir& dir, int runs) {
  audit::AuditOptions o;
  o.runs = runs;
  o.out_dir = dir.path;
  o.trace_ops = trace::OpWindow{};
  o.expect_identical = false;
  return o;
}

}  // namespace ra::test
