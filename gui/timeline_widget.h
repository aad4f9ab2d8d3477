#pragma once
/// The interactive timeline: paints a TimelineScene and turns input into scene changes.
/// Wheel or +/- zooms around the cursor, Shift+wheel pans in time, Ctrl+wheel (or the scroll bar)
/// scrolls rows, a left drag selects a range and zooms to it on release, a right or middle drag
/// pans, F or 0 fits, a click on a bar highlights its microbatch, a click on a group header
/// collapses or expands it, hovering shows the span's tooltip.
#include <QWidget>

#include <cstdint>
#include <optional>

#include "gui/timeline_scene.h"

class QScrollBar;

namespace mpsim::view {

class TimelineWidget : public QWidget {
  Q_OBJECT

 public:
  explicit TimelineWidget(QWidget* parent = nullptr);

  /// Shows these traces (not owned; they must outlive the widget or the next call). When
  /// keepRange is set the visible time range stays (reload), otherwise the view fits.
  void setTraces(std::vector<const TraceModel*> traces, bool keepRange);
  [[nodiscard]] const TimelineScene& scene() const noexcept { return m_scene; }
  /// Size of the painted area (without the scroll bar).
  [[nodiscard]] QSize viewSize() const;

  void zoomIn();
  void zoomOut();
  void fitToWindow();
  void clearHighlight();
  void highlightMicrobatch(std::int32_t microbatch);

 signals:
  void microbatchHighlighted(std::int32_t microbatch);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  bool event(QEvent* event) override;

 private:
  void zoomBy(double factor, double plotX);
  void updateScrollBar();
  [[nodiscard]] double plotX(QPointF pos) const;

  TimelineScene m_scene;
  QScrollBar* m_scrollBar = nullptr;
  enum class Drag : std::uint8_t { None, Select, Pan };
  Drag m_drag = Drag::None;
  QPointF m_pressPos;
  QPointF m_lastPos;
  double m_pressTimeNs = 0;
  bool m_fitted = true;  ///< showing the whole step: stays so when the widget is resized
};

}  // namespace mpsim::view
