#pragma once
// The "resume" record of a trace (trace/resume_point.h, docs/trace-format.md): written before the
// step it describes, read and checked alone here; that its step is the next step is the reader's.
#include <string>

#include "trace/resume_point.h"
#include "trace/trace_fields.h"

namespace ra::trace {

std::string resume_line(const ResumePoint& point);

namespace records {
ResumePoint read_resume(const Field& record);
}

}  // namespace ra::trace
