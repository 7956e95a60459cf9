// The C API: a thin shell over the C++ one. Exceptions never cross it.
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <utility>

#include "runtime/c_api/c_api_status.h"
#include "w4jit/w4jit.h"
#include "w4jit/w4jit.hpp"

struct w4jit_layer {
  std::unique_ptr<w4jit::Layer> impl;
};

namespace {

using w4jit::internal::RawEnum;

w4jit_status Fail(w4jit_status code, std::string message) {
  return w4jit::internal::CApiFail(code, std::move(message));
}

w4jit_status FromStatus(const absl::Status& s) {
  return w4jit::internal::CApiFromStatus(s);
}

w4jit::LayerDesc ToCpp(const w4jit_layer_desc& d) {
  w4jit::LayerDesc out;
  out.n = d.n;
  out.k = d.k;
  out.group_size = d.group_size;
  out.weight_type = static_cast<w4jit::WeightType>(RawEnum(d.weight_type));
  out.scale_dtype = static_cast<w4jit::DType>(RawEnum(d.scale_dtype));
  out.act_dtype = static_cast<w4jit::DType>(RawEnum(d.act_dtype));
  out.out_dtype = static_cast<w4jit::DType>(RawEnum(d.out_dtype));
  out.mode = static_cast<w4jit::Mode>(RawEnum(d.mode));
  out.has_bias = d.has_bias != 0;
  out.bias_dtype = static_cast<w4jit::DType>(RawEnum(d.bias_dtype));
  out.allow_bf16_compute = d.allow_bf16_compute != 0;
  const w4jit_epilogue& e = d.epilogue;
  out.epilogue.activation =
      static_cast<w4jit::Activation>(RawEnum(e.activation));
  out.epilogue.num_binary = e.num_binary;
  for (int i = 0; i < 2; ++i) {
    out.epilogue.binary[i].op =
        static_cast<w4jit::BinaryOp>(RawEnum(e.binary_op[i]));
    out.epilogue.binary[i].dtype =
        static_cast<w4jit::DType>(RawEnum(e.binary_dtype[i]));
  }
  out.epilogue.silu_mul = e.silu_mul != 0;
  out.act_quant = static_cast<w4jit::ActQuant>(RawEnum(d.act_quant));
  out.zero_point_domain =
      static_cast<w4jit::ZeroPointDomain>(RawEnum(d.zero_point_domain));
  out.zero_point_dtype = static_cast<w4jit::DType>(RawEnum(d.zero_point_dtype));
  out.numerics = static_cast<w4jit::Numerics>(RawEnum(d.numerics));
  out.non_finite = static_cast<w4jit::NonFinitePolicy>(RawEnum(d.non_finite));
  return out;
}

w4jit::WeightsView ToCpp(const w4jit_weights& w) {
  return w4jit::internal::ToCppWeights(w);
}

}  // namespace

extern "C" {

void w4jit_layer_desc_init(w4jit_layer_desc* desc) {
  if (desc == nullptr) return;
  w4jit::LayerDesc d;
  desc->n = d.n;
  desc->k = d.k;
  desc->group_size = d.group_size;
  desc->weight_type = static_cast<w4jit_weight_type>(d.weight_type);
  desc->scale_dtype = static_cast<w4jit_dtype>(d.scale_dtype);
  desc->act_dtype = static_cast<w4jit_dtype>(d.act_dtype);
  desc->out_dtype = static_cast<w4jit_dtype>(d.out_dtype);
  desc->mode = static_cast<w4jit_mode>(d.mode);
  desc->has_bias = d.has_bias ? 1 : 0;
  desc->bias_dtype = static_cast<w4jit_dtype>(d.bias_dtype);
  desc->allow_bf16_compute = d.allow_bf16_compute ? 1 : 0;
  const w4jit::Epilogue& e = d.epilogue;
  desc->epilogue.activation = static_cast<w4jit_activation>(e.activation);
  desc->epilogue.num_binary = e.num_binary;
  for (int i = 0; i < 2; ++i) {
    desc->epilogue.binary_op[i] = static_cast<w4jit_binary_op>(e.binary[i].op);
    desc->epilogue.binary_dtype[i] =
        static_cast<w4jit_dtype>(e.binary[i].dtype);
  }
  desc->epilogue.silu_mul = e.silu_mul ? 1 : 0;
  desc->act_quant = static_cast<w4jit_act_quant>(d.act_quant);
  desc->zero_point_domain =
      static_cast<w4jit_zero_point_domain>(d.zero_point_domain);
  desc->zero_point_dtype = static_cast<w4jit_dtype>(d.zero_point_dtype);
  desc->numerics = static_cast<w4jit_numerics>(d.numerics);
  desc->non_finite = static_cast<w4jit_non_finite>(d.non_finite);
}

w4jit_status w4jit_layer_create(const w4jit_layer_desc* desc,
                                const w4jit_weights* weights,
                                w4jit_layer** out_layer) {
  return w4jit_layer_create_with_scale_groups(desc, weights, 0, out_layer);
}

w4jit_status w4jit_layer_create_with_scale_groups(const w4jit_layer_desc* desc,
                                                  const w4jit_weights* weights,
                                                  int64_t scale_groups,
                                                  w4jit_layer** out_layer) {
  if (out_layer == nullptr) {
    return Fail(W4JIT_INVALID_ARGUMENT, "out_layer is null");
  }
  *out_layer = nullptr;
  if (desc == nullptr) return Fail(W4JIT_INVALID_ARGUMENT, "desc is null");
  if (weights == nullptr) {
    return Fail(W4JIT_INVALID_ARGUMENT, "weights is null");
  }
  try {
    w4jit::WeightsView view = ToCpp(*weights);
    view.scale_groups = scale_groups;
    auto layer = w4jit::Layer::Create(ToCpp(*desc), view);
    if (!layer.ok()) return FromStatus(layer.status());
    *out_layer = new w4jit_layer{*std::move(layer)};
    w4jit::internal::CApiClearError();
    return W4JIT_OK;
  } catch (const std::bad_alloc&) {
    return Fail(W4JIT_RESOURCE_EXHAUSTED, "out of memory creating the layer");
  } catch (const std::exception& e) {
    return Fail(W4JIT_INTERNAL, e.what());
  }
}

w4jit_status w4jit_layer_run(const w4jit_layer* layer, int64_t m, const void* x,
                             int64_t ldx, void* y, int64_t ldy) {
  if (layer == nullptr) return Fail(W4JIT_INVALID_ARGUMENT, "layer is null");
  try {
    return FromStatus(layer->impl->Run(m, x, ldx, y, ldy));
  } catch (const std::bad_alloc&) {
    return Fail(W4JIT_RESOURCE_EXHAUSTED, "out of memory running the layer");
  } catch (const std::exception& e) {
    return Fail(W4JIT_INTERNAL, e.what());
  }
}

w4jit_status w4jit_layer_run_epilogue(const w4jit_layer* layer, int64_t m,
                                      const void* x, int64_t ldx, void* y,
                                      int64_t ldy, const void* operand0,
                                      int64_t ld0, const void* operand1,
                                      int64_t ld1) {
  if (layer == nullptr) return Fail(W4JIT_INVALID_ARGUMENT, "layer is null");
  w4jit::EpilogueInputs inputs;
  inputs.data[0] = operand0;
  inputs.data[1] = operand1;
  inputs.ld[0] = ld0;
  inputs.ld[1] = ld1;
  try {
    return FromStatus(layer->impl->Run(m, x, ldx, y, ldy, inputs));
  } catch (const std::bad_alloc&) {
    return Fail(W4JIT_RESOURCE_EXHAUSTED, "out of memory running the layer");
  } catch (const std::exception& e) {
    return Fail(W4JIT_INTERNAL, e.what());
  }
}

w4jit_status w4jit_layer_packed_bytes(const w4jit_layer* layer,
                                      size_t* out_bytes) {
  if (layer == nullptr) return Fail(W4JIT_INVALID_ARGUMENT, "layer is null");
  if (out_bytes == nullptr) {
    return Fail(W4JIT_INVALID_ARGUMENT, "out_bytes is null");
  }
  *out_bytes = layer->impl->packed_bytes();
  return W4JIT_OK;
}

w4jit_status w4jit_layer_compute_at(const w4jit_layer* layer, int64_t m,
                                    w4jit_compute_op* out_op,
                                    int* out_vector_bits) {
  if (layer == nullptr) return Fail(W4JIT_INVALID_ARGUMENT, "layer is null");
  if (out_op == nullptr) return Fail(W4JIT_INVALID_ARGUMENT, "out_op is null");
  const w4jit::LayerCompute c = layer->impl->compute_at(m);
  *out_op = static_cast<w4jit_compute_op>(c.op);
  if (out_vector_bits != nullptr) *out_vector_bits = c.vector_bits;
  return W4JIT_OK;
}

void w4jit_layer_destroy(w4jit_layer* layer) { delete layer; }

w4jit_status w4jit_set_num_threads(int num_threads) {
  if (num_threads < 0) {
    return Fail(W4JIT_INVALID_ARGUMENT,
                "num_threads = " + std::to_string(num_threads) +
                    " must be >= 0 (0: default)");
  }
  w4jit::SetNumThreads(num_threads);
  return W4JIT_OK;
}

int w4jit_get_num_threads(void) { return w4jit::GetNumThreads(); }

w4jit_status w4jit_set_threading_backend(w4jit_threading backend) {
  switch (backend) {
    case W4JIT_THREADING_POOL:
      return FromStatus(
          w4jit::SetThreadingBackend(w4jit::ThreadingBackend::kPool));
    case W4JIT_THREADING_OPENMP:
      return FromStatus(
          w4jit::SetThreadingBackend(w4jit::ThreadingBackend::kOpenMP));
  }
  return Fail(W4JIT_INVALID_ARGUMENT,
              "threading backend " + std::to_string(static_cast<int>(backend)) +
                  " is not W4JIT_THREADING_POOL (0) or "
                  "W4JIT_THREADING_OPENMP (1)");
}

w4jit_threading w4jit_get_threading_backend(void) {
  return w4jit::GetThreadingBackend() == w4jit::ThreadingBackend::kOpenMP
             ? W4JIT_THREADING_OPENMP
             : W4JIT_THREADING_POOL;
}

w4jit_status w4jit_set_spin_microseconds(int us) {
  if (us < 0) {
    return Fail(W4JIT_INVALID_ARGUMENT,
                "spin microseconds = " + std::to_string(us) + " must be >= 0");
  }
  w4jit::SetSpinMicroseconds(us);
  return W4JIT_OK;
}

int w4jit_get_spin_microseconds(void) { return w4jit::GetSpinMicroseconds(); }

void w4jit_set_thread_pinning(int on) { w4jit::SetThreadPinning(on != 0); }

int w4jit_get_thread_pinning(void) { return w4jit::GetThreadPinning() ? 1 : 0; }

const char* w4jit_last_error(void) {
  return w4jit::internal::CApiLastError().c_str();
}

void w4jit_set_log_hook(w4jit_log_fn hook, void* user) {
  if (hook == nullptr) {
    w4jit::SetLogHook(nullptr);
    return;
  }
  w4jit::SetLogHook([hook, user](w4jit::LogLevel level, std::string_view m) {
    std::string text(m);
    hook(static_cast<int>(level), text.c_str(), user);
  });
}

w4jit_status w4jit_load_tuning_file(const char* path) {
  if (path == nullptr) return Fail(W4JIT_INVALID_ARGUMENT, "path is null");
  return FromStatus(w4jit::LoadTuningFile(path));
}

const char* w4jit_version(void) { return w4jit::Version(); }

}  // extern "C"
