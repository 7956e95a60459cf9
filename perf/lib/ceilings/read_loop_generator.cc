#include "perf/lib/ceilings/read_loop_generator.h"

#include <cstddef>
#include <string>

namespace w4jit::perf {

ReadLoopGenerator::ReadLoopGenerator(int vector_bytes, int streams)
    : Generator("read_loop_" + std::to_string(vector_bytes * 8) + "_s" +
                std::to_string(streams)),
      vector_bytes_(vector_bytes),
      streams_(streams) {}

void ReadLoopGenerator::Generate() {
  Preamble();
  const Xbyak::Reg64 args(kArg1), ptr_reg = rsi, blocks = rcx, passes = rdx;
  // Offsets of streams 1..7 from stream 0: r8 = part, then multiples.
  const Xbyak::Reg64 offsets[] = {r8, r9, r10, r11, r12, r13, r14};
  const int per_stream = kLoadsPerBlock / streams_;  // vectors per step
  mov(passes, ptr[args + offsetof(Args, passes)]);
  if (streams_ > 1) {
    // part = blocks * block_bytes / streams = blocks * per_stream * vb.
    mov(r8, ptr[args + offsetof(Args, blocks)]);
    imul(r8, r8, per_stream * vector_bytes_);
    for (int s = 1; s + 1 < streams_; ++s) {
      lea(offsets[s], ptr[offsets[s - 1] + r8]);
    }
  }
  Xbyak::Label pass_loop, block_loop;
  L(pass_loop);
  mov(ptr_reg, ptr[args + offsetof(Args, begin)]);
  mov(blocks, ptr[args + offsetof(Args, blocks)]);
  L(block_loop);
  // Independent destinations: the loads never wait on each other.
  for (int i = 0; i < kLoadsPerBlock; ++i) {
    const int stream = i / per_stream, j = i % per_stream;
    const auto addr =
        stream == 0 ? ptr[ptr_reg + j * vector_bytes_]
                    : ptr[ptr_reg + offsets[stream - 1] + j * vector_bytes_];
    if (vector_bytes_ == 64) {
      vmovdqa32(Xbyak::Zmm(i), addr);
    } else {
      vmovdqa(Xbyak::Ymm(i), addr);
    }
  }
  add(ptr_reg, per_stream * vector_bytes_);
  dec(blocks);
  jnz(block_loop, T_NEAR);
  dec(passes);
  jnz(pass_loop, T_NEAR);
  Postamble();
}

}  // namespace w4jit::perf
