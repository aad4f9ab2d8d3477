// A hand-written recursive-descent XML reader: NCCL's topology files use a small subset of XML,
// and owning the reader keeps errors precise (line and column) without another dependency.
#include "sim/topology/import/xml_reader.h"

#include <charconv>
#include <cstdint>

#include <fmt/format.h>

#include "sim/core/utf8.h"

namespace mpsim::topology::import {

const XmlAttribute* XmlElement::attribute(std::string_view attribute_name) const {
  for (const XmlAttribute& a : attributes) {
    if (a.name == attribute_name) return &a;
  }
  return nullptr;
}

bool XmlElement::has_child(std::string_view child_name) const {
  for (const XmlElement& c : children) {
    if (c.name == child_name) return true;
  }
  return false;
}

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
         static_cast<unsigned char>(c) >= 0x80;
}

bool is_name_char(char c) { return is_name_start(c) || (c >= '0' && c <= '9') || c == '-' || c == '.'; }

class Parser {
 public:
  Parser(std::string_view text, std::string_view source_name) : text_(text), source_(source_name) {}

  XmlElement document() {
    skip_prolog();
    if (at_end()) fail("empty document: expected an XML element such as <system>");
    if (peek() != '<') fail(fmt::format("expected '<' to start an element, found '{}'", peek()));
    XmlElement root = element(1);
    skip_misc();
    if (!at_end()) fail("text after the document's root element (an XML file has one root)");
    return root;
  }

 private:
  [[noreturn]] void fail(const std::string& message) const { fail_at(line_, column_, message); }
  [[noreturn]] void fail_at(int line, int column, const std::string& message) const {
    throw InputError({std::string(source_), line, column}, "", "XML: " + message);
  }

  [[nodiscard]] bool at_end() const { return pos_ >= text_.size(); }
  [[nodiscard]] char peek(std::size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  [[nodiscard]] bool starts_with(std::string_view s) const { return text_.substr(pos_, s.size()) == s; }

  void advance(std::size_t n = 1) {
    for (std::size_t k = 0; k < n && pos_ < text_.size(); ++k) {
      if (text_[pos_] == '\n') {
        ++line_;
        column_ = 1;
      } else if ((static_cast<unsigned char>(text_[pos_]) & 0xC0) != 0x80) {
        ++column_;  // one column per character, not per UTF-8 byte
      }
      ++pos_;
    }
  }

  void skip_space() {
    while (!at_end() && is_space(peek())) advance();
  }

  /// Skips to just after `end`; fails at the construct's start when it is unterminated.
  void skip_past(std::string_view end, std::string_view what, int line, int column) {
    while (!at_end() && !starts_with(end)) advance();
    if (at_end()) fail_at(line, column, fmt::format("unterminated {}", what));
    advance(end.size());
  }

  /// Whitespace, comments and processing instructions (outside elements).
  void skip_misc() {
    for (;;) {
      skip_space();
      const int line = line_;
      const int column = column_;
      if (starts_with("<!--")) {
        skip_past("-->", "comment", line, column);
      } else if (starts_with("<?")) {
        skip_past("?>", "processing instruction", line, column);
      } else {
        return;
      }
    }
  }

  void skip_prolog() {
    if (starts_with("\xEF\xBB\xBF")) pos_ += 3;  // byte-order mark
    skip_misc();
    if (starts_with("<!DOCTYPE")) fail("document type declarations are not supported");
  }

  std::string name(std::string_view what) {
    if (at_end() || !is_name_start(peek())) {
      fail(at_end() ? fmt::format("unexpected end of file, expected {}", what)
                    : fmt::format("expected {}, found '{}'", what, peek()));
    }
    const std::size_t start = pos_;
    while (!at_end() && is_name_char(peek())) advance();
    return std::string(text_.substr(start, pos_ - start));
  }

  /// Decodes `&...;` at the current position into `out`.
  void entity(std::string& out) {
    const int line = line_;
    const int column = column_;
    const auto end = text_.find(';', pos_);
    if (end == std::string_view::npos || end - pos_ > 12) fail("'&' must start an entity such as &amp;");
    const std::string_view ref = text_.substr(pos_ + 1, end - pos_ - 1);
    constexpr std::pair<std::string_view, char> kNamed[] = {
        {"lt", '<'}, {"gt", '>'}, {"amp", '&'}, {"quot", '"'}, {"apos", '\''}};
    for (const auto& [n, c] : kNamed) {
      if (ref == n) {
        out += c;
        advance(end - pos_ + 1);
        return;
      }
    }
    if (ref.size() > 1 && ref[0] == '#') {
      const bool hex = ref[1] == 'x';
      const std::string_view digits = ref.substr(hex ? 2 : 1);
      std::uint32_t cp = 0;
      const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), cp, hex ? 16 : 10);
      if (ec == std::errc() && ptr == digits.data() + digits.size() && !digits.empty() && cp > 0 && cp <= 0x10FFFF &&
          (cp < 0xD800 || cp > 0xDFFF)) {
        append_utf8(out, cp);
        advance(end - pos_ + 1);
        return;
      }
    }
    fail_at(line, column, fmt::format("unknown entity '&{};'", ref));
  }

  XmlAttribute attribute() {
    XmlAttribute a;
    a.line = line_;
    a.column = column_;
    a.name = name("an attribute name");
    skip_space();
    if (peek() != '=') fail(fmt::format("expected '=' after attribute '{}'", a.name));
    advance();
    skip_space();
    const char quote = peek();
    if (quote != '"' && quote != '\'') fail(fmt::format("the value of attribute '{}' must be quoted", a.name));
    const int value_line = line_;
    const int value_column = column_;
    advance();
    while (!at_end() && peek() != quote) {
      if (peek() == '<') fail("'<' is not allowed in an attribute value");
      if (peek() == '&') {
        entity(a.value);
      } else {
        a.value += peek();
        advance();
      }
    }
    if (at_end()) fail_at(value_line, value_column, fmt::format("unterminated value of attribute '{}'", a.name));
    advance();
    return a;
  }

  /// An element starting at '<'.
  XmlElement element(int depth) {
    if (depth > kMaxXmlDepth) fail(fmt::format("elements nest deeper than {}", kMaxXmlDepth));
    XmlElement e;
    e.line = line_;
    e.column = column_;
    advance();  // '<'
    e.name = name("an element name");
    for (;;) {
      const bool spaced = !at_end() && is_space(peek());
      skip_space();
      if (at_end()) fail_at(e.line, e.column, fmt::format("unterminated start tag <{}>", e.name));
      if (starts_with("/>")) {
        advance(2);
        return e;
      }
      if (peek() == '>') {
        advance();
        break;
      }
      if (!spaced) fail(fmt::format("expected a space, '>' or '/>' in <{}>, found '{}'", e.name, peek()));
      XmlAttribute a = attribute();
      if (e.attribute(a.name) != nullptr) {
        fail_at(a.line, a.column, fmt::format("attribute '{}' appears twice in <{}>", a.name, e.name));
      }
      e.attributes.push_back(std::move(a));
    }
    // Content: child elements, comments, and text (ignored), up to the matching end tag.
    for (;;) {
      const int line = line_;
      const int column = column_;
      if (at_end()) fail_at(e.line, e.column, fmt::format("<{}> is never closed (expected </{}>)", e.name, e.name));
      if (starts_with("</")) {
        advance(2);
        const std::string closing = name("an element name");
        if (closing != e.name) {
          fail_at(line, column, fmt::format("</{}> does not match <{}> opened at line {}, column {}", closing, e.name,
                                            e.line, e.column));
        }
        skip_space();
        if (peek() != '>') fail(fmt::format("expected '>' to end </{}>", closing));
        advance();
        return e;
      }
      if (starts_with("<!--")) {
        skip_past("-->", "comment", line, column);
      } else if (starts_with("<?")) {
        skip_past("?>", "processing instruction", line, column);
      } else if (starts_with("<!")) {
        fail("CDATA sections and declarations inside elements are not supported");
      } else if (peek() == '<') {
        e.children.push_back(element(depth + 1));
      } else if (peek() == '&') {
        std::string ignored;
        entity(ignored);
      } else {
        advance();
      }
    }
  }

  std::string_view text_;
  std::string_view source_;
  std::size_t pos_ = 0;
  int line_ = 1;
  int column_ = 1;
};

}  // namespace

XmlElement parse_xml(std::string_view text, std::string_view source_name) {
  return Parser(text, source_name).document();
}

}  // namespace mpsim::topology::import
