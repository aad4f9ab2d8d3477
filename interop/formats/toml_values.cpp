#include "interop/formats/toml_values.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <stdexcept>

// toml++ 3.3's parser asserts what it has not checked (a table header's first key character: "[#"
// fails it), and with NDEBUG turns those asserts into assumptions, undefined behaviour on such input.
// Here they are checks that throw (this is the only file that includes toml++), reported as "not TOML".
namespace mpsim::interop {
struct TomlParserAssertion : std::runtime_error {
  using std::runtime_error::runtime_error;
};
}  // namespace mpsim::interop
#ifdef NDEBUG
#define MPSIM_TOML_NDEBUG
#undef NDEBUG
#endif
#define TOML_ASSERT(expr) ((expr) ? void() : throw ::mpsim::interop::TomlParserAssertion(#expr))
// In its noexcept accessors a failed check ends the program, as its own assert would.
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wexceptions"
#else
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wterminate"
#endif
#include <toml++/toml.h>
#if defined(__clang__)
#pragma clang diagnostic pop
#else
#pragma GCC diagnostic pop
#endif
#ifdef MPSIM_TOML_NDEBUG
#define NDEBUG
#undef MPSIM_TOML_NDEBUG
#endif

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace mpsim::interop {

/// Walks the parsed document into dotted keys.
class TomlFlattener {
 public:
  explicit TomlFlattener(TomlValues& out) : out_(out) {}

  void table(const toml::table& t, const std::string& prefix) {
    for (auto&& [key, node] : t) {
      const std::string name = prefix.empty() ? std::string(key.str()) : prefix + "." + std::string(key.str());
      if (const toml::table* inner = node.as_table()) {
        out_.tables_[name] = at(inner->source().begin.line > 0 ? inner->source() : key.source());
        table(*inner, name);
      } else {
        leaf(name, node, key.source());
      }
    }
  }

 private:
  [[nodiscard]] SourceLocation at(const toml::source_region& region) const {
    return {out_.file_, static_cast<int>(region.begin.line), static_cast<int>(region.begin.column)};
  }

  void leaf(const std::string& name, const toml::node& node, const toml::source_region& key_at) {
    TomlValues::Entry entry{TomlValues::OtherType{"a value"}, "", at(node.source().begin.line > 0 ? node.source() : key_at)};
    if (const auto* i = node.as_integer()) {
      entry.value = i->get();
      entry.shown = std::to_string(i->get());
    } else if (const auto* b = node.as_boolean()) {
      entry.value = b->get();
      entry.shown = b->get() ? "true" : "false";
    } else if (const auto* s = node.as_string()) {
      entry.value = s->get();
      entry.shown = fmt::format("\"{}\"", s->get());
    } else if (const auto* f = node.as_floating_point()) {
      entry.value = TomlValues::OtherType{"a float"};
      entry.shown = fmt::format("{}", f->get());
    } else if (const auto* a = node.as_array()) {
      std::vector<std::string> words;
      bool all_strings = true;
      for (const toml::node& element : *a) {
        if (const auto* s = element.as_string()) {
          words.push_back(s->get());
        } else {
          all_strings = false;
        }
      }
      entry.value = all_strings ? TomlValues::Value{words} : TomlValues::Value{TomlValues::OtherType{"an array"}};
      entry.shown = all_strings ? fmt::format("[\"{}\"]", fmt::join(words, "\", \"")) : "an array";
      if (words.empty() && all_strings) entry.shown = "[]";
    } else {
      entry.value = TomlValues::OtherType{"a date or time"};
      entry.shown = "a date or time";
    }
    out_.order_.push_back(name);
    out_.entries_.emplace(name, std::move(entry));
  }

  TomlValues& out_;
};

namespace {

/// Where the first table header without a key starts ("[#", "[[ =]"), for the error the parser's
/// assertion becomes; the file alone when none is found.
SourceLocation keyless_table_header(std::string_view text, const std::string& file) {
  const auto starts_key = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-' || c == '"' || c == '\'';
  };
  int line = 1;
  for (std::size_t start = 0; start <= text.size(); ++line) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    const std::string_view row = text.substr(start, end - start);
    std::size_t i = row.find_first_not_of(" \t");
    if (i != std::string_view::npos && row[i] == '[') {
      const std::size_t bracket = i;
      i = row.find_first_not_of(" \t[", bracket);
      if (i == std::string_view::npos || !starts_key(row[i])) return {file, line, static_cast<int>(bracket) + 1};
    }
    start = end + 1;
  }
  return {file, 0, 0};
}

/// The first byte outside ASCII. toml++ 3.3 classifies some non-ASCII characters where it reads a bare
/// key by a table that ends in an unreachable point (undefined behaviour, found by fuzzing: U+FCFF at
/// a line's start); job files are ASCII (every name TorchTitan reads is), so such bytes are refused.
std::optional<SourceLocation> first_non_ascii(std::string_view text, const std::string& file) {
  int line = 1, column = 1;
  for (const char c : text) {
    if (static_cast<unsigned char>(c) >= 0x80) return SourceLocation{file, line, column};
    if (c == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return std::nullopt;
}

}  // namespace

TomlValues TomlValues::parse(std::string_view text, const std::string& file) {
  if (const auto at = first_non_ascii(text, file)) {
    throw InputError(*at, "", "not read: a TorchTitan job file is ASCII here (this byte is not; toml++ 3.3 cannot "
                              "read every non-ASCII character safely)");
  }
  TomlValues values;
  values.file_ = file;
  try {
    const toml::table root = toml::parse(text, file);
    TomlFlattener(values).table(root, "");
    // toml++ keeps keys sorted by name; notes list them as the file does.
    std::sort(values.order_.begin(), values.order_.end(), [&](const std::string& a, const std::string& b) {
      const SourceLocation& x = values.entries_.at(a).where;
      const SourceLocation& y = values.entries_.at(b).where;
      return std::pair(x.line, x.column) < std::pair(y.line, y.column);
    });
  } catch (const toml::parse_error& e) {
    throw InputError({file, static_cast<int>(e.source().begin.line), static_cast<int>(e.source().begin.column)}, "",
                     fmt::format("not TOML: {}", e.description()));
  } catch (const TomlParserAssertion&) {
    throw InputError(keyless_table_header(text, file), "", "not TOML: a table header needs a key");
  }
  return values;
}

const TomlValues::Entry* TomlValues::find(std::string_view key) const {
  read_.emplace(key);
  const auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

bool TomlValues::has(std::string_view key) const { return find(key) != nullptr; }

template <typename T>
std::optional<T> TomlValues::read(std::string_view key, std::string_view expected) const {
  const Entry* e = find(key);
  if (e == nullptr) return std::nullopt;
  if (const T* v = std::get_if<T>(&e->value)) return *v;
  fail(key, fmt::format("{} is {}, not {}", key, expected, e->shown));
}

std::optional<std::int64_t> TomlValues::integer(std::string_view key) const { return read<std::int64_t>(key, "an integer"); }
std::optional<bool> TomlValues::flag(std::string_view key) const { return read<bool>(key, "true or false"); }
std::optional<std::string> TomlValues::text(std::string_view key) const { return read<std::string>(key, "a string"); }
std::optional<std::vector<std::string>> TomlValues::texts(std::string_view key) const {
  return read<std::vector<std::string>>(key, "a list of strings");
}

std::optional<std::vector<std::string>> TomlValues::string_list(std::string_view key) const {
  const Entry* e = find(key);
  if (e == nullptr) return std::nullopt;
  if (const auto* list = std::get_if<std::vector<std::string>>(&e->value)) return *list;
  const auto* text = std::get_if<std::string>(&e->value);
  if (text == nullptr) {
    fail(key, fmt::format("{} is a list of strings or a comma-separated string, not {}", key, e->shown));
  }
  std::vector<std::string> items;
  std::size_t from = 0;
  while (from <= text->size()) {
    const std::size_t comma = std::min(text->find(',', from), text->size());
    const std::size_t first = text->find_first_not_of(" \t", from);
    if (first < comma) {
      const std::size_t last = text->find_last_not_of(" \t", comma - 1);
      items.push_back(text->substr(first, last - first + 1));
    }
    from = comma + 1;
  }
  return items;
}

SourceLocation TomlValues::where(std::string_view key) const {
  if (const auto it = entries_.find(key); it != entries_.end()) return it->second.where;
  const std::string_view table = key.substr(0, key.rfind('.') == std::string_view::npos ? 0 : key.rfind('.'));
  if (const auto it = tables_.find(table); it != tables_.end()) return it->second;
  return {file_, 0, 0};
}

void TomlValues::fail(std::string_view key, const std::string& message) const {
  throw InputError(where(key), std::string(key), message);
}

std::vector<std::string> TomlValues::unread() const {
  std::vector<std::string> out;
  for (const std::string& key : order_) {
    if (!read_.contains(key)) out.push_back(key);
  }
  return out;
}

}  // namespace mpsim::interop
