// Fuzzing of the C API: every entry point called in an order and with
// arguments taken from the fuzzer's bytes (null pointers, negative and
// out-of-range sizes and enums, handles created and destroyed in any
// order). Buffers are always as large as the arguments describe, so any
// crash or sanitizer report is the library's. Every failing call must come
// with a message.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fuzz/fuzz_util.h"
#include "w4jit/w4jit.h"

namespace w4jit::fuzz {
namespace {

struct Handle {
  w4jit_layer* layer;
  w4jit_layer_desc desc;
};

int g_log_calls = 0;
void CountingHook(int, const char* message, void*) {
  if (message == nullptr) Fail("log hook got a null message");
  ++g_log_calls;
}

void CheckStatus(w4jit_status s, const char* call) {
  if (s < W4JIT_OK || s > W4JIT_FAILED_PRECONDITION) {
    Fail(absl::StrCat(call, " returned status ", static_cast<int>(s)));
  }
  const char* e = w4jit_last_error();
  if (e == nullptr) Fail(absl::StrCat(call, ": w4jit_last_error() is null"));
  if (s != W4JIT_OK && *e == '\0') {
    Fail(absl::StrCat(call, " failed without a message"));
  }
}

// Stores any int in a C enum field, as a C caller may (a static_cast to
// the enum would be undefined in C++ for values outside its range).
template <class E>
void SetRaw(E* field, int v) {
  static_assert(sizeof(E) == sizeof(int), "C enums are int-sized");
  std::memcpy(field, &v, sizeof v);
}

void Create(FuzzedDataProvider* fdp, std::vector<Handle>* handles) {
  w4jit_layer_desc d;
  w4jit_layer_desc_init(&d);
  // Mostly values in range (so that layers get made and run), sometimes
  // anything (so that every check is reached).
  const bool sane = fdp->ConsumeIntegralInRange(0, 3) != 0;
  auto pick = [&](int lo, int hi, int bad_lo, int bad_hi) {
    return sane ? fdp->ConsumeIntegralInRange(lo, hi)
                : fdp->ConsumeIntegralInRange(bad_lo, bad_hi);
  };
  d.n = sane ? 8 * fdp->ConsumeIntegralInRange<int64_t>(1, 12)
             : fdp->ConsumeIntegralInRange<int64_t>(-2, 96);
  d.group_size = fdp->ConsumeBool()
                     ? -1
                     : (sane ? 8 * fdp->ConsumeIntegralInRange<int64_t>(1, 8)
                             : fdp->ConsumeIntegralInRange<int64_t>(-2, 130));
  d.k = sane ? (d.group_size > 0 ? d.group_size : 8) *
                   fdp->ConsumeIntegralInRange<int64_t>(1, 4)
             : fdp->ConsumeIntegralInRange<int64_t>(-2, 256);
  SetRaw(&d.weight_type, pick(0, 1, -1, 2));
  SetRaw(&d.scale_dtype, pick(0, 2, -1, 3));
  SetRaw(&d.act_dtype, pick(0, 1, -1, 3));
  SetRaw(&d.out_dtype, pick(0, 1, -1, 3));
  SetRaw(&d.mode, pick(0, 1, -1, 2));
  d.has_bias = pick(0, 1, 0, 2);
  SetRaw(&d.bias_dtype, pick(0, 1, -1, 3));
  d.allow_bf16_compute = fdp->ConsumeIntegralInRange(0, 2);
  const int format = pick(0, 5, -1, 6);

  LayerDesc cpp;
  cpp.n = d.n;
  cpp.k = d.k;
  cpp.group_size = d.group_size;
  // Scales are 4 bytes for f32 and 2 otherwise (bad dtypes are refused).
  int scale_dtype;
  std::memcpy(&scale_dtype, &d.scale_dtype, sizeof scale_dtype);
  cpp.scale_dtype = scale_dtype == 0 ? DType::kF32 : DType::kBF16;
  const FuzzedCheckpoint ckpt = MakeCheckpoint(
      fdp, cpp,
      static_cast<WeightFormat>(format < 0 || format > 5 ? 0 : format));
  w4jit_weights w;
  SetRaw(&w.format, format);
  auto maybe_null = [&](const void* p) {
    return fdp->ConsumeIntegralInRange(0, 7) == 0 ? nullptr : p;
  };
  w.qweight = maybe_null(ckpt.qweight.data());
  w.scales = maybe_null(ckpt.scales.data());
  int weight_type;
  std::memcpy(&weight_type, &d.weight_type, sizeof weight_type);
  const bool u4 = weight_type == W4JIT_U4;
  w.zero_points =
      (sane ? u4 : fdp->ConsumeBool()) ? ckpt.zeros.data() : nullptr;
  w.g_idx = ckpt.g_idx.empty() ? nullptr : ckpt.g_idx.data();
  w.bias = (sane ? d.has_bias != 0 : fdp->ConsumeBool()) ? ckpt.bias.data()
                                                         : nullptr;
  w.groups_major = fdp->ConsumeIntegralInRange(-1, 2);

  const int nulls = fdp->ConsumeIntegralInRange(0, 15);
  w4jit_layer* layer = nullptr;
  const w4jit_status s =
      w4jit_layer_create(nulls == 1 ? nullptr : &d, nulls == 2 ? nullptr : &w,
                         nulls == 3 ? nullptr : &layer);
  CheckStatus(s, "w4jit_layer_create");
  if (s == W4JIT_OK) {
    if (layer == nullptr) Fail("create returned OK and a null layer");
    handles->push_back({layer, d});
  } else if (nulls != 3 && layer != nullptr) {
    Fail("a failed create returned a layer");
  }
}

void Run(FuzzedDataProvider* fdp, std::vector<Handle>* handles) {
  const Handle* h = handles->empty() || fdp->ConsumeIntegralInRange(0, 7) == 0
                        ? nullptr
                        : &(*handles)[fdp->ConsumeIntegralInRange<size_t>(
                              0, handles->size() - 1)];
  const int64_t n = h ? h->desc.n : 8, k = h ? h->desc.k : 8;
  const int64_t m = fdp->ConsumeIntegralInRange<int64_t>(-2, 24);
  const int64_t ldx = k + fdp->ConsumeIntegralInRange<int64_t>(-2, 4);
  const int64_t ldy = n + fdp->ConsumeIntegralInRange<int64_t>(-2, 4);
  // As large as the arguments say (the largest dtype), when they are sane.
  const size_t xbytes =
      m > 0 && ldx > 0 ? static_cast<size_t>(m * ldx) * 4 : 16;
  const size_t ybytes =
      m > 0 && ldy > 0 ? static_cast<size_t>(m * ldy) * 4 : 16;
  std::vector<uint8_t> x = fdp->ConsumeBytes<uint8_t>(xbytes);
  x.resize(xbytes, 0x3c);
  constexpr uint8_t kUntouched = 0xa5;
  std::vector<uint8_t> y(ybytes, kUntouched);
  const int nulls = fdp->ConsumeIntegralInRange(0, 15);
  const w4jit_status s = w4jit_layer_run(h ? h->layer : nullptr, m,
                                         nulls == 1 ? nullptr : x.data(), ldx,
                                         nulls == 2 ? nullptr : y.data(), ldy);
  CheckStatus(s, "w4jit_layer_run");
  if (s == W4JIT_OK && (h == nullptr || m < 0 || ldx < k || ldy < n)) {
    Fail(absl::StrCat("run accepted m=", m, " ldx=", ldx, " ldy=", ldy,
                      " for n=", n, " k=", k));
  }
  // M = 0 is an empty batch: it succeeds (even with null x or y) and writes
  // nothing.
  if (h != nullptr && m == 0 && ldx >= k && ldy >= n) {
    if (s != W4JIT_OK) {
      Fail(absl::StrCat("run refused the empty batch, ldx=", ldx, " ldy=", ldy,
                        " for n=", n, " k=", k));
    }
    for (uint8_t b : y) {
      if (b != kUntouched) Fail("run with m=0 wrote y");
    }
  }
}

void Step(FuzzedDataProvider* fdp, std::vector<Handle>* handles) {
  switch (fdp->ConsumeIntegralInRange(0, 9)) {
    case 0:
    case 1:
      Create(fdp, handles);
      break;
    case 2:
    case 3:
      Run(fdp, handles);
      break;
    case 4: {
      if (handles->empty() || fdp->ConsumeBool()) {
        w4jit_layer_destroy(nullptr);
        break;
      }
      const size_t i =
          fdp->ConsumeIntegralInRange<size_t>(0, handles->size() - 1);
      w4jit_layer_destroy((*handles)[i].layer);
      handles->erase(handles->begin() + static_cast<std::ptrdiff_t>(i));
      break;
    }
    case 5: {
      size_t bytes = 0;
      const w4jit_layer* l = handles->empty() || fdp->ConsumeBool()
                                 ? nullptr
                                 : handles->back().layer;
      CheckStatus(
          w4jit_layer_packed_bytes(l, fdp->ConsumeBool() ? nullptr : &bytes),
          "w4jit_layer_packed_bytes");
      break;
    }
    case 6: {
      const int t = fdp->ConsumeIntegralInRange(-3, 3);
      const w4jit_status s = w4jit_set_num_threads(t);
      CheckStatus(s, "w4jit_set_num_threads");
      if ((s == W4JIT_OK) != (t >= 0)) Fail("set_num_threads status");
      if (w4jit_get_num_threads() < 1) Fail("get_num_threads < 1");
      break;
    }
    case 7:
      w4jit_set_log_hook(fdp->ConsumeBool() ? CountingHook : nullptr, nullptr);
      break;
    case 8: {
      const char* paths[] = {nullptr, "", "/nonexistent/w4jit-tuning.json",
                             "/"};
      const w4jit_status s =
          w4jit_load_tuning_file(paths[fdp->ConsumeIntegralInRange(0, 3)]);
      CheckStatus(s, "w4jit_load_tuning_file");
      break;
    }
    default:
      if (std::strlen(w4jit_version()) == 0) Fail("empty version");
      w4jit_layer_desc_init(nullptr);
      (void)std::strlen(w4jit_last_error());
      break;
  }
}

}  // namespace
}  // namespace w4jit::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider fdp(data, size);
  std::vector<w4jit::fuzz::Handle> handles;
  for (int i = 0; i < 24 && fdp.remaining_bytes() > 0; ++i) {
    w4jit::fuzz::Step(&fdp, &handles);
  }
  for (const auto& h : handles) w4jit_layer_destroy(h.layer);
  // Back to the defaults for the next input.
  w4jit_set_num_threads(0);
  w4jit_set_log_hook(nullptr, nullptr);
  w4jit_load_tuning_file("");
  return 0;
}
