#pragma once
/// Time <-> pixel mapping of the timeline and the time axis (ticks with readable units).
/// Pure functions and a value type, so the tests can pin them without a window.
#include <QString>

#include <cstdint>
#include <vector>

namespace mpsim::view {

/// x = (t - startNs) / nsPerPixel, with x = 0 at the left edge of the plot area.
class TimeMapping {
 public:
  static constexpr double kMinNsPerPixel = 1e-3;  ///< deepest zoom: 1000 pixels per nanosecond
  static constexpr double kMaxNsPerPixel = 1e12;

  TimeMapping() = default;
  TimeMapping(double startNs, double nsPerPixel);

  [[nodiscard]] double toPixel(double ns) const noexcept { return (ns - m_startNs) / m_nsPerPixel; }
  [[nodiscard]] double toTime(double px) const noexcept { return m_startNs + px * m_nsPerPixel; }
  [[nodiscard]] double startNs() const noexcept { return m_startNs; }
  [[nodiscard]] double nsPerPixel() const noexcept { return m_nsPerPixel; }
  [[nodiscard]] double endNs(double widthPx) const noexcept { return toTime(widthPx); }

  /// Shows [t0, t1] across widthPx pixels.
  void showRange(double t0, double t1, double widthPx);
  /// Zooms by `factor` (> 1 zooms in) keeping the time under pixel `px` in place.
  void zoomAt(double px, double factor);
  /// Moves the view right by dx pixels (the content moves left).
  void panPixels(double dx) noexcept { m_startNs += dx * m_nsPerPixel; }

  friend bool operator==(const TimeMapping&, const TimeMapping&) = default;

 private:
  double m_startNs = 0;
  double m_nsPerPixel = 1;
};

struct AxisTick {
  double ns = 0;  ///< absolute time of the tick
  QString label;  ///< relative to the origin, in the unit of the tick step
};

/// The tick step for a given scale: 1, 2 or 5 x 10^k ns, at least minSpacingPx apart.
[[nodiscard]] double tickStepNs(double nsPerPixel, double minSpacingPx);
/// Ticks in [startNs, endNs], labelled relative to originNs ("0", "5 ms", "10 ms", "1.5 s").
[[nodiscard]] std::vector<AxisTick> axisTicks(const TimeMapping& mapping, double widthPx, double originNs,
                                              double minSpacingPx = 80);
/// A duration with three significant decimals in a fitting unit: "850 ns", "12.345 µs", "1.500 ms", "2.000 s".
[[nodiscard]] QString formatDuration(double ns);
/// A byte count: "512 B", "24.0 MiB", "1.50 GiB".
[[nodiscard]] QString formatBytes(std::int64_t bytes);

}  // namespace mpsim::view
