// A TOML file's settings by dotted key: typed reads that fail at the value, and the keys nobody read.
#include <gtest/gtest.h>

#include "interop/formats/toml_values.h"
#include "sim/core/input_error.h"

namespace mpsim::interop {
namespace {

constexpr const char* kJob =
    "# a job\n"
    "[parallelism]\n"
    "tensor_parallel_degree = 2\n"
    "enable_async_tensor_parallel = true\n"
    "pipeline_parallel_schedule = \"1F1B\"\n"
    "\n"
    "[model]\n"
    "converters = [\"quantize.linear.float8\"]\n"
    "[quantize.linear.float8]\n"
    "recipe_name = \"tensorwise\"\n"
    "[optimizer]\n"
    "lr = 3e-4\n";

TEST(TomlValues, ReadsEachTypeByDottedKey) {
  const TomlValues toml = TomlValues::parse(kJob, "job.toml");
  EXPECT_EQ(toml.integer("parallelism.tensor_parallel_degree"), 2);
  EXPECT_EQ(toml.flag("parallelism.enable_async_tensor_parallel"), true);
  EXPECT_EQ(toml.text("parallelism.pipeline_parallel_schedule"), "1F1B");
  EXPECT_EQ(toml.texts("model.converters"), (std::vector<std::string>{"quantize.linear.float8"}));
  EXPECT_EQ(toml.text("quantize.linear.float8.recipe_name"), "tensorwise");
  EXPECT_FALSE(toml.integer("parallelism.pipeline_parallel_degree"));
  EXPECT_TRUE(toml.has("optimizer.lr"));
}

// TorchTitan's list settings read a comma-separated string as the list (its config managers split it, and its
// presets wrote `converters = "float8"`); a list reads as itself, and another type is an error at the value.
TEST(TomlValues, AStringListIsAListOrACommaSeparatedString) {
  const TomlValues toml = TomlValues::parse(
      "[model]\none = \"float8\"\ntwo = \" float8 , mx,\"\nlist = [\"a\", \"b\"]\nempty = \"\"\nnumber = 3\n",
      "job.toml");
  EXPECT_EQ(toml.string_list("model.one"), (std::vector<std::string>{"float8"}));
  EXPECT_EQ(toml.string_list("model.two"), (std::vector<std::string>{"float8", "mx"}));
  EXPECT_EQ(toml.string_list("model.list"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(toml.string_list("model.empty"), std::vector<std::string>{});
  EXPECT_FALSE(toml.string_list("model.absent"));
  try {
    (void)toml.string_list("model.number");
    FAIL() << "a number is no list";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().line, 6);
    EXPECT_EQ(e.field(), "model.number");
  }
}

TEST(TomlValues, SaysWhereEachValueIs) {
  const TomlValues toml = TomlValues::parse(kJob, "job.toml");
  const SourceLocation tensor = toml.where("parallelism.tensor_parallel_degree");
  EXPECT_EQ(tensor.file, "job.toml");
  EXPECT_EQ(tensor.line, 3);
  EXPECT_EQ(tensor.column, 26);
  // An absent key: its table's header, else the file.
  EXPECT_EQ(toml.where("parallelism.context_parallel_degree").line, 2);
  EXPECT_EQ(toml.where("training.seq_len").line, 0);
}

TEST(TomlValues, AValueOfAnotherTypeIsAnErrorAtIt) {
  const TomlValues toml = TomlValues::parse(kJob, "job.toml");
  try {
    (void)toml.integer("parallelism.pipeline_parallel_schedule");
    FAIL() << "a string read as an integer";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "parallelism.pipeline_parallel_schedule");
    EXPECT_EQ(e.where().line, 5);
    EXPECT_EQ(e.message(), "parallelism.pipeline_parallel_schedule is an integer, not \"1F1B\"");
  }
  EXPECT_THROW((void)toml.text("optimizer.lr"), InputError);  // a float
  EXPECT_THROW((void)toml.flag("parallelism.tensor_parallel_degree"), InputError);
}

TEST(TomlValues, ASyntaxErrorNamesItsLine) {
  try {
    (void)TomlValues::parse("[training]\nseq_len = = 2\n", "bad.toml");
    FAIL() << "not TOML";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().file, "bad.toml");
    EXPECT_EQ(e.where().line, 2);
    EXPECT_GT(e.where().column, 0);
    EXPECT_EQ(e.message().rfind("not TOML: ", 0), 0u) << e.message();
  }
}

// toml++ 3.3 asserts (and, built with NDEBUG, assumes) that a table header starts with a key;
// these inputs broke that and must be plain errors (tests/fuzz/regressions/torchtitan_job_fuzz).
TEST(TomlValues, ATableHeaderWithoutAKeyIsAnError) {
  for (const char* text : {"[#", "[[#", "[ #]", "[=]", "[parallelism]\n[#\n"}) {
    try {
      (void)TomlValues::parse(text, "bad.toml");
      FAIL() << text;
    } catch (const InputError& e) {
      EXPECT_EQ(e.where().file, "bad.toml") << text;
      EXPECT_GT(e.where().line, 0) << text;
      EXPECT_EQ(e.message().rfind("not TOML: ", 0), 0u) << e.message();
    }
  }
}

// toml++ 3.3 reaches an unreachable point on some non-ASCII characters (U+FCFF starting a line, found by
// fuzzing): job files are read as ASCII, and a byte beyond it is an error at its line and column.
TEST(TomlValues, ANonAsciiByteIsAnErrorAtIt) {
  try {
    (void)TomlValues::parse("[training]\nseq_len = 8\n\xef\xb3\xbf = 1\n", "bad.toml");
    FAIL() << "non-ASCII";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().line, 3);
    EXPECT_EQ(e.where().column, 1);
  }
}

TEST(TomlValues, ListsTheKeysNothingReadInFileOrder) {
  const TomlValues toml = TomlValues::parse(kJob, "job.toml");
  (void)toml.integer("parallelism.tensor_parallel_degree");
  (void)toml.has("model.converters");
  EXPECT_EQ(toml.unread(),
            (std::vector<std::string>{"parallelism.enable_async_tensor_parallel", "parallelism.pipeline_parallel_schedule",
                                      "quantize.linear.float8.recipe_name", "optimizer.lr"}));
}

}  // namespace
}  // namespace mpsim::interop
