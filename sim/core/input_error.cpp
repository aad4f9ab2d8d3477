#include "sim/core/input_error.h"

#include <fmt/format.h>

namespace mpsim {

std::string format_input_error(const SourceLocation& where, const std::string& field, const std::string& message) {
  std::string out = where.file;
  if (where.line > 0) out += fmt::format(":{}:{}", where.line, where.column > 0 ? where.column : 1);
  if (!out.empty()) out += ": ";
  out += message;
  if (!field.empty()) out += fmt::format(" (field '{}')", field);
  return out;
}

InputError::InputError(SourceLocation where, std::string field, std::string message)
    : std::runtime_error(format_input_error(where, field, message)),
      where_(std::move(where)),
      field_(std::move(field)),
      message_(std::move(message)) {}

}  // namespace mpsim
