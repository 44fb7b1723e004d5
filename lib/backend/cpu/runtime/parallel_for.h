#pragma once
// ThreadPool::parallel_for behind a reference: the pool takes a std::function, which would copy
// (and heap-allocate) a lambda capturing more than two pointers on every call. A
// std::reference_wrapper always fits std::function's small buffer, so op calls allocate nothing.
#include <cstdint>
#include <functional>

#include "core/thread_pool.h"

namespace ra::backend::cpu {

// body(task, worker) for task in [0, tasks); see ThreadPool::parallel_for.
template <class Body>
void parallel_for(ThreadPool& pool, std::int64_t tasks, const Body& body) {
  pool.parallel_for(tasks, std::cref(body));
}

// body(task, next, worker); see ThreadPool::parallel_for_ahead.
template <class Body>
void parallel_for_ahead(ThreadPool& pool, std::int64_t tasks, const Body& body) {
  pool.parallel_for_ahead(tasks, std::cref(body));
}

}  // namespace ra::backend::cpu
