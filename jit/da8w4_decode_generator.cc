#include "jit/da8w4_decode_generator.h"

#include <cstddef>

#include "dispatch/isa_traits.h"
#include "jit/da8w4_decode_plan.h"

namespace w4jit::internal {
namespace {

// The register roles and the unroll (jit/da8w4_decode_plan.h).
using da8w4_decode_gpr::kArgs;
using da8w4_decode_gpr::kDst;
using da8w4_decode_gpr::kQuadsLeft;
using da8w4_decode_gpr::kSrc;
using Plan = Da8w4DecodePlan;

}  // namespace

absl::Status CheckDa8w4DecodeConfig(const Da8w4DecodeConfig& config) {
  if (TraitsOf(config.isa).vector_bytes == 0) {
    return absl::InvalidArgumentError(
        "the DA8W4 panel decoder needs AVX2 or AVX-512");
  }
  return absl::OkStatus();
}

Da8w4DecodeConfig Da8w4DecodeConfig::Canonical() const {
  return {TraitsOf(isa).vector_tier, minus8};
}

KernelName Da8w4DecodeConfig::NameParts() const {
  const Da8w4DecodeConfig c = Canonical();
  KernelName key;
  key.family = KernelFamily::kDa8w4Decode;
  key.isa = c.isa;
  key.minus8 = c.minus8;
  return key;
}

Da8w4DecodeGenerator::Da8w4DecodeGenerator(const Da8w4DecodeConfig& config)
    : Generator(config.name(), 4096),
      minus8_(config.minus8),
      vec_(this, config.isa) {}

void Da8w4DecodeGenerator::Generate() {
  ConstPool pool;
  mov(kSrc, ptr[kArgs + offsetof(Da8w4DecodeArgs, src)]);
  mov(kDst, ptr[kArgs + offsetof(Da8w4DecodeArgs, dst)]);
  mov(kQuadsLeft, ptr[kArgs + offsetof(Da8w4DecodeArgs, quads)]);
  vmovups(vec_.Vec(Plan::kMask), pool.Splat32(0x0F0F0F0F));
  Xbyak::Label unrolled, single, done;
  L(unrolled);
  cmp(kQuadsLeft, Plan::kUnroll);
  jl(single, T_NEAR);
  EmitQuads(Plan::kUnroll, &pool);
  sub(kQuadsLeft, Plan::kUnroll);
  jmp(unrolled, T_NEAR);
  L(single);
  test(kQuadsLeft, kQuadsLeft);
  jz(done, T_NEAR);
  EmitQuads(1, &pool);
  dec(kQuadsLeft);
  jmp(single, T_NEAR);
  L(done);
  vzeroupper();
  ret();
  pool.Emit(this);
}

void Da8w4DecodeGenerator::EmitQuads(int quads, ConstPool* pool) {
  const int qb = vec_.bytes();
  const Xbyak::Xmm mask = vec_.Vec(Plan::kMask);
  for (int q = 0; q < quads; ++q) {
    const Xbyak::Xmm lo = vec_.Vec(Plan::Low(q)), hi = vec_.Vec(Plan::High(q));
    vmovups(hi, ptr[kSrc + q * qb]);
    vec_.And(lo, hi, mask);
    vpsrlw(hi, hi, 4);
    vec_.And(hi, hi, mask);
    if (minus8_) {
      vpsubb(lo, lo, pool->Splat32(0x08080808));
      vpsubb(hi, hi, pool->Splat32(0x08080808));
    }
  }
  for (int q = 0; q < quads; ++q) {
    vmovups(ptr[kDst + 2 * q * qb], vec_.Vec(Plan::Low(q)));
    vmovups(ptr[kDst + (2 * q + 1) * qb], vec_.Vec(Plan::High(q)));
  }
  add(kSrc, quads * qb);
  add(kDst, 2 * quads * qb);
}

}  // namespace w4jit::internal
