#pragma once
// Running the planned runs of an audit K at a time (--jobs K).
//
// Not core/thread_pool.h: that pool is for data-parallel loops of short tasks; it runs every
// remaining task after one fails and refuses to exist at all when the system will not start one of
// its threads. A run here takes seconds to hours, so the first failure must stop handing out new
// runs, and a job thread the system refuses (core/thread_start.h) must stop the audit like a failed
// run while the jobs already started finish their run (whose trace is whole and kept).
#include <cstddef>
#include <functional>

namespace ra::audit {

// Calls run(i) once for each i in [0, count), in order on the calling thread when jobs <= 1 (or
// count <= 1), else on min(jobs, count) job threads that take the next index as they come free.
// The first exception (a failed run, or a job thread refused) stops the handing out of indices; it
// is rethrown once every started job has finished its current run.
void run_jobs(std::size_t count, int jobs, const std::function<void(std::size_t)>& run);

}  // namespace ra::audit
