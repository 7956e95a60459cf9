// cli/flags.h, the CLI's one flags library: the syntax, the generated
// help and the errors every subcommand shares.
#include "cli/flags.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace w4jit::flags {
namespace {

struct Values {
  int64_t count = 3;
  std::string colour = "red";
  std::vector<int64_t> list;
  std::vector<std::string> names;
  bool loud = false;
};

std::unique_ptr<CLI::App> TestApp(Values* v) {
  auto app = NewApp("w4jit test", "A test command.");
  app->add_flag_callback(
      "--loud", [v] { v->loud = true; }, "be loud");
  AddOption<int64_t>(*app, "--count", "N", "how many", NonNegativeInteger,
                     [v](int64_t n) { v->count = n; })
      ->default_str("3");
  AddOption<std::string>(*app, "--colour", "red|blue", "which colour",
                         OneOf({"red", "blue"}),
                         [v](std::string c) { v->colour = std::move(c); });
  AddOption<std::vector<int64_t>>(
      *app, "--list", "LIST", "some numbers", PositiveIntegerList,
      [v](std::vector<int64_t> l) { v->list = std::move(l); });
  AddRepeatedOption<std::string>(
      *app, "--name", "NAME", "repeatable", NonEmpty,
      [v](std::vector<std::string> n) { v->names = std::move(n); });
  return app;
}

absl::StatusOr<bool> ParseTest(Values* v, std::vector<std::string> args) {
  std::unique_ptr<CLI::App> app = TestApp(v);
  return Parse(*app, std::move(args));
}

TEST(Flags, BothSyntaxesAndRepeats) {
  Values v;
  absl::StatusOr<bool> help =
      ParseTest(&v, {"--count", "7", "--colour=blue", "--list=1,2", "--loud",
                     "--name=a", "--name", "b", "--count=9"});
  ASSERT_TRUE(help.ok()) << help.status();
  EXPECT_FALSE(*help);
  EXPECT_EQ(v.count, 9);  // the last of a repeated option
  EXPECT_EQ(v.colour, "blue");
  EXPECT_EQ(v.list, (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(v.loud);
  EXPECT_EQ(v.names, (std::vector<std::string>{"a", "b"}));
  Values defaults;
  ASSERT_TRUE(ParseTest(&defaults, {}).ok());
  EXPECT_EQ(defaults.count, 3);
  EXPECT_FALSE(defaults.loud);
}

// Each parse has its own state: two parses in one process do not mix.
TEST(Flags, StateIsPerParse) {
  Values a, b;
  ASSERT_TRUE(ParseTest(&a, {"--count=1"}).ok());
  ASSERT_TRUE(ParseTest(&b, {}).ok());
  EXPECT_EQ(a.count, 1);
  EXPECT_EQ(b.count, 3);
}

TEST(Flags, ErrorsNameTheOption) {
  const struct {
    std::vector<std::string> args;
    std::string message;
  } cases[] = {
      {{"--frobnicate=1"}, "not expected: --frobnicate=1"},
      {{"stray"}, "not expected: stray"},
      {{"--count"}, "--count: 1 required N missing"},
      {{"--count=x"}, "--count: 'x' is not a non-negative integer"},
      {{"--count=-1"}, "--count: '-1' is not a non-negative integer"},
      {{"--colour=green"}, "--colour: 'green' (want red or blue)"},
      {{"--list=1,0"}, "--list: '0' is not a positive integer (in '1,0')"},
      {{"--name="}, "--name: "},
  };
  for (const auto& c : cases) {
    Values v;
    absl::StatusOr<bool> r = ParseTest(&v, c.args);
    ASSERT_FALSE(r.ok()) << c.message;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    const std::string message(r.status().message());
    EXPECT_NE(message.find(c.message), std::string::npos) << message;
    EXPECT_NE(message.find("(see w4jit test --help)"), std::string::npos)
        << message;
  }
}

TEST(Flags, HelpIsGeneratedAndWinsOverBadValues) {
  Values v;
  absl::StatusOr<bool> help = ParseTest(&v, {"--count=x", "--help"});
  ASSERT_TRUE(help.ok()) << help.status();
  EXPECT_TRUE(*help);
  help = ParseTest(&v, {"-h"});
  ASSERT_TRUE(help.ok());
  EXPECT_TRUE(*help);
  const std::string text = TestApp(&v)->help();
  for (const char* line :
       {"usage: w4jit test [options]", "A test command.", "--loud ",
        "--count=N", "how many (default 3)", "--colour=red|blue", "--list=LIST",
        "--name=NAME", "--help"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  }
  for (const std::string& l : std::vector<std::string>{text}) {
    size_t start = 0;
    while (start < l.size()) {
      size_t end = l.find('\n', start);
      if (end == std::string::npos) end = l.size();
      EXPECT_LE(end - start, 80u) << l.substr(start, end - start);
      start = end + 1;
    }
  }
}

TEST(Flags, ValueParsers) {
  EXPECT_EQ(*Integer("-1"), -1);
  EXPECT_FALSE(Integer("1.5").ok());
  EXPECT_FALSE(PositiveInteger("0").ok());
  EXPECT_EQ(*NonNegativeNumber("0"), 0.0);
  EXPECT_FALSE(NonNegativeNumber("nan").ok());
  EXPECT_FALSE(PositiveNumber("0").ok());
  EXPECT_FALSE(NonEmpty("").ok());
  EXPECT_FALSE(NameList("a,,b").ok());
  EXPECT_EQ(*NameList("a,b"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(*ListOf({"x", "y"})("y,x"), (std::vector<std::string>{"y", "x"}));
  EXPECT_FALSE(ListOf({"x", "y"})("x,z").ok());
  EXPECT_EQ(Alternatives({"a", "b", "c"}), "a, b or c");
}

}  // namespace
}  // namespace w4jit::flags
