#include "runtime/make_kernel.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/log.h"
#include "dispatch/cpu_profile.h"
#include "runtime/jit_kernels.h"
#include "runtime/reference.h"

namespace w4jit::internal {

absl::StatusOr<std::unique_ptr<LinearKernel>> MakeLinearKernel(
    const LayerDesc& desc, CanonicalWeights w, bool force_reference) {
  std::unique_ptr<LinearKernel> kernel;
  std::string why_not;
  const IsaTier isa = ActiveIsa();
  if (force_reference) {
    why_not = "forced by LayerOptions";
  } else if (isa == IsaTier::kRef) {
    why_not = "no JIT ISA on this CPU or W4JIT_ISA=ref";
  } else {
    auto made = desc.mode == Mode::kDA8W4
                    ? MakeDa8w4JitKernel(desc, w, HostCpu(), isa, &why_not)
                    : MakeW4a16JitKernel(desc, w, HostCpu(), isa, &why_not);
    if (!made.ok()) return made.status();
    kernel = *std::move(made);
  }
  if (kernel == nullptr) {
    Log(LogLevel::kInfo,
        absl::StrCat("layer n=", desc.n, " k=", desc.k,
                     " runs on the reference path: ", why_not));
    kernel = MakeReferenceKernel(desc, std::move(w), why_not);
  }
  return kernel;
}

}  // namespace w4jit::internal
