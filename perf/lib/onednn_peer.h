// oneDNN's dense matmul on the same shape and thread count: what a user gets
// without 4-bit weights (bf16 x bf16, or u8 x s8 with per-channel output
// scales). Weights are reordered once into oneDNN's preferred layout, as a
// framework would at model load.
#ifndef W4JIT_PERF_LIB_ONEDNN_PEER_H_
#define W4JIT_PERF_LIB_ONEDNN_PEER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace w4jit::perf {

enum class PeerKind : int { kBf16 = 0, kU8S8 = 1 };

// The JSON ids "onednn_bf16" / "onednn_u8s8".
const char* PeerKey(PeerKind kind);

// "2.6.3", or "not built" when w4jit_perf was built without oneDNN.
std::string OneDnnVersion();

// Threads oneDNN uses from now on (its OpenMP runtime's).
void SetOneDnnThreads(int threads);

class MatmulPeer {
 public:
  // y[M,N] = x[M,K] * W[N,K]^T with random data. `weight_copies` distinct
  // copies of the weights can be rotated through for cold-cache timing.
  // Unimplemented (with "n/a (oneDNN: unimplemented on this ISA)") when
  // oneDNN has no implementation on this CPU, or oneDNN is not built in.
  static absl::StatusOr<std::unique_ptr<MatmulPeer>> Create(
      PeerKind kind, int64_t m, int64_t n, int64_t k, int weight_copies = 1);
  virtual ~MatmulPeer() = default;

  // One matmul reading weight copy `copy` (modulo weight_copies).
  virtual absl::Status Run(int copy) = 0;
  // Bytes of one copy of the weights as oneDNN stores them.
  virtual int64_t weight_bytes() const = 0;
  // oneDNN's implementation name, e.g. "brg:avx512_core_amx".
  virtual std::string impl_name() const = 0;
};

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_ONEDNN_PEER_H_
