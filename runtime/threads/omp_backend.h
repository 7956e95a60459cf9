// The OpenMP backend: runs a layer's chunks on the process's OpenMP team
// (libgomp), so that a host that already runs its own work on OpenMP
// (PyTorch, and so vLLM and zentorch) shares one set of threads with w4jit.
// The only file compiled with -fopenmp; without OpenMP the functions say so.
#ifndef W4JIT_RUNTIME_THREADS_OMP_BACKEND_H_
#define W4JIT_RUNTIME_THREADS_OMP_BACKEND_H_

#include <memory>
#include <vector>

#include "w4jit/parallel.hpp"

namespace w4jit::internal {

// Whether w4jit was built with OpenMP.
bool OpenMpAvailable();

// A backend running `threads` chunks at once (0: omp_get_max_threads()).
// nullptr when OpenMP is not available.
std::unique_ptr<ParallelBackend> MakeOpenMpBackend(int threads);

// True inside an active OpenMP parallel region (a team of more than one
// thread): a Run there runs inline, the host has already parallelised.
bool InOpenMpParallel();

// The CPUs of all of OpenMP's places (unsorted), empty when OpenMP has no
// places. libgomp has places exactly when OMP_PROC_BIND (not false),
// OMP_PLACES or GOMP_CPU_AFFINITY is set, and then it pinned the process's
// initial thread to place 0 when it loaded; it built the places from the
// mask it read before that (runtime/threads/process_cpus.h).
std::vector<int> OpenMpPlaceCpus();

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_THREADS_OMP_BACKEND_H_
