#include "gui/time_mapping.h"

#include <algorithm>
#include <cmath>

namespace mpsim::view {

TimeMapping::TimeMapping(double startNs, double nsPerPixel)
    : m_startNs(startNs), m_nsPerPixel(std::clamp(nsPerPixel, kMinNsPerPixel, kMaxNsPerPixel)) {}

void TimeMapping::showRange(double t0, double t1, double widthPx) {
  if (t1 < t0) std::swap(t0, t1);
  const double span = std::max(t1 - t0, 1.0);
  m_startNs = t0;
  m_nsPerPixel = std::clamp(span / std::max(widthPx, 1.0), kMinNsPerPixel, kMaxNsPerPixel);
}

void TimeMapping::zoomAt(double px, double factor) {
  if (!(factor > 0)) return;
  const double anchor = toTime(px);
  m_nsPerPixel = std::clamp(m_nsPerPixel / factor, kMinNsPerPixel, kMaxNsPerPixel);
  m_startNs = anchor - px * m_nsPerPixel;
}

double tickStepNs(double nsPerPixel, double minSpacingPx) {
  const double wanted = std::max(nsPerPixel * minSpacingPx, 1e-3);
  const double decade = std::pow(10.0, std::floor(std::log10(wanted)));
  for (const double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * decade >= wanted * (1 - 1e-9)) return m * decade;
  }
  return 10 * decade;
}

namespace {

struct Unit {
  double ns;
  QString name;
};

Unit unitFor(double magnitudeNs) {
  if (magnitudeNs >= 1e9) return {1e9, QStringLiteral("s")};
  if (magnitudeNs >= 1e6) return {1e6, QStringLiteral("ms")};
  if (magnitudeNs >= 1e3) return {1e3, QStringLiteral("\u00b5s")};
  return {1, QStringLiteral("ns")};
}

}  // namespace

std::vector<AxisTick> axisTicks(const TimeMapping& mapping, double widthPx, double originNs, double minSpacingPx) {
  std::vector<AxisTick> ticks;
  const double step = tickStepNs(mapping.nsPerPixel(), minSpacingPx);
  const double t0 = mapping.startNs() - originNs;
  const double t1 = mapping.endNs(widthPx) - originNs;
  // The unit of ten steps: a 200 us step over a few milliseconds reads 0.2 ms, 0.4 ms, ...
  const Unit unit = unitFor(step * 10);
  // Decimals needed to tell ticks apart in that unit (a 0.5 ms step needs one).
  const double stepInUnit = step / unit.ns;
  const int decimals = stepInUnit >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(stepInUnit) - 1e-9));
  const auto first = static_cast<long long>(std::ceil(t0 / step));
  const auto last = static_cast<long long>(std::floor(t1 / step));
  for (long long k = first; k <= last && ticks.size() < 1000; ++k) {
    const double rel = static_cast<double>(k) * step;
    AxisTick tick;
    tick.ns = rel + originNs;
    tick.label =
        k == 0 ? QStringLiteral("0") : QStringLiteral("%1 %2").arg(rel / unit.ns, 0, 'f', decimals).arg(unit.name);
    ticks.push_back(tick);
  }
  return ticks;
}

QString formatDuration(double ns) {
  const Unit unit = unitFor(std::abs(ns));
  if (unit.ns == 1) return QStringLiteral("%1 ns").arg(ns, 0, 'f', 0);
  return QStringLiteral("%1 %2").arg(ns / unit.ns, 0, 'f', 3).arg(unit.name);
}

QString formatBytes(std::int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (std::abs(b) < 1024) return QStringLiteral("%1 B").arg(bytes);
  if (std::abs(b) < 1024.0 * 1024) return QStringLiteral("%1 KiB").arg(b / 1024, 0, 'f', 1);
  if (std::abs(b) < 1024.0 * 1024 * 1024) return QStringLiteral("%1 MiB").arg(b / (1024.0 * 1024), 0, 'f', 1);
  return QStringLiteral("%1 GiB").arg(b / (1024.0 * 1024 * 1024), 0, 'f', 2);
}

}  // namespace mpsim::view
