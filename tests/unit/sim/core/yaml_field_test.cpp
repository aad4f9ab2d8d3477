#include "sim/core/yaml_field.h"

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

TEST(YamlField, UnknownAndRepeatedKeys) {
  const auto doc = YamlDocument::parse("a: 1\nbandwith: 2\n", "t.yaml");
  const std::string e = error_of([&] { doc.root().expect_keys({"a", "bandwidth"}); });
  EXPECT_EQ(e,
            "t.yaml:2:1: unknown field 'bandwith'; did you mean 'bandwidth'? (expected one of: a, bandwidth) "
            "(field 'bandwith')");
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
