#include "sim/core/yaml_field.h"

#include <charconv>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "sim/core/did_you_mean.h"
#include "sim/core/input_error_collector.h"
#include "sim/core/text_file.h"
#include "sim/core/utf8.h"

namespace mpsim {
namespace {

std::string join_key(const std::string& parent, std::string_view key) {
  return parent.empty() ? std::string(key) : parent + "." + std::string(key);
}

SourceLocation location_of(const std::string& file, const YAML::Mark& mark) {
  if (mark.is_null()) return {file, 0, 0};
  return {file, mark.line + 1, mark.column + 1};
}

/// Why `text` is not text a YAML file can hold and be written back as it is (first_unwritable_text at
/// byte `at`): each name mpsim reads may be written again (a profile, a topology).
std::string not_text_message(std::string_view text, std::size_t at) {
  const Utf8Character c = utf8_character_at(text, at);
  if (c.length == 0) {
    return fmt::format("is not UTF-8 text: byte {} (0x{:02X}) starts no character (the \\N and \\_ escapes write such a byte; "
                       "\\u0085 and \\u00A0 write those characters)",
                       at + 1, static_cast<unsigned char>(text[at]));
  }
  return fmt::format("holds the noncharacter U+{:04X}, which no YAML file writes back", c.code_point);
}

/// Refuses a key of the mapping at `map_path` that is not such text (a key is a name as much as a value).
void require_key_text(const std::string& file, const YAML::Node& key, const std::string& map_path) {
  const std::string& name = key.Scalar();
  if (const auto at = first_unwritable_text(name)) {
    throw InputError(location_of(file, key.Mark()), map_path, "a key " + not_text_message(name, *at));
  }
}

template <typename ParseFn>
auto parse_unit(const Field& field, std::string_view expected, ParseFn parse) {
  if (!field.is_scalar()) field.fail(fmt::format("expected a {}, found {}", expected, field.is_map() ? "a mapping" : field.is_sequence() ? "a list" : "nothing"));
  const auto result = parse(field.node().Scalar());
  if (!result.ok()) field.fail(result.error);
  return result.value;
}

}  // namespace

Field::Field(std::shared_ptr<const std::string> file, YAML::Node node, std::string path, YAML::Mark fallback_mark)
    : file_(std::move(file)), node_(std::move(node)), path_(std::move(path)), fallback_mark_(fallback_mark) {}

SourceLocation Field::location() const {
  if (node_.IsDefined() && !node_.Mark().is_null()) return location_of(*file_, node_.Mark());
  return location_of(*file_, fallback_mark_);
}

void Field::fail(const std::string& message) const { throw InputError(location(), path_, message); }

Field Field::child(const YAML::Node& node, std::string child_path) const {
  const YAML::Mark here = node_.IsDefined() ? node_.Mark() : fallback_mark_;
  return Field(file_, node, std::move(child_path), here);
}

std::optional<Field> Field::get(std::string_view key) const {
  if (!node_.IsMap()) fail(fmt::format("expected a mapping with '{}'", key));
  for (const auto& entry : node_) {
    if (entry.first.IsScalar() && entry.first.Scalar() == key) {
      return Field(file_, entry.second, join_key(path_, key), entry.first.Mark());
    }
  }
  return std::nullopt;
}

bool Field::has(std::string_view key) const { return node_.IsMap() && get(key).has_value(); }

Field Field::require(std::string_view key) const {
  auto found = get(key);
  if (!found) throw InputError(location(), join_key(path_, key), "missing required field");
  if (found->is_null()) found->fail("is empty");
  return *found;
}

void Field::expect_keys(std::initializer_list<std::string_view> allowed) const {
  expect_keys(std::span<const std::string_view>(allowed.begin(), allowed.size()));
}

void Field::expect_keys(std::span<const std::string_view> allowed) const {
  if (!node_.IsMap()) fail("expected a mapping");
  std::set<std::string, std::less<>> seen;
  for (const auto& entry : node_) {
    const Field key(file_, entry.first, path_, node_.Mark());
    if (!entry.first.IsScalar()) key.fail("a key must be a plain word");
    const std::string& name = entry.first.Scalar();
    require_key_text(*file_, entry.first, path_);
    const std::string key_path = join_key(path_, name);
    bool known = false;
    for (const auto a : allowed) known = known || a == name;
    // Both errors leave the rest readable (the loader ignores an unknown field and reads the first of
    // two), so a collector may keep them and go on (sim/core/input_error_collector.h).
    if (!known) {
      std::string list;
      for (const auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      InputErrorCollector::keep_or_throw(InputError(
          location_of(*file_, entry.first.Mark()), key_path,
          fmt::format("unknown field '{}'{} (expected one of: {})", name, did_you_mean(name, allowed), list)));
    } else if (!seen.insert(name).second) {
      InputErrorCollector::keep_or_throw(
          InputError(location_of(*file_, entry.first.Mark()), key_path, "field given twice"));
    }
  }
}

std::vector<std::pair<std::string, Field>> Field::entries() const {
  if (!node_.IsMap()) fail("expected a mapping");
  std::vector<std::pair<std::string, Field>> out;
  std::set<std::string, std::less<>> seen;
  for (const auto& entry : node_) {
    if (!entry.first.IsScalar()) Field(file_, entry.first, path_, node_.Mark()).fail("a key must be a plain word");
    const std::string& name = entry.first.Scalar();
    require_key_text(*file_, entry.first, path_);
    if (!seen.insert(name).second) {
      throw InputError(location_of(*file_, entry.first.Mark()), join_key(path_, name), "field given twice");
    }
    out.emplace_back(name, Field(file_, entry.second, join_key(path_, name), entry.first.Mark()));
  }
  return out;
}

std::vector<Field> Field::items() const {
  if (!node_.IsSequence()) fail("expected a list");
  std::vector<Field> out;
  out.reserve(node_.size());
  std::size_t i = 0;
  for (const auto& element : node_) out.push_back(child(element, fmt::format("{}[{}]", path_, i++)));
  return out;
}

std::vector<Field> Field::items_or_scalar() const {
  if (node_.IsScalar()) return {*this};
  return items();
}

std::string Field::scalar_text(std::string_view expected) const {
  if (!node_.IsDefined() || node_.IsNull()) fail(fmt::format("expected {}, found nothing", expected));
  if (!node_.IsScalar()) fail(fmt::format("expected {}, found {}", expected, node_.IsMap() ? "a mapping" : "a list"));
  return node_.Scalar();
}

std::string Field::as_string() const {
  std::string text = scalar_text("a word");
  if (const auto at = first_unwritable_text(text)) fail(not_text_message(text, *at));
  return text;
}

double Field::as_double() const {
  const std::string text = scalar_text("a number");
  double value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(value)) {
    fail(fmt::format("'{}' is not a number", text));
  }
  return value;
}

std::int64_t Field::as_int() const {
  const std::string text = scalar_text("an integer");
  std::int64_t value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range) fail(fmt::format("'{}' is out of range", text));
  if (ec != std::errc() || ptr != text.data() + text.size()) {
    // Accept integral values written in floating notation (1e3, 8.0).
    double d = 0;
    const auto [dptr, dec] = std::from_chars(text.data(), text.data() + text.size(), d);
    if (dec == std::errc() && dptr == text.data() + text.size() && std::isfinite(d) && d == std::floor(d) &&
        std::fabs(d) < 9.0e15) {
      return static_cast<std::int64_t>(d);
    }
    fail(fmt::format("'{}' is not an integer", text));
  }
  return value;
}

std::int64_t Field::as_int_in(std::int64_t min, std::int64_t max) const {
  const std::int64_t v = as_int();
  if (v < min) fail(fmt::format("must be at least {}, got {}", min, v));
  if (v > max) fail(fmt::format("must be at most {}, got {}", max, v));
  return v;
}

double Field::as_double_in(double min, double max) const {
  const double v = as_double();
  if (v < min || v > max) fail(fmt::format("must be between {} and {}, got {}", min, max, v));
  return v;
}

bool Field::as_bool() const {
  const std::string text = scalar_text("true or false");
  if (text == "true" || text == "yes" || text == "on") return true;
  if (text == "false" || text == "no" || text == "off") return false;
  fail(fmt::format("'{}' is not true or false", text));
}

Bytes Field::as_bytes() const { return parse_unit(*this, "size such as '80 GiB'", parse_bytes); }
BytesPerSec Field::as_bandwidth() const { return parse_unit(*this, "bandwidth such as '900 GB/s'", parse_bandwidth); }
TimeNs Field::as_time() const { return parse_unit(*this, "time such as '2 us'", parse_time); }
double Field::as_time_seconds() const { return parse_unit(*this, "time such as '7.2 ns'", parse_time_seconds); }
FlopsPerSec Field::as_flops_rate() const { return parse_unit(*this, "compute rate such as '989 TFLOP/s'", parse_flops_rate); }
Flops Field::as_flops() const { return parse_unit(*this, "FLOP count", parse_flops); }
Watts Field::as_power() const { return parse_unit(*this, "power", parse_power); }

YamlDocument::YamlDocument(std::shared_ptr<const std::string> source, YAML::Node root)
    : source_(std::move(source)), root_(std::move(root)) {}

YamlDocument YamlDocument::parse(const std::string& text, std::string source_name) {
  auto source = std::make_shared<const std::string>(std::move(source_name));
  try {
    return YamlDocument(source, YAML::Load(text));
  } catch (const YAML::DeepRecursion& e) {
    throw InputError(location_of(*source, e.mark), "", "YAML nesting is too deep");
  } catch (const YAML::Exception& e) {
    throw InputError(location_of(*source, e.mark), "", fmt::format("YAML syntax error: {}", e.msg));
  }
}

YamlDocument YamlDocument::load(const std::filesystem::path& path) {
  return parse(read_text_file(path), path.string());
}

Field YamlDocument::root() const {
  Field top(source_, root_, "", YAML::Mark());
  if (!root_.IsDefined() || root_.IsNull()) throw InputError({*source_, 1, 1}, "", "file is empty");
  if (!root_.IsMap()) top.fail("expected a mapping at the top level");
  return top;
}

}  // namespace mpsim
