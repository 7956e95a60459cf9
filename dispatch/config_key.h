// A generator's config is its kernel-cache key. Each config lists every
// field once, in
//   template <class Self> static auto Fields(Self& c) {
//     return std::tie(c.isa, c.n, ...);
//   }
// and says with Canonical() which fields do not change the code in a given
// config (they are set to one value there, so that equal code is one
// cache entry):
//   Config Canonical() const;
// ConfigKeyEqual and ConfigKeyHash then compare and hash the canonical
// fields; a field the list leaves out fails to compile (the
// static_assert in CheckConfigFieldsListed against the struct's member
// count), and tests/config_key_test.cc flips each listed field alone and
// expects a different key, so a Canonical() that drops one fails there.
// Before this, a hand-written mapper copied each config into a flat key,
// and a field it forgot made two kernels share one cache entry unseen.
// Beside Fields(), each config's
//   KernelName NameParts() const;
// fills the parts of its kernel name (dispatch/kernel_key.h: one meaning
// per part) from the canonical config, and name() is NameParts().str(); the
// same test expects every flip to change the name, and equal keys to have
// one name.
#ifndef W4JIT_DISPATCH_CONFIG_KEY_H_
#define W4JIT_DISPATCH_CONFIG_KEY_H_

#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>

#include "dispatch/kernel_key.h"

namespace w4jit::internal {

// How a field enters a key: as itself, or, for an Epilogue, as what the
// code is compiled from (KeyPart(const Epilogue&) in dispatch/kernel_key.h:
// its EpilogueCode and a swigluoai gate's constants).
template <class T>
const T& KeyPart(const T& field) {
  return field;
}

template <class Config>
auto ConfigKey(const Config& config) {
  const Config canonical = config.Canonical();
  return std::apply(
      [](const auto&... field) { return std::make_tuple(KeyPart(field)...); },
      Config::Fields(canonical));
}

template <class Config>
bool ConfigKeyEqual(const Config& a, const Config& b) {
  return ConfigKey(a) == ConfigKey(b);
}

template <class H, class Config>
H ConfigKeyHash(H h, const Config& config) {
  return H::combine(std::move(h), ConfigKey(config));
}

namespace config_key_internal {

// Converts to any field type: T{AnyField{}, ...} compiles for as many
// initializers as the aggregate T has members (and no more).
struct AnyField {
  template <class T>
  operator T() const;  // NOLINT: implicit on purpose; never defined
};

template <class T, class... A>
auto CanInit(int) -> decltype(void(T{std::declval<A>()...}), std::true_type{});
template <class T, class... A>
std::false_type CanInit(...);

template <class T, class... A>
constexpr int CountMembers() {
  if constexpr (sizeof...(A) > 64) {
    return -1;
  } else if constexpr (decltype(CanInit<T, A..., AnyField>(0))::value) {
    return CountMembers<T, A..., AnyField>();
  } else {
    return static_cast<int>(sizeof...(A));
  }
}

}  // namespace config_key_internal

// The number of members of the aggregate T.
template <class T>
constexpr int AggregateMemberCount() {
  return config_key_internal::CountMembers<T>();
}

// Fails to compile when Config::Fields leaves out a member of Config.
template <class Config>
constexpr bool CheckConfigFieldsListed() {
  constexpr int listed =
      static_cast<int>(std::tuple_size_v<decltype(Config::Fields(
                           std::declval<const Config&>()))>);
  static_assert(listed == AggregateMemberCount<Config>(),
                "a config member is missing from its Fields() list: every "
                "member must be part of the kernel-cache key");
  return true;
}

}  // namespace w4jit::internal

#endif  // W4JIT_DISPATCH_CONFIG_KEY_H_
