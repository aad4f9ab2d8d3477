#include "gui/report_panel.h"

#include <QFileInfo>

#include <algorithm>

#include "gui/kind_style.h"
#include "gui/time_mapping.h"

namespace mpsim::view {

namespace {

QString pct(double fraction) { return QStringLiteral("%1%").arg(fraction * 100, 0, 'f', 1); }

/// A small horizontal bar (HTML table cell) filled to `fraction`.
QString meter(double fraction, const QString& color) {
  const int filled = std::clamp(static_cast<int>(fraction * 40 + 0.5), 0, 40);
  return QStringLiteral(
             "<table cellspacing=0 cellpadding=0><tr><td width=%1 height=8 bgcolor='%2'></td>"
             "<td width=%3 height=8 bgcolor='#e5e7eb'></td></tr></table>")
      .arg(std::max(filled, 1))
      .arg(color)
      .arg(std::max(40 - filled, 1));
}

QString traceSection(const TraceModel& model, int index, std::size_t count, double firstStepNs) {
  QString html;
  const QString letter = count > 1 ? QStringLiteral("%1 &middot; ").arg(QChar(u'A' + index)) : QString();
  html += QStringLiteral("<h3>%1%2</h3>").arg(letter, QFileInfo(model.sourcePath()).fileName().toHtmlEscaped());
  html += QStringLiteral("<table cellspacing=0 cellpadding=2>");
  const auto row = [&](const QString& k, const QString& v) {
    html += QStringLiteral("<tr><td nowrap style='color:#6b7280'>%1</td><td><b>%2</b></td></tr>").arg(k, v);
  };
  row(QStringLiteral("step time"), formatDuration(model.stepTimeNs()));
  if (index > 0 && firstStepNs > 0) {
    const double diff = model.stepTimeNs() - firstStepNs;
    row(QStringLiteral("vs A"), QStringLiteral("%1%2 (%3%4%)")
                                    .arg(diff >= 0 ? QStringLiteral("+") : QStringLiteral("&minus;"))
                                    .arg(formatDuration(std::abs(diff)))
                                    .arg(diff >= 0 ? QStringLiteral("+") : QStringLiteral("&minus;"))
                                    .arg(std::abs(diff) / firstStepNs * 100, 0, 'f', 1));
  }
  row(QStringLiteral("spans"), QString::number(model.timeline().spans.size()));
  const auto& report = model.report();
  if (report) {
    const auto& p = report->plan;
    row(QStringLiteral("plan"),
        QStringLiteral("%1, TP %2 PP %3 DP %4, %5 microbatches%6")
            .arg(QString::fromStdString(p.schedule).toHtmlEscaped())
            .arg(p.tensor)
            .arg(p.pipeline)
            .arg(p.data)
            .arg(p.microbatches)
            .arg(p.virtual_stages > 1 ? QStringLiteral(", %1 chunks").arg(p.virtual_stages) : QString()));
    if (p.expert > 1) {
      // The routed tokens' balance: what the busiest expert rank's grouped GEMMs and all-to-alls carry.
      row(QStringLiteral("experts"),
          QStringLiteral("EP %1%2, busiest expert rank %3&times; the uniform share")
              .arg(p.expert)
              .arg(p.expert_tensor > 1 ? QStringLiteral(" &times; ETP %1").arg(p.expert_tensor) : QString())
              .arg(p.expert_load, 0, 'f', 2));
    }
    if (p.context > 1) row(QStringLiteral("context"), QStringLiteral("CP %1").arg(p.context));
    row(QStringLiteral("bubble"), pct(report->bubble_fraction));
    // Exposed communication the bubble does not show: compute streams held waiting on collectives.
    if (report->communication_wait_fraction > 0) {
      row(QStringLiteral("comm wait"), pct(report->communication_wait_fraction));
    }
    row(QStringLiteral("MFU"), pct(report->mfu));
    row(QStringLiteral("TFLOP/s per GPU"), QString::number(report->tflops_per_gpu, 'f', 1));
    row(QStringLiteral("peak memory"),
        formatBytes(report->peak_memory_bytes) +
            (report->oom ? QStringLiteral(" <span style='color:#e11d48'>OOM</span>") : QString()));
  }
  html += QStringLiteral("</table>");

  html += QStringLiteral(
      "<h4>Devices</h4><table cellspacing=0 cellpadding=2>"
      "<tr style='color:#6b7280'><td nowrap>device</td><td nowrap>stage</td><td nowrap>bubble</td><td nowrap></td>"
      "<td nowrap>peak memory</td><td nowrap></td></tr>");
  if (report && !report->devices.empty()) {
    for (const auto& d : report->devices) {
      const double mem = d.memory_capacity_bytes > 0
                             ? static_cast<double>(d.peak_memory_bytes) / static_cast<double>(d.memory_capacity_bytes)
                             : 0.0;
      html += QStringLiteral(
                  "<tr><td nowrap>%1</td><td nowrap align=right>%2</td><td nowrap align=right>%3</td><td nowrap>%4</td>"
                  "<td nowrap align=right>%5 / %6</td><td nowrap>%7</td></tr>")
                  .arg(QString::fromStdString(d.id).toHtmlEscaped())
                  .arg(d.stage)
                  .arg(pct(d.bubble_fraction))
                  .arg(meter(d.bubble_fraction, QStringLiteral("#e11d48")))
                  .arg(formatBytes(d.peak_memory_bytes))
                  .arg(d.memory_capacity_bytes > 0 ? formatBytes(d.memory_capacity_bytes) : QStringLiteral("?"))
                  .arg(meter(mem, d.oom || mem > 1 ? QStringLiteral("#e11d48") : QStringLiteral("#4e79a7")));
    }
  } else {
    // No report: bubble fractions measured from the compute rows.
    const double step = std::max(1.0, static_cast<double>(model.endNs() - model.startNs()));
    for (const TraceRow& r : model.rows()) {
      if (!r.showsBubbles) continue;
      double idle = 0;
      for (const Bubble& b : r.bubbles) idle += static_cast<double>(b.endNs - b.startNs);
      html += QStringLiteral(
                  "<tr><td nowrap>%1 %2</td><td nowrap></td><td nowrap align=right>%3</td><td nowrap>%4</td><td "
                  "nowrap></td><td nowrap></td></tr>")
                  .arg(r.process.toHtmlEscaped(), r.thread.toHtmlEscaped())
                  .arg(pct(idle / step))
                  .arg(meter(idle / step, QStringLiteral("#e11d48")));
    }
  }
  html += QStringLiteral("</table>");

  if (report && !report->links.empty()) {
    auto links = report->links;
    std::stable_sort(links.begin(), links.end(), [](const auto& a, const auto& b) { return a.busy_s > b.busy_s; });
    if (links.size() > 8) links.resize(8);
    const double busiest = std::max(links.front().busy_s, 1e-30);
    html += QStringLiteral(
        "<h4>Busiest links</h4><table cellspacing=0 cellpadding=2>"
        "<tr style='color:#6b7280'><td nowrap>link</td><td nowrap>busy</td><td nowrap>traffic</td><td "
        "nowrap></td></tr>");
    for (const auto& l : links) {
      html += QStringLiteral(
                  "<tr><td nowrap>%1</td><td nowrap align=right>%2</td><td nowrap align=right>%3</td><td "
                  "nowrap>%4</td></tr>")
                  .arg(QString::fromStdString(l.id).toHtmlEscaped())
                  .arg(formatDuration(l.busy_s * 1e9))
                  .arg(formatBytes(l.bytes))
                  .arg(meter(l.busy_s / busiest, groupColor(KindGroup::Transfer).name()));
    }
    html += QStringLiteral("</table>");
  }
  return html;
}

}  // namespace

QString reportHtml(const std::vector<const TraceModel*>& traces, std::int32_t highlightedMicrobatch) {
  QString html = QStringLiteral("<html><body style='font-size:12px'>");
  if (traces.empty()) html += QStringLiteral("<p style='color:#6b7280'>No trace open.</p>");
  for (std::size_t i = 0; i < traces.size(); ++i) {
    html += traceSection(*traces[i], static_cast<int>(i), traces.size(), traces.front()->stepTimeNs());
  }
  if (highlightedMicrobatch >= 0) {
    html += QStringLiteral("<h4>Microbatch %1</h4>").arg(highlightedMicrobatch);
    for (std::size_t i = 0; i < traces.size(); ++i) {
      const auto spans = traces[i]->microbatchSpans(highlightedMicrobatch);
      if (spans.empty()) continue;
      const auto& first = traces[i]->span(spans.front());
      std::int64_t end = first.end_ns;
      for (const auto s : spans) end = std::max(end, traces[i]->span(s).end_ns);
      html += QStringLiteral("<p>%1%2 spans, from %3 to %4 (%5)</p>")
                  .arg(traces.size() > 1 ? QStringLiteral("%1: ").arg(QChar(u'A' + static_cast<int>(i))) : QString())
                  .arg(spans.size())
                  .arg(formatDuration(static_cast<double>(first.start_ns - traces[i]->startNs())))
                  .arg(formatDuration(static_cast<double>(end - traces[i]->startNs())))
                  .arg(formatDuration(static_cast<double>(end - first.start_ns)));
    }
  }
  html += QStringLiteral("</body></html>");
  return html;
}

ReportPanel::ReportPanel(QWidget* parent) : QTextBrowser(parent) {
  setOpenLinks(false);
  setMinimumWidth(340);
  setFrameShape(QFrame::NoFrame);
}

void ReportPanel::showTraces(const std::vector<const TraceModel*>& traces, std::int32_t highlightedMicrobatch) {
  setHtml(reportHtml(traces, highlightedMicrobatch));
}

}  // namespace mpsim::view
