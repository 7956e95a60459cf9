// The CPUs this process may run its threads on, as opposed to the mask of
// whichever thread asks: a runtime loaded before w4jit may have pinned the
// calling thread to one CPU (libgomp does, with OMP_PROC_BIND or
// OMP_PLACES set, when it loads), and threads started from it inherit that
// mask. The pool's workers and the default thread count use this set.
#ifndef W4JIT_RUNTIME_THREADS_PROCESS_CPUS_H_
#define W4JIT_RUNTIME_THREADS_PROCESS_CPUS_H_

#include <vector>

namespace w4jit::internal {

// Increasing CPU numbers, never empty. Computed once, at the first call
// (README, "Threads"): the union of
//  - the affinity of the thread that loaded w4jit, read in a load-time
//    constructor (the process's mask unless a runtime loaded before w4jit
//    pinned that thread: libgomp, a dependency, initialises first),
//  - the affinity of every thread of the process at the first call
//    (/proc/self/task/*/status): a host runtime whose threads already run
//    pinned one per CPU covers the CPUs it was given,
//  - the CPUs of OpenMP's places when w4jit's OpenMP runtime has places
//    (then it has pinned the initial thread to place 0): libgomp builds
//    them from the process's mask read before it pinned, so a `taskset`
//    or cgroup restriction still holds.
const std::vector<int>& ProcessCpus();

// The calling thread's affinity mask, increasing; empty if unreadable.
std::vector<int> ThreadCpus();

// Parses a Cpus_allowed_list value ("0-3,8,10-11") into `cpus` (added,
// unsorted); false on a malformed list.
bool ParseCpuList(const char* list, std::vector<int>* cpus);

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_THREADS_PROCESS_CPUS_H_
