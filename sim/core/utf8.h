#pragma once
/// UTF-8: encoding one code point, for the readers that decode escapes (\u in JSON, &#...; in XML), and
/// checking text, for the readers of files and of YAML strings. Header-only, so libraries that do not
/// link mpsim::core (the trace library) can use it too.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mpsim {

inline void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

/// One character of UTF-8 text: its length in bytes (0: no character starts there) and its code point.
struct Utf8Character {
  std::size_t length = 0;
  std::uint32_t code_point = 0;
};

/// The character that starts at s[i] (i < s.size()); length 0 for a byte that starts none: a stray
/// continuation byte, a truncated sequence, an overlong form, a surrogate or a code point above U+10FFFF.
inline Utf8Character utf8_character_at(std::string_view s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<std::uint32_t>(static_cast<unsigned char>(s[i + k])); };
  const std::uint32_t lead = byte(0);
  if (lead < 0x80) return {1, lead};
  std::size_t length = 0;
  std::uint32_t cp = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2, cp = lead & 0x1F;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, cp = lead & 0x0F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4, cp = lead & 0x07;
  } else {
    return {};
  }
  if (i + length > s.size()) return {};
  for (std::size_t k = 1; k < length; ++k) {
    if ((byte(k) & 0xC0) != 0x80) return {};
    cp = (cp << 6) | (byte(k) & 0x3F);
  }
  const bool overlong = (length == 3 && cp < 0x800) || (length == 4 && cp < 0x10000);
  if (overlong || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return {};
  return {length, cp};
}

/// Whether `cp` is a noncharacter that YAML writers replace (U+FFFE and U+FFFF of every plane).
inline bool is_replaced_noncharacter(std::uint32_t cp) { return (cp & 0xFFFE) == 0xFFFE; }

/// The byte offset of the first thing in `s` that is not text a YAML file can hold and be written back
/// as it is: a byte that starts no UTF-8 character (yaml-cpp's \N and \_ escapes write one such byte) or a
/// noncharacter (which writers replace with U+FFFD); nullopt when there is none.
inline std::optional<std::size_t> first_unwritable_text(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const Utf8Character c = utf8_character_at(s, i);
    if (c.length == 0 || is_replaced_noncharacter(c.code_point)) return i;
    i += c.length;
  }
  return std::nullopt;
}

}  // namespace mpsim
