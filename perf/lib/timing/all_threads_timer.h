// Runs one piece of work on every thread of the active parallel backend at
// the same time and times it: what "measured at the thread count of the
// run" means for the roofline loops.
#ifndef W4JIT_PERF_LIB_TIMING_ALL_THREADS_TIMER_H_
#define W4JIT_PERF_LIB_TIMING_ALL_THREADS_TIMER_H_

#include <functional>

namespace w4jit::perf {

// Calls body(t) for t in [0, threads) through internal::ParallelRun. The
// threads first meet at a barrier (bounded by a short timeout so that a
// backend with fewer real threads cannot deadlock), then run; returns the
// seconds from the first start to the last end.
double TimeOnAllThreads(int threads, const std::function<void(int)>& body);

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_TIMING_ALL_THREADS_TIMER_H_
