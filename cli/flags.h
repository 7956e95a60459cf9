// The one flags library of the `w4jit` command line: every subcommand
// (info, bench, sweep, selftest) and the command dispatch define their
// options on a CLI11 app made by NewApp and parse with Parse, so that the
// syntax (--name=value or --name value), the generated --help and the
// errors are the same everywhere: an unknown option, a missing value and a
// bad value each come back as one InvalidArgumentError that names the
// option ("--m: '0' is not a positive integer (in '0')").
//
// CLI11 (Debian's libcli11-dev, header-only) rather than absl::flags:
// the four subcommands have option sets of their own, and the tests parse
// many argument lists in one process; CLI11 keeps its state per app,
// absl::flags in process-wide ABSL_FLAG globals. CLI11 reports through
// exceptions (CLI::ParseError); Parse catches them, none leaves it.
#ifndef W4JIT_CLI_FLAGS_H_
#define W4JIT_CLI_FLAGS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace w4jit::flags {

// An app for `name` ("w4jit bench"): -h/--help (checked before any value,
// so that it wins over a bad value beside it), a repeated option keeps its
// last value, and help in one format for all: "  --m=LIST   description
// (default 1,16)", each option's default from its default_str.
std::unique_ptr<CLI::App> NewApp(const std::string& name,
                                 const std::string& description);

// Parses `args` (those after the subcommand's name) into `app`, running
// the options' callbacks in the order the options were defined. Returns
// true when --help was given (print app.help()), false when parsed, or an
// InvalidArgumentError: CLI11's message, which names the option, and a
// pointer to --help.
absl::StatusOr<bool> Parse(CLI::App& app, int argc, const char* const* argv);
absl::StatusOr<bool> Parse(CLI::App& app, std::vector<std::string> args);

// Turns an option's text into a value, or an error that says what is wrong
// with the text (CLI11 puts the option's name in front).
template <typename T>
using Parser = std::function<absl::StatusOr<T>(const std::string&)>;

// Adds `--name=TYPE`: `parse` turns the given text into a T, `use` takes
// it. A parse error is thrown as CLI11's ValidationError, so that it takes
// the library's error path ("--name: message").
template <typename T>
CLI::Option* AddOption(CLI::App& app, const std::string& name,
                       const std::string& type_name,
                       const std::string& description, Parser<T> parse,
                       std::function<void(T)> use) {
  return app
      .add_option_function<std::string>(
          name,
          [name, parse = std::move(parse),
           use = std::move(use)](const std::string& text) {
            absl::StatusOr<T> value = parse(text);
            if (!value.ok()) {
              throw CLI::ValidationError(name,
                                         std::string(value.status().message()));
            }
            use(*std::move(value));
          },
          description)
      ->type_name(type_name);
}

// As AddOption, for an option that may be given more than once: `use`
// gets every value, in command-line order.
template <typename T>
CLI::Option* AddRepeatedOption(CLI::App& app, const std::string& name,
                               const std::string& type_name,
                               const std::string& description, Parser<T> parse,
                               std::function<void(std::vector<T>)> use) {
  return app
      .add_option_function<std::vector<std::string>>(
          name,
          [name, parse = std::move(parse),
           use = std::move(use)](const std::vector<std::string>& texts) {
            std::vector<T> values;
            for (const std::string& text : texts) {
              absl::StatusOr<T> value = parse(text);
              if (!value.ok()) {
                throw CLI::ValidationError(
                    name, std::string(value.status().message()));
              }
              values.push_back(*std::move(value));
            }
            use(std::move(values));
          },
          description)
      ->type_name(type_name)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
}

// Parsers of the value kinds the subcommands share. Their messages quote
// the text and say what was wanted.
absl::StatusOr<int64_t> Integer(const std::string& text);
absl::StatusOr<int64_t> NonNegativeInteger(const std::string& text);
absl::StatusOr<int64_t> PositiveInteger(const std::string& text);
absl::StatusOr<double> NonNegativeNumber(const std::string& text);
absl::StatusOr<double> PositiveNumber(const std::string& text);
absl::StatusOr<std::string> NonEmpty(const std::string& text);
// "1,16,256": comma-separated integers, each > 0.
absl::StatusOr<std::vector<int64_t>> PositiveIntegerList(
    const std::string& text);
// "a,b": comma-separated, none empty.
absl::StatusOr<std::vector<std::string>> NameList(const std::string& text);
// One of `names`.
Parser<std::string> OneOf(std::vector<std::string> names);
// A comma-separated list of `names` (repeats allowed, none empty).
Parser<std::vector<std::string>> ListOf(std::vector<std::string> names);

// "a, b or c".
std::string Alternatives(const std::vector<std::string>& names);

}  // namespace w4jit::flags

#endif  // W4JIT_CLI_FLAGS_H_
