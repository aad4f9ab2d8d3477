#pragma once
/// The one exception type of the I/O boundary: bad input, located in a file.
///
/// Loaders throw it; `main()` catches it, prints `mpsim: error: ` + what(), and exits 2.
/// Inside the libraries, a problem is a plain value instead (an optional error, as schedule::validate
/// and plan::degrees_error return), and a broken precondition throws std::invalid_argument.
#include <stdexcept>
#include <string>

namespace mpsim {

struct SourceLocation {
  std::string file;  ///< as the user named it
  int line = 0;      ///< 1-based; 0 when unknown
  int column = 0;    ///< 1-based; 0 when unknown
};

class InputError : public std::runtime_error {
 public:
  /// `field` is the dotted path of the offending field (`links[3].bandwidth`), empty for the whole file.
  InputError(SourceLocation where, std::string field, std::string message);

  [[nodiscard]] const SourceLocation& where() const noexcept { return where_; }
  [[nodiscard]] const std::string& field() const noexcept { return field_; }
  [[nodiscard]] const std::string& message() const noexcept { return message_; }

 private:
  SourceLocation where_;
  std::string field_;
  std::string message_;
};

/// "FILE:LINE:COL: message (field 'path')": the one-line form docs/formats.md opens with.
[[nodiscard]] std::string format_input_error(const SourceLocation& where, const std::string& field,
                                             const std::string& message);

}  // namespace mpsim
