// The small base every JIT generator derives from: ABI registers, the
// callee-saved register protocol, error checking on generation, and
// finalisation that flips the code pages from RW to RX (never RWX).
#ifndef W4JIT_JIT_GENERATOR_H_
#define W4JIT_JIT_GENERATOR_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "xbyak/xbyak.h"

namespace w4jit::internal {

class Generator : public Xbyak::CodeGenerator {
 public:
  // System V argument registers. Kernels take one pointer to an argument
  // struct (runtime sizes and pointers are read through offsets), so
  // usually only kArg1 is used.
  static constexpr Xbyak::Operand::Code kArg1 = Xbyak::Operand::RDI;
  static constexpr Xbyak::Operand::Code kArg2 = Xbyak::Operand::RSI;
  static constexpr Xbyak::Operand::Code kArg3 = Xbyak::Operand::RDX;
  static constexpr Xbyak::Operand::Code kArg4 = Xbyak::Operand::RCX;

  explicit Generator(std::string name, size_t max_code_bytes = 256 * 1024);
  ~Generator() override = default;

  // Emits the code (Generate()), checks for Xbyak errors and unresolved
  // labels, makes the pages read+execute, and registers the code with
  // W4JIT_PERF_MAP / W4JIT_DUMP_DIR. Call once.
  absl::Status Create();

  const std::string& name() const { return name_; }
  bool created() const { return created_; }
  template <class Fn>
  Fn entry() const {
    return reinterpret_cast<Fn>(const_cast<uint8_t*>(getCode()));
  }

 protected:
  // Subclasses emit their whole function here, normally between
  // Preamble() and Postamble().
  virtual void Generate() = 0;

  // Pushes the callee-saved GPRs (rbx, rbp, r12-r15). After it, every GPR
  // except rsp may be used. Postamble restores them, clears the upper
  // vector state (vzeroupper) and returns.
  void Preamble();
  void Postamble();

 private:
  std::string name_;
  bool created_ = false;
};

}  // namespace w4jit::internal

#endif  // W4JIT_JIT_GENERATOR_H_
