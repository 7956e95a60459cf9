// RunArgs::x_unchanged, the kernels' side: what a kernel last derived from
// x into the calling thread's scratch (W4A16's rows packed for the tiles,
// DA8W4's rows quantized), and the one rule for reusing it.
#ifndef W4JIT_RUNTIME_X_REUSE_H_
#define W4JIT_RUNTIME_X_REUSE_H_

#include <cstdint>

#include "base/memory.h"
#include "runtime/linear_kernel.h"

namespace w4jit::internal {

// The call a derivation came from: its x, rows and row stride, and the
// allocator's generation (a new one frees the thread's scratch).
struct XCall {
  const void* x = nullptr;
  int64_t m = 0;
  int64_t ldx = 0;
  uint64_t generation = 0;

  static XCall Of(const RunArgs& args) {
    return {args.x, args.m, args.ldx, AllocatorGeneration()};
  }
  bool operator==(const XCall& o) const {
    return x == o.x && m == o.m && ldx == o.ldx && generation == o.generation;
  }
};

// Runs `derive` (which fills this thread's scratch from x) unless the
// caller promises x unchanged and `*last`, this thread's record for that
// scratch, equals `key` (an XCall `call` beside what else the derivation
// depends on). `*last` is cleared first, so that a derivation cut short
// (an exception) is never reused.
template <class Key, class Derive>
void DeriveFromX(const RunArgs& args, const Key& key, Key* last,
                 const Derive& derive) {
  if (args.x_unchanged && key == *last) return;
  *last = Key{};
  derive();
  *last = key;
}

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_X_REUSE_H_
