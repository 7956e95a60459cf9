// What every C API file shares: the thread's last error, Status to
// w4jit_status, reading C enums safely, and the weights view conversion.
#ifndef W4JIT_RUNTIME_C_API_C_API_STATUS_H_
#define W4JIT_RUNTIME_C_API_C_API_STATUS_H_

#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "w4jit/types.hpp"
#include "w4jit/w4jit.h"

namespace w4jit::internal {

// Sets the thread's last error and returns `code`.
w4jit_status CApiFail(w4jit_status code, std::string message);
// OK clears the last error; anything else sets it.
w4jit_status CApiFromStatus(const absl::Status& s);
// The thread's last error ("" if none).
const std::string& CApiLastError();
void CApiClearError();

// The int a C caller stored in an enum field. C allows any int there, but
// in C++ loading a value outside the enumerators' range from a C enum is
// undefined, so the bytes are read as an int (the C++ side then validates
// the value and names it if it is bad).
template <class E>
int RawEnum(const E& e) {
  static_assert(sizeof(E) == sizeof(int), "C enums are int-sized");
  int v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

WeightsView ToCppWeights(const w4jit_weights& w);

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_C_API_C_API_STATUS_H_
