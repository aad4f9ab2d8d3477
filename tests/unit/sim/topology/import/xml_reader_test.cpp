#include "sim/topology/import/xml_reader.h"

#include <gtest/gtest.h>

#include "tests/unit/sim/topology/import/import_test_support.h"

namespace mpsim::topology::import {
namespace {

using testing::error_of;

TEST(XmlReader, ElementsAttributesAndPositions) {
  const XmlElement root = parse_xml(
      "\xEF\xBB\xBF<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<!-- a comment -->\n"
      "<system version='1'>\n"
      "  <cpu numaid=\"0\" name=\"a &amp; b &lt;c&gt; &#65;&#x42; &quot;q&quot;\">\n"
      "    <pci busid=\"0000:07:00.0\"/>\n"
      "    <!-- <pci busid=\"hidden\"/> -->\n"
      "    <nic >text is ignored<net name = \"mlx5_0\" /></nic>\n"
      "  </cpu>\n"
      "</system>\n",
      "t.xml");
  EXPECT_EQ(root.name, "system");
  EXPECT_EQ(root.line, 3);
  EXPECT_EQ(root.column, 1);
  ASSERT_NE(root.attribute("version"), nullptr);
  EXPECT_EQ(root.attribute("version")->value, "1");
  ASSERT_EQ(root.children.size(), 1u);
  const XmlElement& cpu = root.children[0];
  EXPECT_EQ(cpu.attribute("name")->value, "a & b <c> AB \"q\"");
  EXPECT_EQ(cpu.attribute("numaid")->line, 4);
  EXPECT_EQ(cpu.attribute("numaid")->column, 8);
  ASSERT_EQ(cpu.children.size(), 2u);
  EXPECT_EQ(cpu.children[0].name, "pci");
  EXPECT_TRUE(cpu.children[0].children.empty());
  EXPECT_TRUE(cpu.has_child("nic"));
  EXPECT_FALSE(cpu.has_child("gpu"));
  EXPECT_EQ(cpu.children[1].children.at(0).attribute("name")->value, "mlx5_0");
  EXPECT_EQ(cpu.attribute("missing"), nullptr);
}

TEST(XmlReader, MalformedInputIsLocated) {
  const auto err = [](const std::string& text) { return error_of([&] { (void)parse_xml(text, "x.xml"); }); };
  EXPECT_EQ(err(""), "x.xml:1:1: XML: empty document: expected an XML element such as <system>");
  EXPECT_EQ(err("  \n<!-- only a comment -->\n"),
            "x.xml:3:1: XML: empty document: expected an XML element such as <system>");
  EXPECT_EQ(err("<a>\n  <b>\n  </c>\n</a>"), "x.xml:3:3: XML: </c> does not match <b> opened at line 2, column 3");
  EXPECT_EQ(err("<a>\n  <b/>\n"), "x.xml:1:1: XML: <a> is never closed (expected </a>)");
  EXPECT_EQ(err("<a x=\"1\" x=\"2\"/>"), "x.xml:1:10: XML: attribute 'x' appears twice in <a>");
  EXPECT_EQ(err("<a x=1/>"), "x.xml:1:6: XML: the value of attribute 'x' must be quoted");
  EXPECT_EQ(err("<a x=\"1\"y=\"2\"/>"), "x.xml:1:9: XML: expected a space, '>' or '/>' in <a>, found 'y'");
  EXPECT_EQ(err("<a x=\"&nbsp;\"/>"), "x.xml:1:7: XML: unknown entity '&nbsp;'");
  EXPECT_EQ(err("<a x=\"1/>"), "x.xml:1:6: XML: unterminated value of attribute 'x'");
  EXPECT_EQ(err("<a/>\n<b/>"), "x.xml:2:1: XML: text after the document's root element (an XML file has one root)");
  EXPECT_EQ(err("<a><!-- open"), "x.xml:1:4: XML: unterminated comment");
  EXPECT_EQ(err("<!DOCTYPE a><a/>"), "x.xml:1:1: XML: document type declarations are not supported");
  EXPECT_EQ(err("<1a/>"), "x.xml:1:2: XML: expected an element name, found '1'");
  EXPECT_EQ(err("hello"), "x.xml:1:1: XML: expected '<' to start an element, found 'h'");
}

TEST(XmlReader, DepthIsBounded) {
  std::string deep;
  for (int i = 0; i <= kMaxXmlDepth; ++i) deep += "<a>";
  const std::string e = error_of([&] { (void)parse_xml(deep, "d.xml"); });
  EXPECT_NE(e.find("elements nest deeper than 128"), std::string::npos) << e;
}

}  // namespace
}  // namespace mpsim::topology::import
