#include "cli/flags.h"

#include <algorithm>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace w4jit::flags {
namespace {

constexpr size_t kWidth = 79;       // of a help line
constexpr size_t kNameColumn = 26;  // where descriptions start

// Breaks `text` into lines of at most `width` characters at spaces (a
// longer word keeps its own line); '\n' in `text` starts a new line.
std::string Wrap(const std::string& text, size_t width) {
  std::string out;
  bool first_paragraph = true;
  for (absl::string_view paragraph : absl::StrSplit(text, '\n')) {
    if (!first_paragraph) out += '\n';
    first_paragraph = false;
    size_t used = 0;
    for (absl::string_view word :
         absl::StrSplit(paragraph, ' ', absl::SkipEmpty())) {
      if (used > 0 && used + 1 + word.size() > width) {
        out += '\n';
        used = 0;
      } else if (used > 0) {
        out += ' ';
        ++used;
      }
      absl::StrAppend(&out, word);
      used += word.size();
    }
  }
  return out;
}

// CLI11's formatter with the house layout: "usage: NAME [options]", the
// description wrapped, then "  --name=TYPE   description (default X)".
class HelpFormatter : public CLI::Formatter {
 public:
  HelpFormatter() { column_width(kNameColumn); }

  std::string make_help(const CLI::App* app, std::string name,
                        CLI::AppFormatMode mode) const override {
    if (mode == CLI::AppFormatMode::Sub) return make_expanded(app);
    std::string out = absl::StrCat("usage: ", name);
    if (!app->get_options(
                [](const CLI::Option* o) { return o->nonpositional(); })
             .empty()) {
      out += " [options]";
    }
    const bool has_subcommands = !app->get_subcommands({}).empty();
    if (has_subcommands) out += " <command> [options]";
    out += "\n\n";
    if (!app->get_description().empty()) {
      absl::StrAppend(&out, Wrap(app->get_description(), kWidth), "\n\n");
    }
    if (has_subcommands) {
      out += "commands:\n";
      for (const CLI::App* sub : app->get_subcommands({})) {
        std::ostringstream line;
        CLI::detail::format_help(
            line, sub->get_name(),
            Wrap(sub->get_description(), kWidth - kNameColumn), kNameColumn);
        out += line.str();
      }
      out += "\n";
    }
    const std::vector<const CLI::Option*> options = app->get_options(
        [](const CLI::Option* o) { return o->nonpositional(); });
    if (!options.empty()) {
      out += "options:\n";
      for (const CLI::Option* opt : options) out += make_option(opt, false);
    }
    const std::string footer = make_footer(app);
    if (!footer.empty()) absl::StrAppend(&out, "\n", footer);
    return out;
  }

  std::string make_option_opts(const CLI::Option* opt) const override {
    const std::string& type = opt->get_type_name();
    return type.empty() ? "" : "=" + type;  // a flag has none
  }

  std::string make_option_desc(const CLI::Option* opt) const override {
    std::string text = opt->get_description();
    if (!opt->get_default_str().empty()) {
      absl::StrAppend(&text, " (default ", opt->get_default_str(), ")");
    }
    return Wrap(text, kWidth - kNameColumn);
  }
};

}  // namespace

std::unique_ptr<CLI::App> NewApp(const std::string& name,
                                 const std::string& description) {
  auto app = std::make_unique<CLI::App>(description, name);
  app->formatter(std::make_shared<HelpFormatter>());
  app->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  // CLI11's help flag is looked at after every option's callback, so that
  // a bad value beside --help would be reported instead of the help. As
  // the first option defined, this one's callback runs first.
  app->set_help_flag();
  app->add_flag_callback(
      "-h,--help", [] { throw CLI::CallForHelp(); }, "this text");
  return app;
}

absl::StatusOr<bool> Parse(CLI::App& app, std::vector<std::string> args) {
  std::reverse(args.begin(), args.end());  // CLI11 takes them back to front
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp&) {
    return true;
  } catch (const CLI::ParseError& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(e.what(), " (see ", app.get_name(), " --help)"));
  }
  return false;
}

absl::StatusOr<bool> Parse(CLI::App& app, int argc, const char* const* argv) {
  return Parse(app, std::vector<std::string>(argv, argv + argc));
}

absl::StatusOr<int64_t> Integer(const std::string& text) {
  int64_t v = 0;
  if (!absl::SimpleAtoi(text, &v)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' is not an integer"));
  }
  return v;
}

absl::StatusOr<int64_t> NonNegativeInteger(const std::string& text) {
  int64_t v = 0;
  if (!absl::SimpleAtoi(text, &v) || v < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' is not a non-negative integer"));
  }
  return v;
}

absl::StatusOr<int64_t> PositiveInteger(const std::string& text) {
  int64_t v = 0;
  if (!absl::SimpleAtoi(text, &v) || v <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' is not a positive integer"));
  }
  return v;
}

absl::StatusOr<double> NonNegativeNumber(const std::string& text) {
  double v = 0;
  if (!absl::SimpleAtod(text, &v) || !(v >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' is not a non-negative number"));
  }
  return v;
}

absl::StatusOr<double> PositiveNumber(const std::string& text) {
  double v = 0;
  if (!absl::SimpleAtod(text, &v) || !(v > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' is not a positive number"));
  }
  return v;
}

absl::StatusOr<std::string> NonEmpty(const std::string& text) {
  if (text.empty()) return absl::InvalidArgumentError("empty");
  return text;
}

absl::StatusOr<std::vector<int64_t>> PositiveIntegerList(
    const std::string& text) {
  std::vector<int64_t> out;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(part, &v) || v <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "'", part, "' is not a positive integer (in '", text, "')"));
    }
    out.push_back(v);
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> NameList(const std::string& text) {
  std::vector<std::string> out = absl::StrSplit(text, ',');
  for (const std::string& name : out) {
    if (name.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("an empty name in '", text, "'"));
    }
  }
  return out;
}

std::string Alternatives(const std::vector<std::string>& names) {
  if (names.size() <= 1) return absl::StrJoin(names, "");
  return absl::StrCat(absl::StrJoin(names.begin(), names.end() - 1, ", "),
                      " or ", names.back());
}

Parser<std::string> OneOf(std::vector<std::string> names) {
  return [names = std::move(names)](
             const std::string& text) -> absl::StatusOr<std::string> {
    if (std::find(names.begin(), names.end(), text) == names.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", text, "' (want ", Alternatives(names), ")"));
    }
    return text;
  };
}

Parser<std::vector<std::string>> ListOf(std::vector<std::string> names) {
  return [names = std::move(names)](const std::string& text)
             -> absl::StatusOr<std::vector<std::string>> {
    std::vector<std::string> out = absl::StrSplit(text, ',');
    for (const std::string& name : out) {
      if (std::find(names.begin(), names.end(), name) == names.end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "'", name, "' is not ", Alternatives(names), " (in '", text, "')"));
      }
    }
    return out;
  };
}

}  // namespace w4jit::flags
