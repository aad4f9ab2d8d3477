#include "gui/trace_model.h"

#include <algorithm>
#include <limits>
#include <map>

#include "gui/kind_style.h"
#include "gui/time_mapping.h"

namespace mpsim::view {

using mpsim::trace::Span;
using mpsim::trace::SpanKind;

TraceModel::TraceModel(mpsim::trace::TraceFile file, QString sourcePath)
    : m_sourcePath(std::move(sourcePath)), m_timeline(std::move(file.timeline)), m_report(std::move(file.report)) {
  buildRows();
}

std::unique_ptr<TraceModel> TraceModel::load(const QString& path, QString* error) {
  try {
    return std::make_unique<TraceModel>(mpsim::trace::read_trace_file(path.toStdString()), path);
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
  }
  return nullptr;
}

double TraceModel::stepTimeNs() const noexcept {
  if (m_report && m_report->step_time_s > 0) return m_report->step_time_s * 1e9;
  return static_cast<double>(m_endNs - m_startNs);
}

void TraceModel::buildRows() {
  const auto& lanes = m_timeline.lanes;
  const auto& spans = m_timeline.spans;
  std::vector<std::vector<std::uint32_t>> perLane(lanes.size());
  m_startNs = std::numeric_limits<std::int64_t>::max();
  m_endNs = std::numeric_limits<std::int64_t>::min();
  for (std::uint32_t i = 0; i < spans.size(); ++i) {
    const Span& s = spans[i];
    if (s.lane < perLane.size()) perLane[s.lane].push_back(i);
    m_startNs = std::min(m_startNs, s.start_ns);
    m_endNs = std::max(m_endNs, s.end_ns);
    m_kindMask |= 1u << static_cast<unsigned>(s.kind);
  }
  if (spans.empty()) m_startNs = m_endNs = 0;

  bool anyCompute = false;
  for (const auto& lane : lanes) anyCompute = anyCompute || lane.thread.find("compute") != std::string::npos;

  std::map<std::string, int> groupOf;
  for (std::uint32_t laneIndex = 0; laneIndex < lanes.size(); ++laneIndex) {
    const auto& lane = lanes[laneIndex];
    auto& laneSpans = perLane[laneIndex];
    bool allTransfer = !laneSpans.empty();
    for (const std::uint32_t i : laneSpans) allTransfer = allTransfer && spans[i].kind == SpanKind::Transfer;
    const bool isLink = lane.process == "links" || allTransfer;
    const bool isCompute = !isLink && (anyCompute ? lane.thread.find("compute") != std::string::npos : true);
    // Links only when they carried traffic; empty device streams other than compute say nothing.
    if (laneSpans.empty() && !isCompute) continue;

    std::stable_sort(laneSpans.begin(), laneSpans.end(), [&](std::uint32_t a, std::uint32_t b) {
      return spans[a].start_ns != spans[b].start_ns ? spans[a].start_ns < spans[b].start_ns
                                                    : spans[a].end_ns < spans[b].end_ns;
    });
    TraceRow row;
    row.lane = laneIndex;
    row.process = QString::fromStdString(lane.process);
    row.thread = QString::fromStdString(lane.thread);
    row.label = row.thread;
    if (row.label.startsWith(row.process + QLatin1Char('/'))) row.label = row.label.mid(row.process.size() + 1);
    row.isLink = isLink;
    row.showsBubbles = isCompute;
    for (const std::uint32_t i : laneSpans)
      row.maxSpanNs = std::max(row.maxSpanNs, spans[i].end_ns - spans[i].start_ns);
    if (isCompute) {
      // Idle gaps between the step's first start and last end over all devices.
      std::int64_t covered = m_startNs;
      for (const std::uint32_t i : laneSpans) {
        if (spans[i].start_ns > covered) row.bubbles.push_back({covered, spans[i].start_ns});
        covered = std::max(covered, spans[i].end_ns);
      }
      if (covered < m_endNs) row.bubbles.push_back({covered, m_endNs});
    }
    row.starts.reserve(laneSpans.size());
    for (const std::uint32_t i : laneSpans) row.starts.push_back(spans[i].start_ns);
    row.spans = std::move(laneSpans);

    // A node's links get a group of their own, after its devices.
    const bool ownLinkGroup = isLink && lane.process != "links";
    const auto [it, added] =
        groupOf.try_emplace(ownLinkGroup ? lane.process + "\n links" : lane.process, static_cast<int>(m_groups.size()));
    if (added) {
      TraceGroup group;
      group.name = ownLinkGroup ? row.process + QStringLiteral(" links") : row.process;
      group.isLinks = isLink;
      m_groups.push_back(std::move(group));
    }
    TraceGroup& group = m_groups[static_cast<std::size_t>(it->second)];
    group.isLinks = group.isLinks && isLink;
    std::optional<TraceRow> memory = isCompute ? memoryRowFor(row) : std::nullopt;
    group.rows.push_back(static_cast<int>(m_rows.size()));
    m_rows.push_back(std::move(row));
    if (memory) {
      group.rows.push_back(static_cast<int>(m_rows.size()));
      m_rows.push_back(std::move(*memory));
    }
  }
  // Device groups first, links last, otherwise in order of appearance.
  std::stable_partition(m_groups.begin(), m_groups.end(), [](const TraceGroup& g) { return !g.isLinks; });
  setMemoryRange();
}

std::optional<TraceRow> TraceModel::memoryRowFor(const TraceRow& compute) const {
  if (!m_report) return std::nullopt;
  // A GPU's lanes are named "gpu3 compute", "gpu3 send", ... under its node's process.
  const QString local = compute.thread.section(QLatin1Char(' '), 0, 0);
  const std::string id = (compute.process + QLatin1Char('/') + local).toStdString();
  const auto& devices = m_report->devices;
  const auto device = std::find_if(devices.begin(), devices.end(), [&](const mpsim::trace::DeviceReport& d) {
    return d.id == id && !d.memory_timeline.empty();
  });
  if (device == devices.end()) return std::nullopt;
  TraceRow row;
  row.lane = compute.lane;
  row.process = compute.process;
  row.thread = local + QStringLiteral(" memory");
  row.label = QStringLiteral("%1 memory %2").arg(local, formatBytes(device->peak_memory_bytes));  // its peak
  row.memoryDevice = static_cast<int>(device - devices.begin());
  return row;
}

void TraceModel::setMemoryRange() {
  bool any = false;
  for (const TraceRow& row : m_rows) {
    if (row.memoryDevice < 0) continue;
    const auto& device = m_report->devices[static_cast<std::size_t>(row.memoryDevice)];
    for (const mpsim::trace::MemoryPoint& p : device.memory_timeline) {
      m_memoryRange.lowBytes = any ? std::min(m_memoryRange.lowBytes, p.bytes) : p.bytes;
      m_memoryRange.highBytes = any ? std::max(m_memoryRange.highBytes, p.bytes) : p.bytes;
      any = true;
    }
  }
}

std::size_t TraceModel::firstStartingAtOrAfter(int row, double t, std::size_t from) const {
  const auto& starts = m_rows[static_cast<std::size_t>(row)].starts;
  const std::size_t n = starts.size();
  std::size_t k = std::min(from, n);
  for (int probe = 0; probe < 8 && k < n; ++probe, ++k) {
    if (static_cast<double>(starts[k]) >= t) return k;
  }
  const auto it = std::lower_bound(starts.begin() + static_cast<std::ptrdiff_t>(k), starts.end(), t,
                                   [](std::int64_t start, double time) { return static_cast<double>(start) < time; });
  return static_cast<std::size_t>(it - starts.begin());
}

std::pair<std::size_t, std::size_t> TraceModel::spanRange(int row, double t0, double t1) const {
  const TraceRow& r = m_rows[static_cast<std::size_t>(row)];
  // A span intersecting t0 started at most maxSpanNs before it.
  std::size_t first = firstStartingAtOrAfter(row, t0 - static_cast<double>(r.maxSpanNs));
  while (first < r.spans.size() && static_cast<double>(m_timeline.spans[r.spans[first]].end_ns) < t0) {
    // Skip the few that ended before t0; bounded by the spans starting in [t0 - maxSpan, t0).
    ++first;
  }
  const auto last = static_cast<std::size_t>(
      std::upper_bound(r.starts.begin() + static_cast<std::ptrdiff_t>(first), r.starts.end(), t1,
                       [](double time, std::int64_t start) { return time < static_cast<double>(start); }) -
      r.starts.begin());
  return {first, std::max(first, last)};
}

std::optional<std::uint32_t> TraceModel::spanAt(int row, double ns, double toleranceNs) const {
  const auto [first, last] = spanRange(row, ns - toleranceNs, ns + toleranceNs);
  const TraceRow& r = m_rows[static_cast<std::size_t>(row)];
  std::optional<std::uint32_t> best;
  double bestDistance = std::numeric_limits<double>::infinity();
  for (std::size_t k = first; k < last; ++k) {
    const Span& s = m_timeline.spans[r.spans[k]];
    const double d = ns < static_cast<double>(s.start_ns) ? static_cast<double>(s.start_ns) - ns
                     : ns > static_cast<double>(s.end_ns) ? ns - static_cast<double>(s.end_ns)
                                                          : 0.0;
    if (d < bestDistance && d <= toleranceNs) {
      bestDistance = d;
      best = r.spans[k];
    }
  }
  return best;
}

std::optional<Bubble> TraceModel::bubbleAt(int row, double ns) const {
  const auto& bubbles = m_rows[static_cast<std::size_t>(row)].bubbles;
  const auto it = std::upper_bound(bubbles.begin(), bubbles.end(), ns,
                                   [](double t, const Bubble& b) { return t < static_cast<double>(b.startNs); });
  if (it == bubbles.begin()) return std::nullopt;
  const Bubble& b = *(it - 1);
  if (ns >= static_cast<double>(b.endNs)) return std::nullopt;
  return b;
}

QString TraceModel::bubbleTooltipText(const Bubble& bubble) const {
  return QStringLiteral("<b>bubble</b> (idle)<br>from %1 to %2<br>duration %3")
      .arg(formatDuration(static_cast<double>(bubble.startNs - m_startNs)),
           formatDuration(static_cast<double>(bubble.endNs - m_startNs)),
           formatDuration(static_cast<double>(bubble.endNs - bubble.startNs)));
}

QString TraceModel::tooltipText(std::uint32_t spanIndex) const {
  const Span& s = m_timeline.spans[spanIndex];
  QStringList lines;
  lines << QStringLiteral("<b>%1</b>").arg(kindLabel(s.kind));
  QStringList ids;
  if (s.microbatch >= 0) ids << QStringLiteral("microbatch %1").arg(s.microbatch);
  if (s.chunk >= 0) ids << QStringLiteral("chunk %1").arg(s.chunk);
  if (s.stage >= 0) ids << QStringLiteral("stage %1").arg(s.stage);
  if (!ids.isEmpty()) lines << ids.join(QStringLiteral(", "));
  lines << QStringLiteral("start %1").arg(formatDuration(static_cast<double>(s.start_ns - m_startNs)));
  lines << QStringLiteral("duration %1").arg(formatDuration(static_cast<double>(s.end_ns - s.start_ns)));
  if (s.bytes > 0) lines << QStringLiteral("bytes %1 (%2)").arg(formatBytes(s.bytes)).arg(s.bytes);
  if (s.lane < m_timeline.lanes.size()) {
    const auto& lane = m_timeline.lanes[s.lane];
    lines << QStringLiteral("%1 / %2").arg(QString::fromStdString(lane.process), QString::fromStdString(lane.thread));
  }
  return lines.join(QStringLiteral("<br>"));
}

std::vector<std::uint32_t> TraceModel::microbatchSpans(std::int32_t microbatch) const {
  std::vector<std::uint32_t> out;
  if (microbatch < 0) return out;
  for (std::uint32_t i = 0; i < m_timeline.spans.size(); ++i) {
    if (m_timeline.spans[i].microbatch == microbatch) out.push_back(i);
  }
  std::stable_sort(out.begin(), out.end(), [&](std::uint32_t a, std::uint32_t b) {
    return m_timeline.spans[a].start_ns < m_timeline.spans[b].start_ns;
  });
  return out;
}

}  // namespace mpsim::view
