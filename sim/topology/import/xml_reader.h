#pragma once
/// A small XML reader for NCCL's topology files: elements, attributes, self-closing tags,
/// comments, the `<?xml ...?>` declaration and the five predefined entities plus numeric
/// character references. Text between elements is ignored; DTDs and CDATA are refused.
/// Every element and attribute keeps its line and column for error messages.
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/input_error.h"

namespace mpsim::topology::import {

struct XmlAttribute {
  std::string name;
  std::string value;  ///< entities decoded
  int line = 0;       ///< of the attribute name, 1-based
  int column = 0;
};

struct XmlElement {
  std::string name;
  std::vector<XmlAttribute> attributes;  ///< in document order
  std::vector<XmlElement> children;      ///< in document order
  int line = 0;                          ///< of the `<`, 1-based
  int column = 0;

  /// The attribute `name`, or null.
  [[nodiscard]] const XmlAttribute* attribute(std::string_view attribute_name) const;
  /// Whether a direct child is named `child_name`.
  [[nodiscard]] bool has_child(std::string_view child_name) const;
};

/// Elements nest at most this deep; deeper input is refused rather than exhausting the stack.
inline constexpr int kMaxXmlDepth = 128;

/// Parses a document with exactly one root element. Throws InputError at `source_name`, line and
/// column on malformed input: an unclosed or mismatched tag, a bad attribute, an unknown entity,
/// text after the root, or an empty document.
[[nodiscard]] XmlElement parse_xml(std::string_view text, std::string_view source_name);

}  // namespace mpsim::topology::import
