#include "perf/lib/read_loop_generator.h"

#include <cstddef>
#include <string>

namespace w4jit::perf {

ReadLoopGenerator::ReadLoopGenerator(int vector_bytes)
    : Generator("read_loop_" + std::to_string(vector_bytes * 8)),
      vector_bytes_(vector_bytes) {}

void ReadLoopGenerator::Generate() {
  Preamble();
  const Xbyak::Reg64 args(kArg1), ptr_reg = rsi, blocks = rcx, passes = rdx;
  mov(passes, ptr[args + offsetof(Args, passes)]);
  Xbyak::Label pass_loop, block_loop;
  L(pass_loop);
  mov(ptr_reg, ptr[args + offsetof(Args, begin)]);
  mov(blocks, ptr[args + offsetof(Args, blocks)]);
  L(block_loop);
  // Independent destinations: the loads never wait on each other.
  for (int i = 0; i < kLoadsPerBlock; ++i) {
    const auto addr = ptr[ptr_reg + i * vector_bytes_];
    if (vector_bytes_ == 64) {
      vmovdqa32(Xbyak::Zmm(i), addr);
    } else {
      vmovdqa(Xbyak::Ymm(i), addr);
    }
  }
  add(ptr_reg, kLoadsPerBlock * vector_bytes_);
  dec(blocks);
  jnz(block_loop, T_NEAR);
  dec(passes);
  jnz(pass_loop, T_NEAR);
  Postamble();
}

}  // namespace w4jit::perf
