#pragma once
/// Typed, located access to YAML documents: the one place where YAML text becomes values.
///
/// Every accessor either returns a typed value or throws InputError naming the file, the line and
/// column of the offending node, and the field's dotted path (`links[3].bandwidth`). Loaders call
/// `expect_keys` on every mapping so that a misspelt field is an error, never a silent default.
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include "sim/core/input_error.h"
#include "sim/core/units.h"
#include "sim/core/yaml_override.h"

namespace mpsim {

class Field {
 public:
  Field(std::shared_ptr<const std::string> file, YAML::Node node, std::string path, YAML::Mark fallback_mark);

  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  [[nodiscard]] const std::string& file() const noexcept { return *file_; }
  [[nodiscard]] SourceLocation location() const;
  [[nodiscard]] const YAML::Node& node() const noexcept { return node_; }

  [[nodiscard]] bool is_map() const noexcept { return node_.IsMap(); }
  [[nodiscard]] bool is_sequence() const noexcept { return node_.IsSequence(); }
  [[nodiscard]] bool is_scalar() const noexcept { return node_.IsScalar(); }
  [[nodiscard]] bool is_null() const noexcept { return !node_.IsDefined() || node_.IsNull(); }

  /// A mapping's child; throws when this is not a mapping or the key is missing.
  [[nodiscard]] Field require(std::string_view key) const;
  /// A mapping's child, or nothing when absent; throws when this is not a mapping.
  [[nodiscard]] std::optional<Field> get(std::string_view key) const;
  [[nodiscard]] bool has(std::string_view key) const;
  /// Throws at the first key not in `allowed`, and at a key given twice.
  void expect_keys(std::initializer_list<std::string_view> allowed) const;
  void expect_keys(std::span<const std::string_view> allowed) const;
  /// Entries of a mapping in document order.
  [[nodiscard]] std::vector<std::pair<std::string, Field>> entries() const;
  /// Elements of a sequence; throws when this is not a sequence.
  [[nodiscard]] std::vector<Field> items() const;
  /// Elements of a sequence, or a one-element list when this is a scalar (`from: gpu0` or `from: [gpu0, gpu1]`).
  [[nodiscard]] std::vector<Field> items_or_scalar() const;

  [[nodiscard]] std::string as_string() const;
  [[nodiscard]] double as_double() const;
  [[nodiscard]] std::int64_t as_int() const;
  /// An integer in [min, max].
  [[nodiscard]] std::int64_t as_int_in(std::int64_t min, std::int64_t max) const;
  [[nodiscard]] double as_double_in(double min, double max) const;
  [[nodiscard]] bool as_bool() const;
  [[nodiscard]] Bytes as_bytes() const;
  [[nodiscard]] BytesPerSec as_bandwidth() const;
  [[nodiscard]] TimeNs as_time() const;
  /// A time in seconds, not rounded to whole nanoseconds (per-element costs).
  [[nodiscard]] double as_time_seconds() const;
  [[nodiscard]] FlopsPerSec as_flops_rate() const;
  [[nodiscard]] Flops as_flops() const;
  [[nodiscard]] Watts as_power() const;

  /// One of a fixed set of words (a table of (word, value) pairs); the message lists them.
  template <typename Names>
  [[nodiscard]] auto as_enum(const Names& names) const {
    const std::string word = as_string();
    for (const auto& [name, value] : names) {
      if (name == word) return value;
    }
    std::string list;
    for (const auto& [name, value] : names) {
      if (!list.empty()) list += ", ";
      list += name;
    }
    fail("unknown value '" + word + "' (one of " + list + ")");
  }

  [[noreturn]] void fail(const std::string& message) const;

 private:
  [[nodiscard]] std::string scalar_text(std::string_view expected) const;
  [[nodiscard]] Field child(const YAML::Node& node, std::string child_path) const;

  std::shared_ptr<const std::string> file_;
  YAML::Node node_;
  std::string path_;
  YAML::Mark fallback_mark_;  // where to point when this node is missing (its parent)
};

/// A parsed YAML document with its source name.
class YamlDocument {
 public:
  /// Parses text; a syntax error becomes an InputError at the parser's line and column.
  [[nodiscard]] static YamlDocument parse(const std::string& text, std::string source_name);
  /// Reads (see read_text_file's limits) and parses a file.
  [[nodiscard]] static YamlDocument load(const std::filesystem::path& path);

  /// The document's top level, which must be a mapping.
  [[nodiscard]] Field root() const;
  [[nodiscard]] const std::string& source_name() const noexcept { return *source_; }
  /// Applies a what-if override before the document is read (values it sets have no line).
  void apply(const Override& o) { apply_override(root_, o); }
  [[nodiscard]] bool has_top_level(std::string_view key) const { return root_.IsMap() && root_[std::string(key)].IsDefined(); }

 private:
  YamlDocument(std::shared_ptr<const std::string> source, YAML::Node root);
  std::shared_ptr<const std::string> source_;
  YAML::Node root_;
};

}  // namespace mpsim
