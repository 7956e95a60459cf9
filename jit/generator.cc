#include "jit/generator.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include "absl/strings/str_format.h"
#include "base/env.h"
#include "base/memory.h"

namespace w4jit::internal {
namespace {

// Appends "start size name" to /tmp/perf-<pid>.map so that `perf report`
// names JIT code (the perf map protocol).
void RegisterWithPerf(const void* code, size_t size, const std::string& name) {
  const char* env = GetEnv(EnvVar::kPerfMap);
  if (env == nullptr || std::string(env) != "1") return;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  const std::string path = absl::StrFormat("/tmp/perf-%d.map", getpid());
  if (FILE* f = std::fopen(path.c_str(), "a")) {
    std::fprintf(f, "%lx %zx %s\n", reinterpret_cast<unsigned long>(code), size,
                 name.c_str());
    std::fclose(f);
  }
}

// Writes the raw bytes to $W4JIT_DUMP_DIR/<name>.bin for
// `objdump -D -b binary -mi386:x86-64 -M intel`.
void DumpCode(const void* code, size_t size, const std::string& name) {
  const char* dir = GetEnv(EnvVar::kDumpDir);
  if (dir == nullptr || *dir == '\0') return;
  const std::string path = absl::StrFormat("%s/%s.bin", dir, name);
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(code, 1, size, f);
    std::fclose(f);
  }
}

}  // namespace

// A code buffer that cannot be mapped is an AllocationError naming its size
// (the kernel cache reports it as RESOURCE_EXHAUSTED and does not cache
// it), not a generic Xbyak error. DontSetProtectRWE: the buffer starts
// read+write only; Create() turns it read+execute once the code is
// complete.
// (Unformatted: clang-format 14 splits "Xbyak::" in a function-try-block.)
// clang-format off
Generator::Generator(std::string name, size_t max_code_bytes) try
    : Xbyak::CodeGenerator(max_code_bytes, Xbyak::DontSetProtectRWE),
      name_(std::move(name)) {
} catch (const Xbyak::Error& e) {
  if (static_cast<int>(e) == Xbyak::ERR_CANT_ALLOC) {
    throw AllocationError(max_code_bytes);
  }
  throw;
}
// clang-format on

absl::Status Generator::Create() {
  if (created_) return absl::FailedPreconditionError("kernel created twice");
  try {
    Generate();
    if (hasUndefinedLabel()) {
      return absl::InternalError(
          absl::StrFormat("JIT %s: undefined label", name_));
    }
  } catch (const Xbyak::Error& e) {
    return absl::InternalError(
        absl::StrFormat("JIT %s failed: %s", name_, e.what()));
  }
  if (!setProtectModeRE(/*throwException=*/false)) {
    // mprotect fails with ENOMEM when the kernel cannot split the mapping.
    const int err = errno;
    const std::string what = absl::StrFormat("JIT %s: mprotect(RX) failed: %s",
                                             name_, std::strerror(err));
    return err == ENOMEM ? absl::ResourceExhaustedError(what)
                         : absl::InternalError(what);
  }
  created_ = true;
  RegisterWithPerf(getCode(), getSize(), name_);
  DumpCode(getCode(), getSize(), name_);
  return absl::OkStatus();
}

void Generator::Preamble() {
  push(rbx);
  push(rbp);
  push(r12);
  push(r13);
  push(r14);
  push(r15);
}

void Generator::Postamble() {
  pop(r15);
  pop(r14);
  pop(r13);
  pop(r12);
  pop(rbp);
  pop(rbx);
  vzeroupper();
  ret();
}

}  // namespace w4jit::internal
