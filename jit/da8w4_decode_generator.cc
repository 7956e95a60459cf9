#include "jit/da8w4_decode_generator.h"

#include <cstddef>

#include "dispatch/isa_traits.h"

namespace w4jit::internal {
namespace {

// Quads per unrolled iteration: enough independent loads and stores in
// flight to keep the loop overhead out of the way.
constexpr int kUnroll = 4;

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

// rsi src cursor, rdx dst cursor, rcx quads left; vector 0 the 0x0F mask,
// 1 .. 2 * kUnroll the loaded and decoded quads.
void Da8w4DecodeGenerator::Generate() {
  ConstPool pool;
  mov(rsi, ptr[rdi + offsetof(Da8w4DecodeArgs, src)]);
  mov(rdx, ptr[rdi + offsetof(Da8w4DecodeArgs, dst)]);
  mov(rcx, ptr[rdi + offsetof(Da8w4DecodeArgs, quads)]);
  vmovups(vec_.Vec(0), pool.Splat32(0x0F0F0F0F));
  Xbyak::Label unrolled, single, done;
  L(unrolled);
  cmp(rcx, kUnroll);
  jl(single, T_NEAR);
  EmitQuads(kUnroll, &pool);
  sub(rcx, kUnroll);
  jmp(unrolled, T_NEAR);
  L(single);
  test(rcx, rcx);
  jz(done, T_NEAR);
  EmitQuads(1, &pool);
  dec(rcx);
  jmp(single, T_NEAR);
  L(done);
  vzeroupper();
  ret();
  pool.Emit(this);
}

void Da8w4DecodeGenerator::EmitQuads(int quads, ConstPool* pool) {
  const int qb = vec_.bytes();
  for (int q = 0; q < quads; ++q) {
    const Xbyak::Xmm lo = vec_.Vec(1 + 2 * q), hi = vec_.Vec(2 + 2 * q);
    vmovups(hi, ptr[rsi + q * qb]);
    vec_.And(lo, hi, vec_.Vec(0));
    vpsrlw(hi, hi, 4);
    vec_.And(hi, hi, vec_.Vec(0));
    if (minus8_) {
      vpsubb(lo, lo, pool->Splat32(0x08080808));
      vpsubb(hi, hi, pool->Splat32(0x08080808));
    }
  }
  for (int q = 0; q < quads; ++q) {
    vmovups(ptr[rdx + 2 * q * qb], vec_.Vec(1 + 2 * q));
    vmovups(ptr[rdx + (2 * q + 1) * qb], vec_.Vec(2 + 2 * q));
  }
  add(rsi, quads * qb);
  add(rdx, 2 * quads * qb);
}

}  // namespace w4jit::internal
