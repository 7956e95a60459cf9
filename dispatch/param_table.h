// A kernel family's tunable parameters as one table: each row a tuning
// name, the field of the family's Params struct it sets and the range of
// values it takes. The table drives everything that reads parameters by
// name: applying a tuning entry or a defaults row (ApplyParamTable, then
// the family's check), the tests of the rows and of the sweep's
// candidates, and the parameter tables of docs/tuning.md (a test compares
// them). A name added to the table is then known everywhere at once.
//
// The test override (ScopedParamsOverride) edits the resolved parameters
// of a family while it lives; ResolveParams is the one sequence both
// families resolve with: defaults, the tuning entry (applied and checked,
// or ignored with one warning), the override.
#ifndef W4JIT_DISPATCH_PARAM_TABLE_H_
#define W4JIT_DISPATCH_PARAM_TABLE_H_

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "base/log.h"
#include "dispatch/cpu_profile.h"
#include "dispatch/kernel_key.h"
#include "dispatch/tuning.h"

namespace w4jit::internal {

template <class P>
struct ParamField {
  const char* name;  // the tuning name
  // The field it sets; a Flavor takes its enum value, a bool 0 or 1.
  std::variant<int P::*, int64_t P::*, bool P::*, Flavor P::*> field;
  int64_t min;
  int64_t max;
  // Values above max mean max ("never" thresholds) instead of an error.
  bool saturate = false;
};

// The field's value as a tuning file writes it.
template <class P>
int64_t ParamValue(const ParamField<P>& f, const P& p) {
  return std::visit(
      [&](auto member) { return static_cast<int64_t>(p.*member); }, f.field);
}

// `base` with the entry's values set, each name looked up in `table` and
// range-checked; an unknown name or a value out of range is an error that
// names it (nothing applied). The family's check is the caller's.
template <class P>
absl::StatusOr<P> ApplyParamTable(absl::Span<const ParamField<P>> table,
                                  const char* family, const ParamMap& map,
                                  P base) {
  for (const auto& [name, value] : map) {
    const ParamField<P>* f = nullptr;
    for (const ParamField<P>& row : table) {
      if (name == row.name) f = &row;
    }
    if (f == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown ", family, " parameter \"", name, "\""));
    }
    int64_t v = value;
    if (f->saturate && v > f->max) v = f->max;
    if (v < f->min || v > f->max) {
      return absl::InvalidArgumentError(
          absl::StrCat(family, " parameter ", name, " = ", value,
                       " is not in [", f->min, ", ", f->max, "]"));
    }
    std::visit(
        [&](auto member) {
          using T = std::remove_reference_t<decltype(base.*member)>;
          base.*member = static_cast<T>(v);
        },
        f->field);
  }
  return base;
}

// Test hook: while one lives, the family's resolved parameters are edited
// by `edit` (after the defaults and the tuning entry).
template <class P>
class ScopedParamsOverride {
 public:
  explicit ScopedParamsOverride(std::function<void(P*)> edit) {
    State& s = GetState();
    std::lock_guard<std::mutex> lock(s.mu);
    previous_ = std::move(s.edit);
    s.edit = std::move(edit);
  }
  ~ScopedParamsOverride() {
    State& s = GetState();
    std::lock_guard<std::mutex> lock(s.mu);
    s.edit = std::move(previous_);
  }
  ScopedParamsOverride(const ScopedParamsOverride&) = delete;
  ScopedParamsOverride& operator=(const ScopedParamsOverride&) = delete;

  // The active edit, if any, applied to `params`.
  static void Apply(P* params) {
    State& s = GetState();
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.edit) s.edit(params);
  }

 private:
  struct State {
    std::mutex mu;
    std::function<void(P*)> edit;
  };
  static State& GetState() {
    static State* state = new State;  // never destroyed
    return *state;
  }
  std::function<void(P*)> previous_;
};

// A family: its name in messages, its table, and its check of what a tier
// can run (the plans' registers, the widths).
template <class P>
struct ParamFamily {
  const char* name;
  absl::Span<const ParamField<P>> table;
  absl::Status (*check)(const P& params, IsaTier isa);
};

// The family's one Apply: the table (names, ranges), then the check; an
// error applies nothing.
template <class P>
absl::StatusOr<P> ApplyParams(const ParamFamily<P>& family, const ParamMap& map,
                              const P& base, IsaTier isa) {
  absl::StatusOr<P> p = ApplyParamTable(family.table, family.name, map, base);
  if (!p.ok()) return p.status();
  if (absl::Status s = family.check(*p, isa); !s.ok()) return s;
  return p;
}

// The one resolution sequence: `defaults`, the layer's tuning entry through
// ApplyParams (an entry that fails is ignored with one warning), then the
// test override.
template <class P>
P ResolveParams(const ParamFamily<P>& family, const P& defaults,
                const std::optional<ParamMap>& tuned, IsaTier isa) {
  P p = defaults;
  if (tuned) {
    absl::StatusOr<P> applied = ApplyParams(family, *tuned, defaults, isa);
    if (applied.ok()) {
      p = *std::move(applied);
    } else {
      Log(LogLevel::kWarning,
          absl::StrCat("ignoring the ", family.name, " tuning entry (",
                       applied.status().message(), "); using the defaults"));
    }
  }
  ScopedParamsOverride<P>::Apply(&p);
  return p;
}

}  // namespace w4jit::internal

#endif  // W4JIT_DISPATCH_PARAM_TABLE_H_
