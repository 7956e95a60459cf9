#include "runtime/threads/omp_backend.h"

#include <algorithm>

#ifdef W4JIT_HAVE_OPENMP
#include <omp.h>
#endif

namespace w4jit::internal {

#ifdef W4JIT_HAVE_OPENMP

namespace {

class OpenMpBackend final : public ParallelBackend {
 public:
  explicit OpenMpBackend(int threads)
      : threads_(threads > 0 ? threads : std::max(1, omp_get_max_threads())) {}

  int concurrency() const override { return threads_; }

  void Run(int num_chunks, const std::function<void(int)>& fn) override {
    if (num_chunks <= 0) return;
    const int team = std::min(threads_, num_chunks);
    if (team == 1 || omp_in_parallel()) {
      for (int i = 0; i < num_chunks; ++i) fn(i);
      return;
    }
    // Static: chunk c on thread c % team, as the work split intends (one
    // contiguous share per thread, no shared counter).
#pragma omp parallel num_threads(team)
    {
      const int t = omp_get_thread_num();
      const int size = omp_get_num_threads();
      for (int c = t; c < num_chunks; c += size) fn(c);
    }
  }

 private:
  const int threads_;
};

}  // namespace

bool OpenMpAvailable() { return true; }

std::unique_ptr<ParallelBackend> MakeOpenMpBackend(int threads) {
  return std::make_unique<OpenMpBackend>(threads);
}

bool InOpenMpParallel() { return omp_in_parallel() != 0; }

std::vector<int> OpenMpPlaceCpus() {
  std::vector<int> cpus;
  const int places = omp_get_num_places();
  for (int p = 0; p < places; ++p) {
    const int n = omp_get_place_num_procs(p);
    if (n <= 0) continue;
    std::vector<int> ids(static_cast<size_t>(n));
    omp_get_place_proc_ids(p, ids.data());
    cpus.insert(cpus.end(), ids.begin(), ids.end());
  }
  return cpus;
}

#else  // !W4JIT_HAVE_OPENMP

bool OpenMpAvailable() { return false; }

std::unique_ptr<ParallelBackend> MakeOpenMpBackend(int) { return nullptr; }

bool InOpenMpParallel() { return false; }

std::vector<int> OpenMpPlaceCpus() { return {}; }

#endif  // W4JIT_HAVE_OPENMP

}  // namespace w4jit::internal
