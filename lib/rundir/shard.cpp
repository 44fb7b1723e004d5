#include "rundir/shard.h"

#include <unistd.h>

#include <charconv>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "core/error.h"
#include "core/file_lock.h"

namespace ra::rundir {
namespace {

// A whole non-negative decimal integer, or none.
std::optional<long long> whole_number(std::string_view text) {
  long long value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

// Slurm's array task ids and a Kubernetes Job's completion indices are below 4000001 (Slurm's
// largest MaxArraySize; an Indexed Job has far fewer): larger values are no array of this world,
// and bounding them keeps every sum and difference below far from overflow.
constexpr long long kMaxArrayIndex = 4000000;

long long env_number(const EnvironmentLookup& env, const std::string& name) {
  const std::optional<std::string> value = env(name);
  const auto number = value ? whole_number(*value) : std::nullopt;
  if (!number) {
    throw InputError("--shard auto: " + name + " is " +
                     (value ? "'" + *value + "', not a whole number" : std::string("not set")));
  }
  if (*number > kMaxArrayIndex) {
    throw InputError("--shard auto: " + name + " is " + *value + ", above " +
                     std::to_string(kMaxArrayIndex) +
                     " (the largest task id or index a Slurm array or Kubernetes Job has)");
  }
  return *number;
}

Shard checked(long long index, long long count, const std::string& where) {
  if (count < 1 || count > kMaxShards) {
    throw InputError(where + ": " + std::to_string(count) + " shards; 1 to " +
                     std::to_string(kMaxShards) + " allowed");
  }
  if (index >= count) {
    throw InputError(where + ": shard index " + std::to_string(index) + " is not below the count " +
                     std::to_string(count) + " (indices are 0-based)");
  }
  return {static_cast<int>(index), static_cast<int>(count)};
}

// Slurm numbers array tasks by their task id; the shard is the id's place in the range.
Shard slurm_shard(const EnvironmentLookup& env) {
  const long long id = env_number(env, "SLURM_ARRAY_TASK_ID");
  const long long min = env_number(env, "SLURM_ARRAY_TASK_MIN");
  const long long max = env_number(env, "SLURM_ARRAY_TASK_MAX");
  const long long step =
      env("SLURM_ARRAY_TASK_STEP") ? env_number(env, "SLURM_ARRAY_TASK_STEP") : 1;
  if (step < 1 || max < min || id < min || id > max) {
    throw InputError("--shard auto: the Slurm array (task " + std::to_string(id) + " of " +
                     std::to_string(min) + "-" + std::to_string(max) + ":" + std::to_string(step) +
                     ") is not a range holding the task");
  }
  const long long in_range = (max - min) / step + 1;
  const long long count =
      env("SLURM_ARRAY_TASK_COUNT") ? env_number(env, "SLURM_ARRAY_TASK_COUNT") : in_range;
  if ((id - min) % step != 0 || count != in_range) {
    throw InputError("--shard auto: the Slurm array is not an evenly spaced range (" +
                     std::to_string(count) + " tasks between " + std::to_string(min) + " and " +
                     std::to_string(max) +
                     "): submit --array=0-<N-1>, or give --shard K/N yourself");
  }
  return checked((id - min) / step, count, "--shard auto (Slurm job array)");
}

}  // namespace

EnvironmentLookup process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

Shard parse_shard(const std::string& text, const EnvironmentLookup& env) {
  const std::size_t slash = text.find('/');
  const std::string first = text.substr(0, slash);
  std::optional<long long> count;
  if (slash != std::string::npos) {
    count = whole_number(std::string_view(text).substr(slash + 1));
    if (!count) throw InputError("--shard '" + text + "': expected K/N, auto or auto/N");
  }
  if (first != "auto") {
    const auto index = whole_number(first);
    if (!index || !count) throw InputError("--shard '" + text + "': expected K/N, auto or auto/N");
    return checked(*index, *count, "--shard " + text);
  }
  const bool slurm = env("SLURM_ARRAY_TASK_ID").has_value();
  const bool kubernetes = env("JOB_COMPLETION_INDEX").has_value();
  if (slurm && kubernetes) {
    throw InputError(
        "--shard auto: both a Slurm job array (SLURM_ARRAY_TASK_ID) and a Kubernetes Indexed Job "
        "(JOB_COMPLETION_INDEX) are in the environment; give --shard K/N");
  }
  if (slurm) {
    const Shard shard = slurm_shard(env);
    if (count && *count != shard.count) {
      throw InputError("--shard " + text + ": the Slurm job array has " +
                       std::to_string(shard.count) + " tasks");
    }
    return shard;
  }
  if (kubernetes) {
    if (!count) {
      throw InputError(
          "--shard auto: a Kubernetes Indexed Job (JOB_COMPLETION_INDEX) does not say how many "
          "indices it has; give --shard auto/N with N the Job's completions");
    }
    return checked(env_number(env, "JOB_COMPLETION_INDEX"), *count,
                   "--shard " + text + " (Kubernetes Indexed Job)");
  }
  throw InputError(
      "--shard " + text +
      ": found neither a Slurm job array (SLURM_ARRAY_TASK_ID) nor a Kubernetes Indexed Job "
      "(JOB_COMPLETION_INDEX) in the environment; give --shard K/N");
}

std::string shard_text(const Shard& shard) {
  return std::to_string(shard.index) + "/" + std::to_string(shard.count);
}

std::vector<int> runs_of_shard(const Shard& shard, int planned_runs) {
  std::vector<int> runs;
  for (int run = shard.index; run < planned_runs; run += shard.count) runs.push_back(run);
  return runs;
}

std::string shard_lock_name(int index) {
  char name[48];
  std::snprintf(name, sizeof name, "audit.shard-%03d.lock", index);
  return name;
}

std::optional<int> shard_of_lock_name(const std::string& name) {
  const std::string prefix = "audit.shard-", suffix = ".lock";
  if (!name.starts_with(prefix) || !name.ends_with(suffix)) return std::nullopt;
  const auto index = whole_number(
      std::string_view(name).substr(prefix.size(), name.size() - prefix.size() - suffix.size()));
  if (!index || *index > INT_MAX || shard_lock_name(static_cast<int>(*index)) != name)
    return std::nullopt;
  return static_cast<int>(*index);
}

std::optional<std::string> shard_holder(const std::filesystem::path& dir, int index) {
  std::optional<std::string> note = FileLock::holder(dir / shard_lock_name(index));
  if (note && note->empty()) note = "a process that did not say which";
  return note;
}

std::vector<compare::ShardState> shard_states(
    const std::filesystem::path& dir, int shard_count,
    const std::vector<std::optional<trace::Trace>>& traces) {
  std::vector<compare::ShardState> states;
  const int planned = static_cast<int>(traces.size());
  for (int index = 0; index < shard_count; ++index) {
    compare::ShardState s;
    s.index = index;
    s.runs = runs_of_shard({index, shard_count}, planned);
    std::set<std::string> hosts;
    for (int run : s.runs) {
      const std::optional<trace::Trace>& t = traces[static_cast<std::size_t>(run)];
      if (!t) {
        s.missing.push_back(run);
      } else if (t->header.environment.is_object()) {
        const auto host = t->header.environment.find("hostname");
        hosts.insert(host != t->header.environment.end() && host->is_string()
                         ? host->get<std::string>()
                         : std::string("unknown"));
      }
    }
    s.hosts.assign(hosts.begin(), hosts.end());
    s.running = shard_holder(dir, index).value_or("");
    states.push_back(std::move(s));
  }
  return states;
}

std::string this_process_note() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return "pid " + std::to_string(static_cast<long>(::getpid())) + " on " +
         (host[0] ? std::string(host) : std::string("an unnamed host"));
}

void check_shard_request(const Shard& shard, bool overwrite, bool report_files,
                         std::size_t planned_runs, const std::filesystem::path& out_dir) {
  if (overwrite) {
    throw InputError(
        "--overwrite with --shard: a shard must not remove the runs of the others; clear the "
        "folder once before starting the shards, or give another --out");
  }
  if (report_files) {
    throw InputError(
        "--json, --junit and --html with --shard: a shard makes no report; run "
        "`repro-audit compare " +
        out_dir.string() + "` with them once every shard has finished");
  }
  if (shard.count > static_cast<int>(planned_runs)) {
    throw InputError("--shard " + shard_text(shard) + ": the audit plans " +
                     std::to_string(planned_runs) + " run(s), so at most " +
                     std::to_string(planned_runs) + " shards have a run to train");
  }
}

}  // namespace ra::rundir
