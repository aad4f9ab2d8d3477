#pragma once
/// The side panel: for each opened trace, the step time, bubble fraction per device, peak memory
/// per device against its capacity, and the busiest links, from the report stored in the trace
/// (or, for a file without one, bubble fractions measured from the compute rows).
#include <QString>
#include <QTextBrowser>

#include <vector>

#include "gui/trace_model.h"

namespace mpsim::view {

/// The panel's HTML for a set of traces (a pure function, tested on its own).
[[nodiscard]] QString reportHtml(const std::vector<const TraceModel*>& traces, std::int32_t highlightedMicrobatch);

class ReportPanel : public QTextBrowser {
  Q_OBJECT

 public:
  explicit ReportPanel(QWidget* parent = nullptr);
  void showTraces(const std::vector<const TraceModel*>& traces, std::int32_t highlightedMicrobatch);
};

}  // namespace mpsim::view
