#include "perf/gbench/prepared_layers.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "perf/lib/bench_data.h"

namespace w4jit::perf {
namespace {

std::string Key(const LayerShape& s) {
  return absl::StrCat(s.name, "/", s.n, "x", s.k, "/g", s.group_size, "/",
                      s.has_bias);
}

}  // namespace

absl::StatusOr<const PreparedWeights*> WeightsFor(const LayerShape& shape) {
  static std::string key;
  static std::unique_ptr<PreparedWeights> cached;
  if (cached != nullptr && key == Key(shape)) return cached.get();
  cached.reset();
  auto p = std::make_unique<PreparedWeights>();
  p->desc = BenchDesc(shape, Mode::kW4A16);
  p->weights = BenchWeights(p->desc, 0x5EEDull);
  absl::StatusOr<internal::OwnedCheckpoint> ckpt =
      internal::ExportWeights(p->desc, p->weights, WeightFormat::kUnpackedInt8);
  if (!ckpt.ok()) return ckpt.status();
  p->checkpoint = *std::move(ckpt);
  key = Key(shape);
  cached = std::move(p);
  return cached.get();
}

absl::StatusOr<const Layer*> LayerFor(const LayerShape& shape, Mode mode) {
  static std::string key;
  static std::unique_ptr<Layer> cached;
  const std::string want = absl::StrCat(Key(shape), "/", ToString(mode));
  if (cached != nullptr && key == want) return cached.get();
  cached.reset();
  absl::StatusOr<const PreparedWeights*> w = WeightsFor(shape);
  if (!w.ok()) return w.status();
  LayerDesc desc = (*w)->desc;
  desc.mode = mode;
  absl::StatusOr<std::unique_ptr<Layer>> layer =
      Layer::Create(desc, (*w)->checkpoint.view());
  if (!layer.ok()) return layer.status();
  key = want;
  cached = *std::move(layer);
  return cached.get();
}

}  // namespace w4jit::perf
