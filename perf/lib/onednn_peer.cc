#include "perf/lib/onednn_peer.h"

#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"

#ifdef W4JIT_HAVE_DNNL
#include <omp.h>

#include "oneapi/dnnl/dnnl.hpp"
#endif

namespace w4jit::perf {

const char* PeerKey(PeerKind kind) {
  return kind == PeerKind::kBf16 ? "onednn_bf16" : "onednn_u8s8";
}

#ifndef W4JIT_HAVE_DNNL

std::string OneDnnVersion() { return "not built"; }
void SetOneDnnThreads(int) {}
absl::StatusOr<std::unique_ptr<MatmulPeer>> MatmulPeer::Create(PeerKind,
                                                               int64_t, int64_t,
                                                               int64_t, int) {
  return absl::UnimplementedError("n/a (w4jit_perf built without oneDNN)");
}

#else

namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using Dt = memory::data_type;

// Deterministic values: they do not change a dense matmul's speed. Bf16
// values are normal, |v| in [2^-8, 2^-7) (never denormal, NaN or Inf, which
// could take slow paths); 8-bit values are arbitrary.
void Fill(const memory& mem, bool bf16) {
  const size_t size = mem.get_desc().get_size();
  uint32_t state = 0x9E3779B9u;
  const auto next = [&] {
    state = state * 1664525u + 1013904223u;
    return state >> 16;
  };
  if (bf16) {
    auto* p = static_cast<uint16_t*>(mem.get_data_handle());
    for (size_t i = 0; i < size / 2; ++i) {
      const uint32_t r = next();
      p[i] = static_cast<uint16_t>(0x3B80u | (r & 0x80FFu));
    }
    return;
  }
  auto* p = static_cast<uint8_t*>(mem.get_data_handle());
  for (size_t i = 0; i < size; ++i) {
    p[i] = static_cast<uint8_t>(next());
  }
}

class DnnlPeer final : public MatmulPeer {
 public:
  DnnlPeer(PeerKind kind, int64_t m, int64_t n, int64_t k, int copies)
      : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {
    const bool bf16 = kind == PeerKind::kBf16;
    const memory::desc src_md({m, k}, bf16 ? Dt::bf16 : Dt::u8, Tag::ab);
    const memory::desc any_w({k, n}, bf16 ? Dt::bf16 : Dt::s8, Tag::any);
    const memory::desc dst_md({m, n}, bf16 ? Dt::bf16 : Dt::f32, Tag::ab);
    dnnl::primitive_attr attr;
    if (!bf16) attr.set_output_scales(1 << 1, std::vector<float>(n, 0.01f));
    const dnnl::matmul::primitive_desc pd(
        dnnl::matmul::desc(src_md, any_w, dst_md), attr, engine_);
    impl_ = pd.impl_info_str();
    matmul_ = dnnl::matmul(pd);
    src_ = memory(pd.src_desc(), engine_);
    dst_ = memory(pd.dst_desc(), engine_);
    Fill(src_, bf16);
    // The checkpoint's [N, K] row-major weights, reordered once.
    memory plain(memory::desc({k, n}, bf16 ? Dt::bf16 : Dt::s8, Tag::ba),
                 engine_);
    Fill(plain, bf16);
    memory packed(pd.weights_desc(), engine_);
    dnnl::reorder(plain, packed).execute(stream_, plain, packed);
    stream_.wait();
    weight_bytes_ = static_cast<int64_t>(pd.weights_desc().get_size());
    weights_.push_back(packed);
    for (int c = 1; c < copies; ++c) {
      memory copy(pd.weights_desc(), engine_);
      std::memcpy(copy.get_data_handle(), packed.get_data_handle(),
                  static_cast<size_t>(weight_bytes_));
      weights_.push_back(copy);
    }
  }

  absl::Status Run(int copy) override {
    try {
      matmul_.execute(stream_,
                      {{DNNL_ARG_SRC, src_},
                       {DNNL_ARG_WEIGHTS, weights_[copy % weights_.size()]},
                       {DNNL_ARG_DST, dst_}});
      stream_.wait();
    } catch (const dnnl::error& e) {
      return absl::InternalError(absl::StrCat("oneDNN: ", e.what()));
    }
    return absl::OkStatus();
  }
  int64_t weight_bytes() const override { return weight_bytes_; }
  std::string impl_name() const override { return impl_; }

 private:
  dnnl::engine engine_;
  dnnl::stream stream_;
  dnnl::matmul matmul_;
  memory src_, dst_;
  std::vector<memory> weights_;
  int64_t weight_bytes_ = 0;
  std::string impl_;
};

}  // namespace

std::string OneDnnVersion() {
  const dnnl_version_t* v = dnnl::version();
  return absl::StrCat(v->major, ".", v->minor, ".", v->patch);
}

void SetOneDnnThreads(int threads) { omp_set_num_threads(threads); }

absl::StatusOr<std::unique_ptr<MatmulPeer>> MatmulPeer::Create(
    PeerKind kind, int64_t m, int64_t n, int64_t k, int weight_copies) {
  try {
    return std::unique_ptr<MatmulPeer>(
        new DnnlPeer(kind, m, n, k, weight_copies < 1 ? 1 : weight_copies));
  } catch (const dnnl::error& e) {
    if (e.status == dnnl_unimplemented) {
      return absl::UnimplementedError(
          "n/a (oneDNN: unimplemented on this ISA)");
    }
    return absl::InternalError(absl::StrCat("oneDNN: ", e.what()));
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError("oneDNN: out of memory");
  }
}

#endif  // W4JIT_HAVE_DNNL

}  // namespace w4jit::perf
