// MoeLayer's NonFinitePolicy on the reference and every JIT tier this CPU
// runs, both modes: under kPropagate a token with a non-finite routing
// weight, NaN / Inf in its x row or an expert id outside [0, E) gets an
// all-NaN row of y (also with accumulate), its padding is untouched, and
// the other tokens' rows are bit for bit those of a call without it (and
// within the oracle's bound); under kError (the default) each is an error
// naming the slot or element and the value, with y untouched; the
// per-call MoeRunOptions::non_finite overrides the desc.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/memory.h"
#include "base/numeric.h"
#include "check/layer_check.h"
#include "check/moe_check.h"
#include "dispatch/cpu_profile.h"
#include "dispatch/kernel_key.h"
#include "gtest/gtest.h"
#include "runtime/moe/moe_experts.h"
#include "tests/util/guard_pages.h"
#include "tests/util/isa.h"
#include "w4jit/moe.hpp"

namespace w4jit::testing {
namespace {

using internal::IsaTier;

struct Case {
  Mode mode;
  IsaTier tier;
  DType out;
};

// A token's bad input, applied to one row of the call's tensors.
enum class Bad { kNone, kNanWeight, kInfWeight, kIdHigh, kIdLow, kNanX, kInfX };

struct Call {
  int64_t t = 0, k = 0, ldx = 0, ldy = 0;
  std::vector<uint8_t> x, y;
  std::vector<int32_t> ids;
  std::vector<float> w;
};

class MoeNonFinite : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (!StartIsaRun(GetParam().tier)) {
      GTEST_SKIP() << WhyCannotRunTier(GetParam().tier);
    }
    desc_.experts = 6;
    desc_.hidden = 128;
    desc_.intermediate = 96;
    desc_.group_size = 32;
    desc_.mode = GetParam().mode;
    desc_.out_dtype = GetParam().out;
    auto c =
        check::RandomMoeCheckpoint(desc_, WeightFormat::kCompressedTensors, 17);
    ASSERT_TRUE(c.ok()) << c.status();
    ckpt_ = *std::move(c);
    internal::ScopedIsaCap cap(
        GetParam().tier == IsaTier::kRef ? IsaTier::kAvx2 : GetParam().tier);
    MoeOptions options;
    options.force_reference = GetParam().tier == IsaTier::kRef;
    auto layer = MoeLayer::Create(desc_, ckpt_.PerExpert(), options);
    ASSERT_TRUE(layer.ok()) << layer.status();
    layer_ = *std::move(layer);
    MoeDesc d = desc_;
    d.non_finite = NonFinitePolicy::kPropagate;
    layer = MoeLayer::Create(d, ckpt_.PerExpert(), options);
    ASSERT_TRUE(layer.ok()) << layer.status();
    propagating_ = *std::move(layer);
  }

  // t tokens of k distinct experts, x rows padded with NaN past H, y
  // random (for accumulate) with padding.
  Call MakeCall(int64_t t, int64_t k, uint32_t seed) const {
    Call c;
    c.t = t;
    c.k = k;
    c.ldx = desc_.hidden + 3;
    c.ldy = desc_.hidden + 5;
    const LayerDesc d13 = internal::MoeW13Desc(desc_);
    c.x = check::RandomActivations(d13, t, c.ldx, seed);
    LayerDesc dy = d13;
    dy.act_dtype = desc_.out_dtype;
    c.y = check::RandomActivations(dy, t, c.ldy, seed + 1);
    for (int64_t i = 0; i < t; ++i) {
      for (int64_t j = 0; j < k; ++j) {
        c.ids.push_back(
            static_cast<int32_t>((i * 5 + j * 2 + seed) % desc_.experts));
        c.w.push_back(0.25f + 0.125f * static_cast<float>((i + j) % 5));
      }
    }
    return c;
  }

  void Spoil(Call* c, int64_t i, Bad bad) const {
    const LayerDesc d13 = internal::MoeW13Desc(desc_);
    const int64_t j = c->k - 1;
    switch (bad) {
      case Bad::kNone:
        break;
      case Bad::kNanWeight:
        c->w[i * c->k + j] = std::nanf("");
        break;
      case Bad::kInfWeight:
        c->w[i * c->k + j] = INFINITY;
        break;
      case Bad::kIdHigh:
        c->ids[i * c->k + j] = static_cast<int32_t>(desc_.experts);
        break;
      case Bad::kIdLow:
        c->ids[i * c->k] = -1;
        break;
      case Bad::kNanX:
        check::SetActivation(d13, &c->x, c->ldx, i, 7, std::nanf(""));
        break;
      case Bad::kInfX:
        check::SetActivation(d13, &c->x, c->ldx, i, desc_.hidden - 1,
                             -INFINITY);
        break;
    }
  }

  // On the kError layer, or with `propagating` the kPropagate one.
  absl::Status Run(Call* c, const MoeRunOptions& o,
                   bool propagating = false) const {
    const MoeLayer& l = propagating ? *propagating_ : *layer_;
    return l.Run(c->t, c->x.data(), c->ldx, c->ids.data(),
                 o.unweighted ? nullptr : c->w.data(), c->k, c->y.data(),
                 c->ldy, o);
  }

  // The tokens of `c` whose `bad[i]` is kNone (or, unweighted, a bad
  // weight, which is then not read), as a call of their own.
  Call Subset(const Call& c, const std::vector<Bad>& bad,
              bool unweighted) const;
  // kPropagate on c with bad[i] for token i (the desc's, or with
  // o.non_finite set the per-call one on the kError layer): checks NaN
  // rows, untouched padding, and the other rows against Subset's run and
  // the oracle.
  void CheckPropagate(const Call& c, const std::vector<Bad>& bad,
                      MoeRunOptions o) const;

  MoeDesc desc_;
  check::MoeCheckpoint ckpt_;
  std::unique_ptr<MoeLayer> layer_;        // MoeDesc::non_finite = kError
  std::unique_ptr<MoeLayer> propagating_;  // kPropagate
};

bool Skipped(Bad b, bool unweighted) {
  if (unweighted && (b == Bad::kNanWeight || b == Bad::kInfWeight)) {
    return false;
  }
  return b != Bad::kNone;
}

Call MoeNonFinite::Subset(const Call& c, const std::vector<Bad>& bad,
                          bool unweighted) const {
  const size_t xs = internal::DTypeSize(desc_.act_dtype);
  const size_t ys = internal::DTypeSize(desc_.out_dtype);
  Call s = c;
  s.t = 0;
  s.x.clear();
  s.y.clear();
  s.ids.clear();
  s.w.clear();
  for (int64_t i = 0; i < c.t; ++i) {
    if (Skipped(bad[i], unweighted)) continue;
    ++s.t;
    s.x.insert(s.x.end(), c.x.begin() + i * c.ldx * xs,
               c.x.begin() + (i + 1) * c.ldx * xs);
    s.y.insert(s.y.end(), c.y.begin() + i * c.ldy * ys,
               c.y.begin() + (i + 1) * c.ldy * ys);
    s.ids.insert(s.ids.end(), c.ids.begin() + i * c.k,
                 c.ids.begin() + (i + 1) * c.k);
    s.w.insert(s.w.end(), c.w.begin() + i * c.k, c.w.begin() + (i + 1) * c.k);
  }
  return s;
}

void MoeNonFinite::CheckPropagate(const Call& c, const std::vector<Bad>& bad,
                                  MoeRunOptions o) const {
  SCOPED_TRACE(absl::StrCat("t=", c.t, " accumulate=", o.accumulate,
                            " unweighted=", o.unweighted));
  const size_t ys = internal::DTypeSize(desc_.out_dtype);
  Call got = c;
  for (int64_t i = 0; i < c.t; ++i) Spoil(&got, i, bad[i]);
  const bool by_desc = !o.non_finite.has_value();
  ASSERT_TRUE(Run(&got, o, by_desc).ok());
  Call want = Subset(c, bad, o.unweighted);
  const std::vector<uint8_t> want_before = want.y;
  if (want.t > 0) {
    ASSERT_TRUE(Run(&want, o, by_desc).ok());
  }
  int64_t r = 0;
  for (int64_t i = 0; i < c.t; ++i) {
    const uint8_t* row = got.y.data() + i * c.ldy * ys;
    // Padding past H keeps what the caller had.
    ASSERT_EQ(std::memcmp(row + desc_.hidden * ys,
                          c.y.data() + (i * c.ldy + desc_.hidden) * ys,
                          (c.ldy - desc_.hidden) * ys),
              0)
        << "padding of row " << i;
    if (Skipped(bad[i], o.unweighted)) {
      for (int64_t q = 0; q < desc_.hidden; ++q) {
        ASSERT_TRUE(std::isnan(internal::LoadAsF32(row, desc_.out_dtype, q)))
            << "row " << i << " col " << q;
      }
    } else {
      ASSERT_EQ(
          std::memcmp(row, want.y.data() + r * c.ldy * ys, desc_.hidden * ys),
          0)
          << "row " << i << " differs from the call without the bad tokens";
      ++r;
    }
  }
  if (want.t == 0) return;
  const check::MoeExpected oracle =
      check::MoeOracle(desc_, ckpt_, want.t, want.x.data(), want.ldx,
                       want.ids.data(), o.unweighted ? nullptr : want.w.data(),
                       want.k, want_before.data(), want.ldy, o.accumulate);
  EXPECT_EQ(check::CompareMoe(desc_, oracle, want.t, want.y.data(), want.ldy),
            "");
}

TEST_P(MoeNonFinite, PropagateGivesNaNRowsOnly) {
  const std::vector<Bad> bad = {Bad::kNone,      Bad::kNanWeight, Bad::kNone,
                                Bad::kInfWeight, Bad::kIdHigh,    Bad::kIdLow,
                                Bad::kNanX,      Bad::kNone,      Bad::kInfX};
  MoeRunOptions o;
  o.non_finite = NonFinitePolicy::kPropagate;
  for (bool accumulate : {false, true}) {
    for (bool unweighted : {false, true}) {
      o.accumulate = accumulate;
      o.unweighted = unweighted;
      CheckPropagate(MakeCall(9, 2, 3), bad, o);
    }
  }
  o = {};  // the desc's kPropagate from here on
  // One token (its rows are x itself): bad and good; every token bad.
  for (Bad b : {Bad::kNone, Bad::kNanWeight, Bad::kIdHigh, Bad::kInfX}) {
    CheckPropagate(MakeCall(1, 3, 5), {b}, o);
  }
  CheckPropagate(MakeCall(3, 1, 7), {Bad::kIdLow, Bad::kNanX, Bad::kNanWeight},
                 o);
}

TEST_P(MoeNonFinite, ErrorNamesTheValueAndWritesNothing) {
  ASSERT_EQ(MoeDesc{}.non_finite, NonFinitePolicy::kError);
  struct Expect {
    Bad bad;
    int64_t token;
    std::string message;
  };
  const Expect cases[] = {
      {Bad::kNanWeight, 2, "topk_weights[2, 1] = nan is not finite"},
      {Bad::kInfWeight, 0, "topk_weights[0, 1] = inf is not finite"},
      {Bad::kIdHigh, 3, "topk_ids[3, 1] = 6 is not an expert id in [0, 6)"},
      {Bad::kIdLow, 1, "topk_ids[1, 0] = -1 is not an expert id"},
      {Bad::kNanX, 2, "x[2, 7] = nan is not finite"},
      {Bad::kInfX, 3, "x[3, 127] = -inf is not finite"},
  };
  for (const Expect& e : cases) {
    Call c = MakeCall(4, 2, 9);
    Spoil(&c, e.token, e.bad);
    const std::vector<uint8_t> before = c.y;
    const absl::Status s = Run(&c, {});
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << e.message;
    EXPECT_NE(s.message().find(e.message), std::string::npos) << s;
    EXPECT_EQ(c.y, before) << e.message;
    // The per-call policy: propagate on an erroring layer.
    MoeRunOptions o;
    o.non_finite = NonFinitePolicy::kPropagate;
    EXPECT_TRUE(Run(&c, o).ok()) << e.message;
  }
  // A bad id and a bad x in one call: ids and weights are checked first.
  Call c = MakeCall(4, 2, 9);
  Spoil(&c, 0, Bad::kNanX);
  Spoil(&c, 3, Bad::kIdHigh);
  EXPECT_NE(Run(&c, {}).message().find("topk_ids[3, 1]"), std::string::npos);
  // A bad policy value is an error naming it.
  MoeRunOptions o;
  o.non_finite = static_cast<NonFinitePolicy>(5);
  EXPECT_NE(Run(&c, o).message().find("MoeRunOptions::non_finite = 5"),
            std::string::npos);
  MoeDesc d = desc_;
  d.non_finite = static_cast<NonFinitePolicy>(3);
  EXPECT_NE(
      std::string(MoeLayer::Create(d, ckpt_.PerExpert()).status().message())
          .find("non_finite = 3"),
      std::string::npos);
}

// kPropagate with bad tokens of every kind among good ones, the layer
// built and run with every buffer it allocates (packed weights, gathered
// rows, intermediate, slot outputs) against a PROT_NONE page, and x, the
// routing and y too: a skipped slot's id never addresses anything.
TEST_P(MoeNonFinite, PropagateAgainstGuardPages) {
  for (Flush flush : {Flush::kFront, Flush::kBack}) {
    GuardPageAllocator& guard = GuardPageAllocator::Instance();
    guard.set_flush(flush);
    internal::ScopedAllocatorHook hook(&guard);
    internal::ScopedIsaCap cap(
        GetParam().tier == IsaTier::kRef ? IsaTier::kAvx2 : GetParam().tier);
    MoeOptions options;
    options.force_reference = GetParam().tier == IsaTier::kRef;
    MoeDesc d = desc_;
    d.non_finite = NonFinitePolicy::kPropagate;
    auto layer = MoeLayer::Create(d, ckpt_.Stacked(), options);
    ASSERT_TRUE(layer.ok()) << layer.status();
    const Bad kinds[] = {Bad::kIdHigh, Bad::kNanWeight, Bad::kInfX,
                         Bad::kIdLow,  Bad::kInfWeight, Bad::kNanX};
    for (int64_t t : {1, 5, 33}) {
      Call c = MakeCall(t, 2, 11);
      for (int64_t i = 0; i < t; i += 3) Spoil(&c, i, kinds[(i / 3) % 6]);
      const size_t ys = internal::DTypeSize(d.out_dtype);
      GuardedBuffer gi(c.ids.size() * 4, flush, 4),
          gw(c.w.size() * 4, flush, 4), gx(c.x.size(), flush, 2),
          gy(c.y.size(), flush, 2);
      std::memcpy(gi.data(), c.ids.data(), c.ids.size() * 4);
      std::memcpy(gw.data(), c.w.data(), c.w.size() * 4);
      std::memcpy(gx.data(), c.x.data(), c.x.size());
      ASSERT_TRUE(
          (*layer)
              ->Run(t, gx.data(), c.ldx, static_cast<const int32_t*>(gi.data()),
                    static_cast<const float*>(gw.data()), c.k, gy.data(), c.ldy)
              .ok());
      for (int64_t i = 0; i < t; ++i) {
        const float v = internal::LoadAsF32(
            static_cast<const uint8_t*>(gy.data()) + i * c.ldy * ys,
            d.out_dtype, 0);
        EXPECT_EQ(std::isnan(v), i % 3 == 0) << "t=" << t << " row " << i;
      }
    }
  }
}

std::vector<Case> AllCases() {
  std::vector<Case> out;
  for (Mode m : {Mode::kW4A16, Mode::kDA8W4}) {
    for (IsaTier t : IsaTiersWithRef()) {
      out.push_back({m, t, t == IsaTier::kRef ? DType::kBF16 : DType::kF32});
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(ModesAndTiers, MoeNonFinite,
                         ::testing::ValuesIn(AllCases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return absl::StrCat(
                               info.param.mode == Mode::kW4A16 ? "W4a16"
                                                               : "Da8w4",
                               "_", internal::IsaSuffix(info.param.tier), "_",
                               ToString(info.param.out));
                         });

}  // namespace
}  // namespace w4jit::testing
