#include "sim/core/units.h"

#include <array>
#include <charconv>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace mpsim {

TimeNs transfer_time(Bytes size, BytesPerSec rate) noexcept {
  if (size.count() <= 0) return TimeNs::ns(0);
  const double ns = static_cast<double>(size.count()) / rate.in_bytes_per_sec() * 1e9;
  return TimeNs::ns(static_cast<std::int64_t>(std::ceil(ns - 1e-6)));
}

TimeNs compute_time(Flops work, FlopsPerSec rate) noexcept {
  if (work.count() <= 0) return TimeNs::ns(0);
  const double ns = work.count() / rate.in_flop_per_sec() * 1e9;
  return TimeNs::ns(static_cast<std::int64_t>(std::ceil(ns - 1e-6)));
}

namespace {

struct UnitSpelling {
  std::string_view suffix;
  double factor;  // to the base unit
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

/// Splits "900 GB/s" into the number 900 and the unit "GB/s".
struct NumberAndUnit {
  double number = 0;
  std::string_view unit;
  bool ok = false;
};

NumberAndUnit split_number(std::string_view text) {
  text = trim(text);
  NumberAndUnit out;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(first, last, out.number);
  if (ec != std::errc() || ptr == first) return out;
  out.unit = trim(std::string_view(ptr, static_cast<std::size_t>(last - ptr)));
  out.ok = std::isfinite(out.number);
  return out;
}

template <std::size_t N>
const UnitSpelling* find_unit(std::string_view unit, const std::array<UnitSpelling, N>& table) {
  for (const auto& u : table) {
    if (u.suffix == unit) return &u;
  }
  return nullptr;
}

template <std::size_t N>
std::string accepted(const std::array<UnitSpelling, N>& table) {
  std::string out;
  for (const auto& u : table) {
    if (u.suffix.empty()) continue;
    if (!out.empty()) out += ", ";
    out += u.suffix;
  }
  return out;
}

/// Parses a value against a unit table; `what` names the kind of quantity for messages.
template <std::size_t N>
ParseResult<double> parse_scaled(std::string_view text, const std::array<UnitSpelling, N>& table,
                                 std::string_view what, std::string_view example) {
  ParseResult<double> r;
  const NumberAndUnit nu = split_number(text);
  if (!nu.ok) {
    r.error = fmt::format("'{}' is not a {} (expected a number and a unit, e.g. '{}')", trim(text), what, example);
    return r;
  }
  const UnitSpelling* unit = find_unit(nu.unit, table);
  if (unit == nullptr) {
    r.error = nu.unit.empty()
                  ? fmt::format("'{}' needs a unit for a {} (one of {})", trim(text), what, accepted(table))
                  : fmt::format("unknown unit '{}' in {} '{}' (one of {})", nu.unit, what, trim(text),
                                accepted(table));
    return r;
  }
  if (nu.number < 0) {
    r.error = fmt::format("{} '{}' must not be negative", what, trim(text));
    return r;
  }
  r.value = nu.number * unit->factor;
  return r;
}

constexpr double kKi = 1024.0;
constexpr std::array kByteUnits{
    UnitSpelling{"", 1.0},  // a bare integer counts bytes
    UnitSpelling{"B", 1.0},
    UnitSpelling{"KB", 1e3}, UnitSpelling{"kB", 1e3}, UnitSpelling{"MB", 1e6}, UnitSpelling{"GB", 1e9},
    UnitSpelling{"TB", 1e12}, UnitSpelling{"PB", 1e15},
    UnitSpelling{"KiB", kKi}, UnitSpelling{"MiB", kKi * kKi}, UnitSpelling{"GiB", kKi * kKi * kKi},
    UnitSpelling{"TiB", kKi * kKi * kKi * kKi}, UnitSpelling{"PiB", kKi * kKi * kKi * kKi * kKi},
};

constexpr std::array kBandwidthUnits{
    UnitSpelling{"B/s", 1.0},
    UnitSpelling{"KB/s", 1e3}, UnitSpelling{"MB/s", 1e6}, UnitSpelling{"GB/s", 1e9}, UnitSpelling{"TB/s", 1e12},
    UnitSpelling{"KBps", 1e3}, UnitSpelling{"MBps", 1e6}, UnitSpelling{"GBps", 1e9}, UnitSpelling{"TBps", 1e12},
    UnitSpelling{"KiB/s", kKi}, UnitSpelling{"MiB/s", kKi * kKi}, UnitSpelling{"GiB/s", kKi * kKi * kKi},
    UnitSpelling{"b/s", 1.0 / 8},
    UnitSpelling{"Kb/s", 1e3 / 8}, UnitSpelling{"Mb/s", 1e6 / 8}, UnitSpelling{"Gb/s", 1e9 / 8},
    UnitSpelling{"Tb/s", 1e12 / 8},
    UnitSpelling{"Kbps", 1e3 / 8}, UnitSpelling{"Mbps", 1e6 / 8}, UnitSpelling{"Gbps", 1e9 / 8},
    UnitSpelling{"Tbps", 1e12 / 8},
    UnitSpelling{"Kbit/s", 1e3 / 8}, UnitSpelling{"Mbit/s", 1e6 / 8}, UnitSpelling{"Gbit/s", 1e9 / 8},
    UnitSpelling{"Tbit/s", 1e12 / 8},
};

constexpr std::array kTimeUnits{
    UnitSpelling{"ns", 1.0},
    UnitSpelling{"us", 1e3},
    UnitSpelling{"\xC2\xB5s", 1e3},  // U+00B5 MICRO SIGN
    UnitSpelling{"\xCE\xBCs", 1e3},  // U+03BC GREEK SMALL LETTER MU
    UnitSpelling{"ms", 1e6},
    UnitSpelling{"s", 1e9},
};

constexpr std::array kFlopsRateUnits{
    UnitSpelling{"FLOP/s", 1.0}, UnitSpelling{"FLOPS", 1.0},
    UnitSpelling{"GFLOP/s", 1e9}, UnitSpelling{"GFLOPS", 1e9},
    UnitSpelling{"TFLOP/s", 1e12}, UnitSpelling{"TFLOPS", 1e12},
    UnitSpelling{"PFLOP/s", 1e15}, UnitSpelling{"PFLOPS", 1e15},
    UnitSpelling{"EFLOP/s", 1e18}, UnitSpelling{"EFLOPS", 1e18},
};

constexpr std::array kFlopsUnits{
    UnitSpelling{"", 1.0},
    UnitSpelling{"FLOP", 1.0}, UnitSpelling{"KFLOP", 1e3}, UnitSpelling{"MFLOP", 1e6}, UnitSpelling{"GFLOP", 1e9}, UnitSpelling{"TFLOP", 1e12},
    UnitSpelling{"PFLOP", 1e15}, UnitSpelling{"EFLOP", 1e18},
};

constexpr std::array kPowerUnits{
    UnitSpelling{"W", 1.0}, UnitSpelling{"kW", 1e3}, UnitSpelling{"MW", 1e6},
};

}  // namespace

ParseResult<Watts> parse_power(std::string_view text) {
  ParseResult<Watts> out;
  const auto r = parse_scaled(text, kPowerUnits, "power", "700 W");
  if (!r.ok()) {
    out.error = r.error;
    return out;
  }
  out.value = Watts::watts(r.value);
  return out;
}

ParseResult<Bytes> parse_bytes(std::string_view text) {
  ParseResult<Bytes> out;
  const auto r = parse_scaled(text, kByteUnits, "size", "80 GiB");
  if (!r.ok()) {
    out.error = r.error;
    return out;
  }
  if (r.value > static_cast<double>(std::numeric_limits<std::int64_t>::max() / 2)) {
    out.error = fmt::format("size '{}' is too large", trim(text));
    return out;
  }
  out.value = Bytes::bytes(static_cast<std::int64_t>(std::llround(r.value)));
  return out;
}

ParseResult<BytesPerSec> parse_bandwidth(std::string_view text) {
  ParseResult<BytesPerSec> out;
  const auto r = parse_scaled(text, kBandwidthUnits, "bandwidth", "900 GB/s");
  if (!r.ok()) {
    out.error = r.error;
    return out;
  }
  if (r.value <= 0) {
    out.error = fmt::format("bandwidth '{}' must be positive", trim(text));
    return out;
  }
  out.value = BytesPerSec::bytes_per_sec(r.value);
  return out;
}

namespace {
/// A time in nanoseconds, unrounded; what parse_time and parse_time_seconds share.
ParseResult<double> parse_time_ns(std::string_view text) {
  auto r = parse_scaled(text, kTimeUnits, "time", "2 us");
  if (r.ok() && r.value > 1e18) r.error = fmt::format("time '{}' is too large", trim(text));
  return r;
}
}  // namespace

ParseResult<TimeNs> parse_time(std::string_view text) {
  ParseResult<TimeNs> out;
  const auto r = parse_time_ns(text);
  if (!r.ok()) {
    out.error = r.error;
    return out;
  }
  out.value = TimeNs::ns(std::llround(r.value));
  return out;
}

ParseResult<double> parse_time_seconds(std::string_view text) {
  ParseResult<double> out;
  const auto r = parse_time_ns(text);
  if (!r.ok()) {
    out.error = r.error;
    return out;
  }
  out.value = r.value * 1e-9;
  return out;
}

ParseResult<FlopsPerSec> parse_flops_rate(std::string_view text) {
  ParseResult<FlopsPerSec> out;
  const auto r = parse_scaled(text, kFlopsRateUnits, "compute rate", "989 TFLOP/s");
  if (!r.ok()) {
    out.error = r.error;
    return out;
  }
  if (r.value <= 0) {
    out.error = fmt::format("compute rate '{}' must be positive", trim(text));
    return out;
  }
  out.value = FlopsPerSec::flop_per_sec(r.value);
  return out;
}

ParseResult<Flops> parse_flops(std::string_view text) {
  ParseResult<Flops> out;
  const auto r = parse_scaled(text, kFlopsUnits, "FLOP count", "1.2 TFLOP");
  if (!r.ok()) {
    out.error = r.error;
    return out;
  }
  out.value = Flops::flop(r.value);
  return out;
}

namespace {
/// Three significant digits, no trailing zeros: 38.5, 412, 1.82.
std::string three_digits(double v) {
  const double a = std::fabs(v);
  const int decimals = a >= 100 ? 0 : a >= 10 ? 1 : 2;
  std::string s = fmt::format("{:.{}f}", v, decimals);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

template <std::size_t N>
std::string scaled_string(double v, const std::array<UnitSpelling, N>& ladder) {
  // ladder is ordered from the largest unit to the smallest; the last entry is the fallback.
  for (const auto& u : ladder) {
    if (std::fabs(v) >= u.factor) return fmt::format("{} {}", three_digits(v / u.factor), u.suffix);
  }
  return fmt::format("{} {}", three_digits(v / ladder.back().factor), ladder.back().suffix);
}
}  // namespace

std::string to_string(Bytes v) {
  constexpr std::array ladder{UnitSpelling{"TiB", kKi * kKi * kKi * kKi}, UnitSpelling{"GiB", kKi * kKi * kKi},
                              UnitSpelling{"MiB", kKi * kKi}, UnitSpelling{"KiB", kKi}, UnitSpelling{"B", 1.0}};
  if (v.count() < 1024) return fmt::format("{} B", v.count());
  return scaled_string(static_cast<double>(v.count()), ladder);
}

std::string to_string(BytesPerSec v) {
  constexpr std::array ladder{UnitSpelling{"TB/s", 1e12}, UnitSpelling{"GB/s", 1e9}, UnitSpelling{"MB/s", 1e6},
                              UnitSpelling{"KB/s", 1e3}, UnitSpelling{"B/s", 1.0}};
  return scaled_string(v.in_bytes_per_sec(), ladder);
}

std::string to_string(TimeNs v) {
  constexpr std::array ladder{UnitSpelling{"s", 1e9}, UnitSpelling{"ms", 1e6}, UnitSpelling{"us", 1e3},
                              UnitSpelling{"ns", 1.0}};
  if (v.base() == 0) return "0 s";
  return scaled_string(static_cast<double>(v.base()), ladder);
}

std::string to_string(FlopsPerSec v) {
  constexpr std::array ladder{UnitSpelling{"PFLOP/s", 1e15}, UnitSpelling{"TFLOP/s", 1e12},
                              UnitSpelling{"GFLOP/s", 1e9}, UnitSpelling{"FLOP/s", 1.0}};
  return scaled_string(v.in_flop_per_sec(), ladder);
}

std::string to_string(Flops v) {
  constexpr std::array ladder{UnitSpelling{"EFLOP", 1e18}, UnitSpelling{"PFLOP", 1e15}, UnitSpelling{"TFLOP", 1e12},
                              UnitSpelling{"GFLOP", 1e9}, UnitSpelling{"MFLOP", 1e6}, UnitSpelling{"KFLOP", 1e3},
                              UnitSpelling{"FLOP", 1.0}};
  return scaled_string(v.count(), ladder);
}

std::string to_string(Watts v) {
  constexpr std::array ladder{UnitSpelling{"MW", 1e6}, UnitSpelling{"kW", 1e3}, UnitSpelling{"W", 1.0}};
  return scaled_string(v.in_watts(), ladder);
}

}  // namespace mpsim
