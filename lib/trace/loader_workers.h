#pragma once
// The end record's `loader_workers` (docs/trace-format.md): read with every field checked, and
// written back as read.
#include <vector>

#include <nlohmann/json.hpp>

#include "trace/trace.h"
#include "trace/trace_fields.h"

namespace ra::trace {

// InputError (naming the field) unless `field` is an array of worker records: `loader_pass` a
// non-negative integer, `worker` in [0, workers), `workers` in [1, 65536], `streams` an object
// of digests; no (pass, worker) twice.
std::vector<LoaderWorker> read_loader_workers(const Field& field);

nlohmann::json loader_workers_json(const std::vector<LoaderWorker>& workers);

}  // namespace ra::trace
