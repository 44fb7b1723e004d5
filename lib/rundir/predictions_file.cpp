// Predicted classes beside a trace (rundir/predictions_file.h).
#include "rundir/predictions_file.h"

#include "core/atomic_file.h"
#include "core/digest.h"
#include "core/directory.h"
#include "core/error.h"
#include "formats/npy.h"
#include "rundir/folder_traces.h"

namespace ra::rundir {

trace::PredictionsRecord write_predictions(const std::filesystem::path& trace_file,
                                           std::span<const std::int32_t> classes) {
  const std::filesystem::path folder = snapshot_dir_of(trace_file);
  const std::vector<std::int64_t> values(classes.begin(), classes.end());
  const auto samples = static_cast<std::int64_t>(values.size());
  // Into the run's folder, created in the audit folder and never through a link, as snapshots.
  const Directory run_folder =
      *Directory::open(folder.parent_path()).subfolder(folder.filename().string(), true);
  write_file_atomic(run_folder, kPredictionsFileName,
                    formats::encode_npy_int64(values, Shape{samples}));
  trace::PredictionsRecord r;
  r.file = (folder.filename() / kPredictionsFileName).generic_string();
  r.samples = samples;
  r.digest = digest(std::span<const std::int64_t>(values));
  return r;
}

std::vector<std::int64_t> read_predictions_file(const std::filesystem::path& trace_file,
                                                const trace::PredictionsRecord& record) {
  const std::filesystem::path path = trace_file.parent_path() / record.file;
  Shape shape;
  std::vector<std::int64_t> values = formats::read_npy_int64(path, &shape);
  if (shape.size() != 1 || static_cast<std::int64_t>(values.size()) != record.samples) {
    throw InputError(path.string() + ": holds " + ra::to_string(shape) + " values, its trace " +
                     trace_file.string() + " recorded " + std::to_string(record.samples) +
                     " predictions");
  }
  const Digest128 actual = digest(std::span<const std::int64_t>(values));
  if (actual != record.digest) {
    throw InputError(path.string() + ": its digest " + actual.hex() + " is not the " +
                     record.digest.hex() + " its trace " + trace_file.string() +
                     " recorded: the file was changed or belongs to another run");
  }
  return values;
}

}  // namespace ra::rundir
