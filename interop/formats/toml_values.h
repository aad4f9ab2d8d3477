#pragma once
/// A TOML file's settings by dotted key (`parallelism.tensor_parallel_degree`), each with where its
/// value is written, for importers that read a framework's job file: typed reads that fail at the value's
/// line and column naming the key, and a list of the keys nothing read. The TOML parser (toml++) stays
/// behind this interface.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "sim/core/input_error.h"

namespace mpsim::interop {

class TomlValues {
 public:
  /// Throws InputError at the first syntax error (toml++'s description, line and column).
  static TomlValues parse(std::string_view text, const std::string& file);

  [[nodiscard]] bool has(std::string_view key) const;
  /// The value at `key`, or nothing when absent; throws at the value when it has another type.
  [[nodiscard]] std::optional<std::int64_t> integer(std::string_view key) const;
  [[nodiscard]] std::optional<bool> flag(std::string_view key) const;
  [[nodiscard]] std::optional<std::string> text(std::string_view key) const;
  [[nodiscard]] std::optional<std::vector<std::string>> texts(std::string_view key) const;
  /// A list of strings, or one string of comma-separated items (blanks around them and empty items dropped), as
  /// TorchTitan reads its list settings: its argparse-era config manager split a TOML string with `string_list`
  /// (torchtitan/config_manager.py until April 2025), its tyro one splits a command-line value at commas
  /// (torchtitan/config/manager.py, list_str_rule), and its presets wrote `converters = "float8"`.
  [[nodiscard]] std::optional<std::vector<std::string>> string_list(std::string_view key) const;

  /// Where `key`'s value is written; for an absent key, its table's header, else the file.
  [[nodiscard]] SourceLocation where(std::string_view key) const;
  /// The InputError for `key`, at where(key), the field named by the key.
  [[noreturn]] void fail(std::string_view key, const std::string& message) const;
  /// Every key none of the reads above asked for, in file order.
  [[nodiscard]] std::vector<std::string> unread() const;
  [[nodiscard]] const std::string& file() const noexcept { return file_; }

 private:
  struct OtherType {
    std::string name;  ///< "a float", "a table array", ...
  };
  using Value = std::variant<std::int64_t, bool, std::string, std::vector<std::string>, OtherType>;
  struct Entry {
    Value value;
    std::string shown;  ///< the value as written, for errors
    SourceLocation where;
  };

  [[nodiscard]] const Entry* find(std::string_view key) const;
  template <typename T>
  [[nodiscard]] std::optional<T> read(std::string_view key, std::string_view expected) const;

  std::string file_;
  std::vector<std::string> order_;  ///< keys in file order
  std::map<std::string, Entry, std::less<>> entries_;
  std::map<std::string, SourceLocation, std::less<>> tables_;
  mutable std::set<std::string, std::less<>> read_;

  friend class TomlFlattener;
};

}  // namespace mpsim::interop
