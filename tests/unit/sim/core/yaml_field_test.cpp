#include "sim/core/yaml_field.h"

#include "sim/core/input_error_collector.h"

#include <gtest/gtest.h>

namespace mpsim {
namespace {

/// The InputError message that `fn` throws.
template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const InputError& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(YamlField, LocatesMissingAndWrongFields) {
  const auto doc = YamlDocument::parse("links:\n  - { bandwidth: \"fast\" }\n", "t.yaml");
  const Field link = doc.root().require("links").items().at(0);
  EXPECT_EQ(error_of([&] { (void)link.require("bandwidth").as_bandwidth(); }),
            "t.yaml:2:18: 'fast' is not a bandwidth (expected a number and a unit, e.g. '900 GB/s') "
            "(field 'links[0].bandwidth')");
  EXPECT_EQ(error_of([&] { (void)link.require("latency"); }),
            "t.yaml:2:5: missing required field (field 'links[0].latency')");
}

// Every string mpsim reads may be written to a file again (a profile, a topology); yaml-cpp's \N and \_
// escapes give a lone byte and a writer replaces U+FFFF, so neither would come back as it was read.
TEST(YamlField, AStringMustBeTextThatAFileCanHoldAgain) {
  const auto doc = YamlDocument::parse("a: \"x\\Ny\"\nb: \"\\uFFFF\"\nc: \"\\u0085\\u00A0\\U0010FFFD é\"\n\"k\\_\": 1\n", "t.yaml");
  EXPECT_EQ(error_of([&] { (void)doc.root().require("a").as_string(); }),
            "t.yaml:1:4: is not UTF-8 text: byte 2 (0x85) starts no character (the \\N and \\_ escapes write such a "
            "byte; \\u0085 and \\u00A0 write those characters) (field 'a')");
  EXPECT_EQ(error_of([&] { (void)doc.root().require("b").as_string(); }),
            "t.yaml:2:4: holds the noncharacter U+FFFF, which no YAML file writes back (field 'b')");
  EXPECT_EQ(doc.root().require("c").as_string(), "\u0085\u00A0\U0010FFFD \u00E9");
  const std::string key = error_of([&] { (void)doc.root().entries(); });
  EXPECT_NE(key.find("t.yaml:4:1: a key is not UTF-8 text: byte 2 (0xA0)"), std::string::npos) << key;
}

TEST(YamlField, UnknownAndRepeatedKeys) {
  const auto doc = YamlDocument::parse("a: 1\nbandwith: 2\n", "t.yaml");
  const std::string e = error_of([&] { doc.root().expect_keys({"a", "bandwidth"}); });
  EXPECT_EQ(e,
            "t.yaml:2:1: unknown field 'bandwith'; did you mean 'bandwidth'? (expected one of: a, bandwidth) "
            "(field 'bandwith')");
}

// Under a collector, the errors reading can step over are all reported, each on its own line; the
// error that stops reading joins them unless it stops in the mapping of a misspelt field (it then
// follows from the misspelling); a single error is the one-line error it always was.
TEST(YamlField, ACollectorReportsEveryErrorOfAFile) {
  const auto doc =
      YamlDocument::parse("a: 1\nsizes: { bandwith: 2 }\nlink: { latncy: 3, count: 4 }\n", "t.yaml");
  const auto read = [&](bool stop_in_link) {
    return error_of([&] {
      (void)read_collecting_errors([&] {
        doc.root().expect_keys({"a", "sizes", "link"});
        doc.root().require("sizes").expect_keys({"bandwidth"});
        const Field link = doc.root().require("link");
        link.expect_keys({"latency", "count"});
        if (stop_in_link) (void)link.require("latency");  // missing: the misspelling's consequence
        return doc.root().require("a").as_bool();          // not a bool: in no misspelt field's mapping
      });
    });
  };
  EXPECT_EQ(read(false),
            "t.yaml: 3 errors:\n"
            "  t.yaml:2:10: unknown field 'bandwith'; did you mean 'bandwidth'? (expected one of: bandwidth) "
            "(field 'sizes.bandwith')\n"
            "  t.yaml:3:9: unknown field 'latncy'; did you mean 'latency'? (expected one of: latency, count) "
            "(field 'link.latncy')\n"
            "  t.yaml:1:4: '1' is not true or false (field 'a')");
  EXPECT_EQ(read(true).substr(0, 17), "t.yaml: 2 errors:");
  // One error alone: as without a collector.
  const auto one = YamlDocument::parse("a: 1\nbandwith: 2\n", "t.yaml");
  EXPECT_EQ(error_of([&] { (void)read_collecting_errors([&] { one.root().expect_keys({"a", "bandwidth"}); return 0; }); }),
            "t.yaml:2:1: unknown field 'bandwith'; did you mean 'bandwidth'? (expected one of: a, bandwidth) "
            "(field 'bandwith')");
  // Without a collector the first error throws.
  EXPECT_EQ(error_of([&] { doc.root().require("sizes").expect_keys({"bandwidth"}); }).substr(0, 41),
            "t.yaml:2:10: unknown field 'bandwith'; di");
}

TEST(YamlField, SyntaxErrorsCarryTheParserPosition) {
  const std::string e = error_of([] { (void)YamlDocument::parse("a: [1, 2\nb: 3\n", "bad.yaml"); });
  EXPECT_EQ(e.rfind("bad.yaml:", 0), 0u) << e;
  EXPECT_NE(e.find("YAML syntax error"), std::string::npos) << e;
}

TEST(YamlField, TypesAndRanges) {
  const auto doc = YamlDocument::parse("n: 8\nx: 8.5\nw: word\nb: yes\nbig: 1e3\n", "t.yaml");
  const Field r = doc.root();
  EXPECT_EQ(r.require("n").as_int(), 8);
  EXPECT_EQ(r.require("big").as_int(), 1000);
  EXPECT_TRUE(r.require("b").as_bool());
  EXPECT_NE(error_of([&] { (void)r.require("x").as_int(); }).find("'8.5' is not an integer"), std::string::npos);
  EXPECT_NE(error_of([&] { (void)r.require("w").as_double(); }).find("'word' is not a number"), std::string::npos);
  EXPECT_NE(error_of([&] { (void)r.require("n").as_int_in(1, 4); }).find("must be at most 4, got 8"), std::string::npos);
}

TEST(YamlField, EmptyDocumentAndNonMappingTop) {
  EXPECT_EQ(error_of([] { (void)YamlDocument::parse("", "e.yaml").root(); }), "e.yaml:1:1: file is empty");
  EXPECT_EQ(error_of([] { (void)YamlDocument::parse("- 1\n- 2\n", "l.yaml").root(); }),
            "l.yaml:1:1: expected a mapping at the top level");
}

}  // namespace
}  // namespace mpsim
