// Out of memory is an answer: a layer whose packing cannot allocate, or
// whose JIT code buffer cannot be mapped, returns RESOURCE_EXHAUSTED naming
// the bytes, frees what it had allocated, and the process carries on (the
// same layer is created once memory is back). Each scenario runs in a
// forked child under a lowered RLIMIT_AS, so the test process itself never
// runs short.
#include <malloc.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "check/layer_check.h"
#include "dispatch/cpu_profile.h"
#include "dispatch/isa_traits.h"
#include "gtest/gtest.h"
#include "runtime/formats/import.h"
#include "tests/util/test_layer.h"
#include "w4jit/w4jit.h"
#include "w4jit/w4jit.hpp"

namespace w4jit::testing {
namespace {

// AddressSanitizer reserves terabytes of address space for its shadow
// memory, so RLIMIT_AS cannot be lowered under it.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAsan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAsan = true;
#else
constexpr bool kAsan = false;
#endif
#else
constexpr bool kAsan = false;
#endif

#define SKIP_UNDER_ASAN()                                                 \
  if (kAsan) {                                                            \
    GTEST_SKIP() << "RLIMIT_AS cannot be lowered under AddressSanitizer " \
                    "(its shadow memory is terabytes of address space)";  \
  }

// Runs `body` in a child process; returns "" if it returned "", else what
// it returned (or how the child died).
std::string InChild(const std::function<std::string()>& body) {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return "fork failed";
  if (pid == 0) {
    close(fds[0]);
    std::string out;
    try {
      out = body();
    } catch (const std::exception& e) {
      out = absl::StrCat("exception: ", e.what());
    }
    if (!out.empty() && write(fds[1], out.data(), out.size()) < 0) _exit(3);
    _exit(out.empty() ? 0 : 1);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, n);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) {
    return absl::StrCat("child killed by signal ", WTERMSIG(status), ": ", out);
  }
  if (WEXITSTATUS(status) != 0 && out.empty()) {
    return absl::StrCat("child exited with ", WEXITSTATUS(status));
  }
  return out;
}

// The child has only the forking thread; w4jit's pool from the parent must
// not be touched there, so everything runs serially on the caller.
class SerialBackend final : public ParallelBackend {
 public:
  int concurrency() const override { return 1; }
  void Run(int n, const std::function<void(int)>& fn) override {
    for (int i = 0; i < n; ++i) fn(i);
  }
};

int64_t AddressSpaceBytes() {
  long pages = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
    std::fclose(f);
  }
  return static_cast<int64_t>(pages) * sysconf(_SC_PAGESIZE);
}

int64_t HeapInUse() {
  const struct mallinfo2 mi = mallinfo2();
  return static_cast<int64_t>(mi.uordblks + mi.hblkhd);
}

// Lowers the soft RLIMIT_AS to `bytes` while it lives.
class ScopedAddressLimit {
 public:
  explicit ScopedAddressLimit(int64_t bytes) {
    getrlimit(RLIMIT_AS, &saved_);
    struct rlimit r = saved_;
    r.rlim_cur = static_cast<rlim_t>(bytes);
    setrlimit(RLIMIT_AS, &r);
  }
  ~ScopedAddressLimit() { setrlimit(RLIMIT_AS, &saved_); }

 private:
  struct rlimit saved_;
};

// Keeps freed heap memory in the heap (no trimming) and serves even large
// blocks from it, then grows the heap by `bytes`: small allocations keep
// working under a tight limit, while any new mapping (a JIT code buffer)
// fails.
void ReserveHeap(size_t bytes) {
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  // volatile: a malloc/free pair with nothing between is optimised away.
  void* volatile p = std::malloc(bytes);
  std::free(p);
}

// What every scenario's child does first: run serially, fix malloc's mmap
// threshold (glibc otherwise raises it after a large free, so that the
// same request later grows the heap instead of mapping: address space
// would differ between identical attempts), and create a first layer so
// that one-time state (CPU detection, tuning, kernel cache, absl's
// internal arenas) exists before the limit is lowered.
std::string PrepareChild(Mode mode) {
  SetParallelBackend(std::make_shared<SerialBackend>());
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  const LayerDesc small = KernelTestDesc(mode, 16, 128, 128, WeightType::kS4,
                                         DType::kBF16, DType::kF32, false);
  auto layer = MakeLayer(small, RandomWeights(small, 1));
  return layer.ok() ? "" : layer.status().ToString();
}

std::string PackingCannotAllocate(Mode mode) {
  if (std::string e = PrepareChild(mode); !e.empty()) return e;
  const LayerDesc desc = KernelTestDesc(mode, 4096, 8192, 128, WeightType::kS4,
                                        DType::kBF16, DType::kF32, false);
  const auto w = RandomWeights(desc, 3);
  auto ckpt = internal::ExportWeights(desc, w, WeightFormat::kUnpackedInt8);
  if (!ckpt.ok()) return ckpt.status().ToString();
  // Room for the import (a byte per weight, 32 MiB) but not for the packed
  // weights as well (16 MiB more).
  const int64_t before = AddressSpaceBytes();
  const int64_t heap_before = HeapInUse();
  int64_t after_first = 0, heap_after_first = 0;
  {
    ScopedAddressLimit limit(before + (40 << 20));
    for (int attempt = 0; attempt < 3; ++attempt) {
      auto layer = Layer::Create(desc, ckpt->view());
      if (layer.ok()) return "Create succeeded under the limit";
      if (!absl::IsResourceExhausted(layer.status())) {
        return absl::StrCat("want RESOURCE_EXHAUSTED, got ",
                            layer.status().ToString());
      }
      const std::string msg(layer.status().message());
      const std::string want =
          internal::TraitsOf(internal::ActiveIsa()).vector_bytes > 0
              ? "for the packed weights"
              : "importing the weights";
      if (msg.find(want) == std::string::npos ||
          msg.find("bytes") == std::string::npos) {
        return absl::StrCat("message does not name the bytes: ", msg);
      }
      if (attempt == 0) {
        after_first = AddressSpaceBytes();
        heap_after_first = HeapInUse();
      } else if (AddressSpaceBytes() != after_first ||
                 HeapInUse() != heap_after_first) {
        return absl::StrCat("a failed Create leaks: address space ",
                            after_first, " -> ", AddressSpaceBytes(), ", heap ",
                            heap_after_first, " -> ", HeapInUse());
      }
    }
  }
  if (after_first > before + (1 << 20) ||
      heap_after_first > heap_before + 65536) {
    return absl::StrCat("memory held after the failure: address space +",
                        after_first - before, ", heap +",
                        heap_after_first - heap_before);
  }
  // Memory is back: the same layer works.
  auto layer = Layer::Create(desc, ckpt->view());
  if (!layer.ok()) return absl::StrCat("after: ", layer.status().ToString());
  const auto x = RandomActivations(desc, 2, desc.k, 5);
  const check::CheckResult r =
      check::CheckRun(**layer, w, 2, x.data(), desc.k, desc.n);
  return r.ok() ? "" : r.report;
}

TEST(AllocFailureTest, Da8w4PackingCannotAllocate) {
  SKIP_UNDER_ASAN();
  EXPECT_EQ(InChild([] { return PackingCannotAllocate(Mode::kDA8W4); }), "");
}

TEST(AllocFailureTest, W4a16PackingCannotAllocate) {
  SKIP_UNDER_ASAN();
  EXPECT_EQ(InChild([] { return PackingCannotAllocate(Mode::kW4A16); }), "");
}

// A shape no other test uses, so its kernels are not in the cache yet.
LayerDesc FreshShape(Mode mode, int64_t n) {
  return KernelTestDesc(mode, n, 168, 24, WeightType::kU4, DType::kF32,
                        DType::kBF16, true);
}

std::string JitBufferCannotBeMapped(Mode mode) {
  if (std::string e = PrepareChild(mode); !e.empty()) return e;
  const LayerDesc desc = FreshShape(mode, 72);
  const auto w = RandomWeights(desc, 3);
  auto ckpt = internal::ExportWeights(desc, w, WeightFormat::kGptqV1);
  if (!ckpt.ok()) return ckpt.status().ToString();
  ReserveHeap(16 << 20);
  const int64_t before = AddressSpaceBytes();
  {
    // Nothing new can be mapped; the heap still has room.
    ScopedAddressLimit limit(before + 4096);
    for (int attempt = 0; attempt < 2; ++attempt) {
      auto layer = Layer::Create(desc, ckpt->view());
      if (layer.ok()) return "Create succeeded under the limit";
      const std::string msg(layer.status().message());
      if (!absl::IsResourceExhausted(layer.status()) ||
          msg.find("code buffer") == std::string::npos) {
        return absl::StrCat("want RESOURCE_EXHAUSTED for the code buffer, got ",
                            layer.status().ToString());
      }
      if (AddressSpaceBytes() != before)
        return "a failed Create kept a mapping";
    }
    // The C API reports the same, as a status code and message.
    const LayerDesc cdesc = FreshShape(mode, 80);
    const auto cw = RandomWeights(cdesc, 4);
    auto cckpt = internal::ExportWeights(cdesc, cw, WeightFormat::kGptqV1);
    if (!cckpt.ok()) return cckpt.status().ToString();
    w4jit_layer_desc d;
    w4jit_layer_desc_init(&d);
    d.n = cdesc.n;
    d.k = cdesc.k;
    d.group_size = cdesc.group_size;
    d.weight_type = W4JIT_U4;
    d.scale_dtype = static_cast<w4jit_dtype>(cdesc.scale_dtype);
    d.act_dtype = W4JIT_F32;
    d.out_dtype = W4JIT_BF16;
    d.mode = static_cast<w4jit_mode>(cdesc.mode);
    d.has_bias = 1;
    d.bias_dtype = static_cast<w4jit_dtype>(cdesc.bias_dtype);
    const WeightsView v = cckpt->view();
    w4jit_weights cv = {W4JIT_FORMAT_GPTQ_V1,
                        v.qweight,
                        v.scales,
                        v.zero_points,
                        nullptr,
                        v.bias,
                        1};
    w4jit_layer* handle = nullptr;
    const w4jit_status st = w4jit_layer_create(&d, &cv, &handle);
    if (st != W4JIT_RESOURCE_EXHAUSTED || handle != nullptr ||
        std::string(w4jit_last_error()).find("code buffer") ==
            std::string::npos) {
      return absl::StrCat("C API: status ", st, ", '", w4jit_last_error(), "'");
    }
  }
  // Memory is back: the failure was not cached, the layer is created.
  auto layer = Layer::Create(desc, ckpt->view());
  if (!layer.ok()) return absl::StrCat("after: ", layer.status().ToString());
  if ((*layer)->kernel_names()[0].rfind("reference", 0) == 0) {
    return "after: on the reference path";
  }
  const auto x = RandomActivations(desc, 3, desc.k, 5);
  const check::CheckResult r =
      check::CheckRun(**layer, w, 3, x.data(), desc.k, desc.n);
  return r.ok() ? "" : r.report;
}

TEST(AllocFailureTest, Da8w4JitBufferCannotBeMapped) {
  SKIP_UNDER_ASAN();
  if (internal::TraitsOf(internal::ActiveIsa()).vector_bytes == 0) {
    GTEST_SKIP() << "no JIT tier (AVX2) on this CPU: no code buffer to map";
  }
  EXPECT_EQ(InChild([] { return JitBufferCannotBeMapped(Mode::kDA8W4); }), "");
}

TEST(AllocFailureTest, W4a16JitBufferCannotBeMapped) {
  SKIP_UNDER_ASAN();
  if (internal::TraitsOf(internal::ActiveIsa()).vector_bytes == 0) {
    GTEST_SKIP() << "no JIT tier (AVX2) on this CPU: no code buffer to map";
  }
  EXPECT_EQ(InChild([] { return JitBufferCannotBeMapped(Mode::kW4A16); }), "");
}

}  // namespace
}  // namespace w4jit::testing
