#pragma once
// A trace written while its run goes (docs/trace-format.md, "Streamed traces"): each record is
// appended to a temporary file beside the trace's name ("<name>.tmp-<pid>-<n>", as every atomic
// write of this tool names its temporaries) as the run makes it, and the file is renamed over the
// name only when the run ends well. Memory is one record and a write buffer, whatever the run's
// length. A run that stops early (an exception, a crash, kill -9) leaves the temporary without its
// end record: readable up to its last written step (read_partial_trace, trace/trace_reader.h), an
// unfinished trace that an audit folder names and `--resume` trains again.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/atomic_file.h"
#include "trace/trace.h"

namespace ra::trace {

class TraceFileWriter {
 public:
  explicit TraceFileWriter(std::filesystem::path path);
  TraceFileWriter(const TraceFileWriter&) = delete;
  TraceFileWriter& operator=(const TraceFileWriter&) = delete;
  // Unfinished: keeps the partial file for diagnosis (AtomicFileWriter::keep_partial).
  ~TraceFileWriter();

  // Creates the temporary file with the header and init records; once, before any step. The
  // header may still change until finish (an autotuned ledger is complete only at the run's end):
  // finish then writes the file anew with the header as it stands.
  void start(const TraceHeader& header, const std::vector<Digest128>& initial_weights,
             const std::vector<Digest128>& initial_buffers);
  bool started() const noexcept { return file_.has_value(); }
  void step(const StepRecord& record);
  // A resume record (trace/resume_point.h), before the step it describes.
  void resume_point(const ResumePoint& point);
  // The epoch's record after its last step; flushed, so that an interrupted trace is readable up
  // to its last whole epoch at least (and up to the write buffer's last 1 MiB in any case).
  void epoch(const EpochRecord& record);
  // The end record, then the file under its name (fsync, rename). When `header` serialises other
  // than the header written at start, the file is written anew (one sequential copy of its
  // records). Throws as AtomicFileWriter does; the writer is spent afterwards.
  void finish(const TraceHeader& header, const FinalRecord& end);

  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  void rewrite_with(const std::string& header_line);

  std::filesystem::path path_;
  std::optional<AtomicFileWriter> file_;
  std::string header_line_;  // as written at start
  TraceHeader format_;       // the version, which decides each record's fields (no spec kept)
  bool finished_ = false;
};

}  // namespace ra::trace
