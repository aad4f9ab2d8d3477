#pragma once
/// Strong unit types for every quantity that crosses a module boundary.
///
/// A quantity is built only through a named factory or literal that says its unit
/// (`Bytes::gib(80)`, `80_GiB`, `BytesPerSec::gigabits_per_sec(400)`), so a GB/GiB or a
/// bits/bytes mix-up cannot compile: there is no constructor from a bare number.
/// Internal representation: bytes (int64), bytes per second (double), nanoseconds (int64),
/// FLOP (double), FLOP per second (double), watts (double).
#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

namespace mpsim {

/// `v` rounded to the nearest integer, saturated at int64's range (NaN gives 0): a count far past
/// what any run holds (a 1e14 s MTBF is 1e23 ns) stays ordered instead of wrapping.
[[nodiscard]] constexpr std::int64_t saturating_round(double v) noexcept {
  constexpr double kLimit = 9.2e18;  // below INT64_MAX (9.22e18), exactly representable
  if (!(v == v)) return 0;
  if (v >= kLimit) return static_cast<std::int64_t>(kLimit);
  if (v <= -kLimit) return -static_cast<std::int64_t>(kLimit);
  return static_cast<std::int64_t>(v + (v >= 0 ? 0.5 : -0.5));
}

template <typename Tag, typename Rep>
class Quantity {
 public:
  using rep = Rep;
  constexpr Quantity() noexcept = default;
  /// The raw count in the base unit (bytes, ns, B/s, FLOP, FLOP/s). Use at I/O boundaries only.
  [[nodiscard]] static constexpr Quantity from_base(Rep base) noexcept { return Quantity(base); }
  [[nodiscard]] constexpr Rep base() const noexcept { return value_; }

  constexpr auto operator<=>(const Quantity&) const noexcept = default;
  constexpr Quantity operator+(Quantity o) const noexcept { return Quantity(value_ + o.value_); }
  constexpr Quantity operator-(Quantity o) const noexcept { return Quantity(value_ - o.value_); }
  constexpr Quantity& operator+=(Quantity o) noexcept { value_ += o.value_; return *this; }
  constexpr Quantity& operator-=(Quantity o) noexcept { value_ -= o.value_; return *this; }
  constexpr Quantity operator*(Rep k) const noexcept { return Quantity(value_ * k); }
  constexpr Quantity operator/(Rep k) const noexcept { return Quantity(value_ / k); }
  friend constexpr Quantity operator*(Rep k, Quantity q) noexcept { return Quantity(k * q.value_); }
  /// Ratio of two quantities of the same kind.
  constexpr double operator/(Quantity o) const noexcept {
    return static_cast<double>(value_) / static_cast<double>(o.value_);
  }

 private:
  constexpr explicit Quantity(Rep v) noexcept : value_(v) {}
  Rep value_{};
};

struct BytesTag;
struct BytesPerSecTag;
struct TimeNsTag;
struct FlopsTag;
struct FlopsPerSecTag;
struct WattsTag;

/// A byte count (memory, message sizes).
class Bytes : public Quantity<BytesTag, std::int64_t> {
 public:
  using Quantity::Quantity;
  constexpr Bytes(Quantity q) noexcept : Quantity(q) {}  // NOLINT: arithmetic results
  [[nodiscard]] static constexpr Bytes bytes(std::int64_t n) noexcept { return Bytes(from_base(n)); }
  [[nodiscard]] static constexpr Bytes kib(double n) noexcept { return scaled(n, 1024.0); }
  [[nodiscard]] static constexpr Bytes mib(double n) noexcept { return scaled(n, 1024.0 * 1024.0); }
  [[nodiscard]] static constexpr Bytes gib(double n) noexcept { return scaled(n, 1024.0 * 1024.0 * 1024.0); }
  [[nodiscard]] static constexpr Bytes kb(double n) noexcept { return scaled(n, 1e3); }
  [[nodiscard]] static constexpr Bytes mb(double n) noexcept { return scaled(n, 1e6); }
  [[nodiscard]] static constexpr Bytes gb(double n) noexcept { return scaled(n, 1e9); }
  [[nodiscard]] constexpr std::int64_t count() const noexcept { return base(); }

 private:
  static constexpr Bytes scaled(double n, double unit) noexcept {
    return Bytes(from_base(saturating_round(n * unit)));
  }
};

/// A duration in integer nanoseconds: the simulator's clock unit.
class TimeNs : public Quantity<TimeNsTag, std::int64_t> {
 public:
  using Quantity::Quantity;
  constexpr TimeNs(Quantity q) noexcept : Quantity(q) {}  // NOLINT: arithmetic results
  [[nodiscard]] static constexpr TimeNs ns(std::int64_t n) noexcept { return TimeNs(from_base(n)); }
  /// Rounds to the nearest nanosecond, saturating at about 292 years.
  [[nodiscard]] static constexpr TimeNs seconds(double s) noexcept {
    return TimeNs(from_base(saturating_round(s * 1e9)));
  }
  [[nodiscard]] static constexpr TimeNs us(double v) noexcept { return seconds(v * 1e-6); }
  [[nodiscard]] static constexpr TimeNs ms(double v) noexcept { return seconds(v * 1e-3); }
  [[nodiscard]] constexpr double to_seconds() const noexcept { return static_cast<double>(base()) * 1e-9; }
};

/// A rate of bytes per second, in one direction.
class BytesPerSec : public Quantity<BytesPerSecTag, double> {
 public:
  using Quantity::Quantity;
  constexpr BytesPerSec(Quantity q) noexcept : Quantity(q) {}  // NOLINT: arithmetic results
  [[nodiscard]] static constexpr BytesPerSec bytes_per_sec(double v) noexcept { return BytesPerSec(from_base(v)); }
  [[nodiscard]] static constexpr BytesPerSec gigabytes_per_sec(double v) noexcept { return bytes_per_sec(v * 1e9); }
  [[nodiscard]] static constexpr BytesPerSec gigabits_per_sec(double v) noexcept { return bytes_per_sec(v * 1e9 / 8); }
  [[nodiscard]] constexpr double in_bytes_per_sec() const noexcept { return base(); }
};

/// A count of floating-point operations.
class Flops : public Quantity<FlopsTag, double> {
 public:
  using Quantity::Quantity;
  constexpr Flops(Quantity q) noexcept : Quantity(q) {}  // NOLINT: arithmetic results
  [[nodiscard]] static constexpr Flops flop(double v) noexcept { return Flops(from_base(v)); }
  [[nodiscard]] constexpr double count() const noexcept { return base(); }
};

/// A compute rate in FLOP per second.
class FlopsPerSec : public Quantity<FlopsPerSecTag, double> {
 public:
  using Quantity::Quantity;
  constexpr FlopsPerSec(Quantity q) noexcept : Quantity(q) {}  // NOLINT: arithmetic results
  [[nodiscard]] static constexpr FlopsPerSec flop_per_sec(double v) noexcept { return FlopsPerSec(from_base(v)); }
  [[nodiscard]] static constexpr FlopsPerSec tflop_per_sec(double v) noexcept { return flop_per_sec(v * 1e12); }
  [[nodiscard]] constexpr double in_flop_per_sec() const noexcept { return base(); }
};

/// Electrical power (a GPU's TDP, a node's overhead).
class Watts : public Quantity<WattsTag, double> {
 public:
  using Quantity::Quantity;
  constexpr Watts(Quantity q) noexcept : Quantity(q) {}  // NOLINT: arithmetic results
  [[nodiscard]] static constexpr Watts watts(double v) noexcept { return Watts(from_base(v)); }
  [[nodiscard]] static constexpr Watts kilowatts(double v) noexcept { return watts(v * 1e3); }
  [[nodiscard]] constexpr double in_watts() const noexcept { return base(); }
};

/// Time to move `size` at `rate`, rounded up to the next nanosecond (a transfer is never free).
[[nodiscard]] TimeNs transfer_time(Bytes size, BytesPerSec rate) noexcept;
/// Time to compute `work` at `rate`, rounded up to the next nanosecond.
[[nodiscard]] TimeNs compute_time(Flops work, FlopsPerSec rate) noexcept;

namespace literals {
constexpr Bytes operator""_B(unsigned long long v) { return Bytes::bytes(static_cast<std::int64_t>(v)); }
constexpr Bytes operator""_KiB(unsigned long long v) { return Bytes::kib(static_cast<double>(v)); }
constexpr Bytes operator""_MiB(unsigned long long v) { return Bytes::mib(static_cast<double>(v)); }
constexpr Bytes operator""_GiB(unsigned long long v) { return Bytes::gib(static_cast<double>(v)); }
constexpr Bytes operator""_GB(unsigned long long v) { return Bytes::gb(static_cast<double>(v)); }
constexpr Bytes operator""_MB(unsigned long long v) { return Bytes::mb(static_cast<double>(v)); }
constexpr TimeNs operator""_ns(unsigned long long v) { return TimeNs::ns(static_cast<std::int64_t>(v)); }
constexpr TimeNs operator""_us(long double v) { return TimeNs::us(static_cast<double>(v)); }
constexpr TimeNs operator""_us(unsigned long long v) { return TimeNs::us(static_cast<double>(v)); }
constexpr TimeNs operator""_ms(unsigned long long v) { return TimeNs::ms(static_cast<double>(v)); }
constexpr BytesPerSec operator""_GBps(unsigned long long v) { return BytesPerSec::gigabytes_per_sec(static_cast<double>(v)); }
constexpr BytesPerSec operator""_GBps(long double v) { return BytesPerSec::gigabytes_per_sec(static_cast<double>(v)); }
constexpr BytesPerSec operator""_Gbps(unsigned long long v) { return BytesPerSec::gigabits_per_sec(static_cast<double>(v)); }
constexpr FlopsPerSec operator""_TFLOPps(unsigned long long v) { return FlopsPerSec::tflop_per_sec(static_cast<double>(v)); }
constexpr FlopsPerSec operator""_TFLOPps(long double v) { return FlopsPerSec::tflop_per_sec(static_cast<double>(v)); }
}  // namespace literals

// ---- Parsing and printing as people write them -------------------------------------------------
// Parsers return an error message (naming the value) instead of throwing: the YAML layer adds the
// file, line and field. Accepted spellings are listed in docs/formats.md.

template <typename T>
struct ParseResult {
  T value{};
  std::string error;  ///< empty on success
  [[nodiscard]] bool ok() const noexcept { return error.empty(); }
};

/// "80 GiB", "80 GB", "512 MiB", "1024 B", "4096" (a bare integer counts bytes).
[[nodiscard]] ParseResult<Bytes> parse_bytes(std::string_view text);
/// "900 GB/s", "400 Gb/s", "400 Gbps", "12.5 GBps", "25 GiB/s". Bits and bytes per the case of 'b'.
[[nodiscard]] ParseResult<BytesPerSec> parse_bandwidth(std::string_view text);
/// "2 us", "1.5 µs", "1.5 μs", "800 ns", "18.5 ms", "1 s".
[[nodiscard]] ParseResult<TimeNs> parse_time(std::string_view text);
/// A time as parse_time() reads it, in seconds and not rounded to whole nanoseconds: for per-element
/// costs such as "7.24 ns" per parameter.
[[nodiscard]] ParseResult<double> parse_time_seconds(std::string_view text);
/// "989 TFLOP/s", "989 TFLOPS", "19.5 TFLOP/s".
[[nodiscard]] ParseResult<FlopsPerSec> parse_flops_rate(std::string_view text);
/// "1.2 TFLOP", "3.5e12 FLOP", or a bare number.
[[nodiscard]] ParseResult<Flops> parse_flops(std::string_view text);
/// "700 W", "1.2 kW", "10.2 kW".
[[nodiscard]] ParseResult<Watts> parse_power(std::string_view text);

/// Readable forms for tables: "38.5 GiB", "412 GB/s", "1.82 s", "156 TFLOP/s".
[[nodiscard]] std::string to_string(Bytes v);
[[nodiscard]] std::string to_string(Watts v);
[[nodiscard]] std::string to_string(BytesPerSec v);
[[nodiscard]] std::string to_string(TimeNs v);
[[nodiscard]] std::string to_string(FlopsPerSec v);
[[nodiscard]] std::string to_string(Flops v);

}  // namespace mpsim
