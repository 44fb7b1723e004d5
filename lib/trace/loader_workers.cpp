#include "trace/loader_workers.h"

#include <set>
#include <string>
#include <utility>

namespace ra::trace {

namespace {

// More workers than any loader starts: a bound, so a damaged count is bad input.
constexpr std::int64_t kMaxLoaderWorkers = 65536;

LoaderWorker read_worker(const Field& r) {
  LoaderWorker w;
  w.loader_pass = r["loader_pass"].uint64();
  w.workers = static_cast<int>(r["workers"].integer(1, kMaxLoaderWorkers));
  w.worker = static_cast<int>(r["worker"].integer(0, w.workers - 1));
  const Field streams = r["streams"];
  streams.expect_object();
  for (const auto& [name, value] : streams.members()) w.streams.emplace_back(name, value.digest());
  return w;
}

}  // namespace

std::vector<LoaderWorker> read_loader_workers(const Field& field) {
  std::vector<LoaderWorker> workers;
  std::set<std::pair<std::uint64_t, int>> seen;
  for (const Field& element : field.elements()) {
    workers.push_back(read_worker(element));
    const LoaderWorker& w = workers.back();
    if (!seen.emplace(w.loader_pass, w.worker).second) {
      element.fail("worker " + std::to_string(w.worker) + " of loader pass " +
                   std::to_string(w.loader_pass) + " is recorded twice");
    }
  }
  return workers;
}

nlohmann::json loader_workers_json(const std::vector<LoaderWorker>& workers) {
  nlohmann::json out = nlohmann::json::array();
  for (const LoaderWorker& w : workers) {
    nlohmann::json streams = nlohmann::json::object();
    for (const auto& [name, digest] : w.streams) streams[name] = digest.hex();
    out.push_back({{"loader_pass", w.loader_pass},
                   {"worker", w.worker},
                   {"workers", w.workers},
                   {"streams", std::move(streams)}});
  }
  return out;
}

}  // namespace ra::trace
