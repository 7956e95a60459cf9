#include "perf/lib/ceilings/ceiling_probe.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "dispatch/amx_permission.h"
#include "dispatch/cpu_profile.h"
#include "perf/lib/timing/all_threads_timer.h"
#include "runtime/threads/parallel.h"
#include "runtime/threads/work_split.h"

namespace w4jit::perf {
namespace {

// RunShared's chunks per thread: enough that a thread that is not
// scheduled for a while leaves little work behind.
constexpr int kChunksPerThread = 4;

}  // namespace

// Not through the kernel cache: a measuring loop is not a library kernel
// and must not show up in its JIT statistics.
absl::StatusOr<std::unique_ptr<CeilingProbe>> CeilingProbe::Read(
    int64_t bytes, double seconds) {
  if (bytes <= 0) return absl::InvalidArgumentError("read probe: bytes <= 0");
  std::unique_ptr<CeilingProbe> p(new CeilingProbe);
  p->threads_ = internal::Concurrency();
  p->vector_bytes_ = internal::HostCpu().features.avx512f ? 64 : 32;
  auto gen = std::make_unique<ReadLoopGenerator>(p->vector_bytes_);
  if (absl::Status s = gen->Create(); !s.ok()) return s;
  const int64_t block = gen->block_bytes();
  const int64_t blocks =
      std::max<int64_t>(p->threads_, (bytes + block - 1) / block);
  p->bytes_ = blocks * block;
  p->buffer_.reset(static_cast<uint8_t*>(
      std::aligned_alloc(4096, (p->bytes_ + 4095) / 4096 * 4096)));
  if (p->buffer_ == nullptr) {
    return absl::ResourceExhaustedError("read probe: allocation failed");
  }
  for (int t = 0; t < p->threads_; ++t) {
    const internal::Range r = internal::SplitRange(blocks, p->threads_, t);
    p->read_args_.push_back(
        {p->buffer_.get() + r.begin * block, r.end - r.begin, 1});
  }
  // Each thread touches its own slice first, as it will read it.
  internal::ParallelRun(p->threads_, [&](int t) {
    const auto& a = p->read_args_[t];
    std::memset(const_cast<uint8_t*>(a.begin), 1, a.blocks * block);
  });
  p->gen_ = std::move(gen);
  p->Run();  // warm the caches and TLB the way a hot kernel finds them
  const double one_pass = std::max(p->Run(), 1e-7);
  const int64_t passes =
      std::clamp<int64_t>(static_cast<int64_t>(seconds / one_pass), 1, 1 << 20);
  for (auto& a : p->read_args_) a.passes = passes;
  const int chunks = p->threads_ * kChunksPerThread;
  for (int c = 0; c < chunks && c < blocks; ++c) {
    const internal::Range r = internal::SplitRange(blocks, chunks, c);
    p->read_chunks_.push_back(
        {p->buffer_.get() + r.begin * block, r.end - r.begin, passes});
  }
  p->units_ = static_cast<double>(p->bytes_) * passes;
  return p;
}

absl::StatusOr<std::unique_ptr<CeilingProbe>> CeilingProbe::Compute(
    PeakOp op, double seconds) {
  if (IsTileOp(op)) {
    if (absl::Status s = internal::RequestAmxTileData(); !s.ok()) return s;
  }
  std::unique_ptr<CeilingProbe> p(new CeilingProbe);
  p->threads_ = internal::Concurrency();
  auto gen = std::make_unique<PeakLoopGenerator>(op);
  if (absl::Status s = gen->Create(); !s.ok()) return s;
  const auto fn = gen->entry<PeakLoopGenerator::Fn>();
  // Calibrate on one thread until a run lasts at least 2 ms.
  PeakLoopGenerator::Args args{1000};
  for (;;) {
    const auto t0 = std::chrono::steady_clock::now();
    fn(&args);
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    if (s >= 2e-3 || args.iterations > (int64_t{1} << 40)) {
      args.iterations = std::max<int64_t>(
          1, static_cast<int64_t>(args.iterations * seconds / s));
      break;
    }
    args.iterations *= 4;
  }
  p->peak_args_ = args;
  p->peak_chunk_.iterations =
      std::max<int64_t>(1, args.iterations / kChunksPerThread);
  p->units_ = static_cast<double>(gen->MacsPerIteration()) *
              static_cast<double>(p->peak_chunk_.iterations) *
              kChunksPerThread * p->threads_;
  p->peak_args_.iterations = p->peak_chunk_.iterations * kChunksPerThread;
  p->gen_ = std::move(gen);
  return p;
}

double CeilingProbe::Run() const {
  if (!read_args_.empty()) {
    const auto fn = gen_->entry<ReadLoopGenerator::Fn>();
    return TimeOnAllThreads(threads_, [&](int t) { fn(&read_args_[t]); });
  }
  const auto fn = gen_->entry<PeakLoopGenerator::Fn>();
  return TimeOnAllThreads(threads_, [&](int) { fn(&peak_args_); });
}

void CeilingProbe::RunShared() const {
  if (!read_chunks_.empty()) {
    const auto fn = gen_->entry<ReadLoopGenerator::Fn>();
    internal::ParallelRun(static_cast<int>(read_chunks_.size()),
                          [&](int c) { fn(&read_chunks_[c]); });
    return;
  }
  const auto fn = gen_->entry<PeakLoopGenerator::Fn>();
  internal::ParallelRun(threads_ * kChunksPerThread,
                        [&](int) { fn(&peak_chunk_); });
}

}  // namespace w4jit::perf
