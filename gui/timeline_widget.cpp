#include "gui/timeline_widget.h"

#include <QHelpEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QResizeEvent>
#include <QScrollBar>
#include <QToolTip>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

#include "gui/canvas.h"
#include "gui/timeline_painter.h"

namespace mpsim::view {

namespace {
constexpr double kZoomStep = 1.25;
constexpr int kClickSlop = 4;
}  // namespace

TimelineWidget::TimelineWidget(QWidget* parent) : QWidget(parent), m_scrollBar(new QScrollBar(Qt::Vertical, this)) {
  setMouseTracking(true);
  setFocusPolicy(Qt::StrongFocus);
  setAttribute(Qt::WA_OpaquePaintEvent);
  setMinimumSize(400, 200);
  connect(m_scrollBar, &QScrollBar::valueChanged, this, [this](int value) {
    m_scene.setScrollY(value, viewSize());
    update();
  });
}

QSize TimelineWidget::viewSize() const {
  return QSize(std::max(1, width() - (m_scrollBar->isVisible() ? m_scrollBar->width() : 0)), height());
}

void TimelineWidget::setTraces(std::vector<const TraceModel*> traces, bool keepRange) {
  const TimeMapping previous = m_scene.mapping();
  const bool hadTraces = !m_scene.traces().empty();
  m_scene.setTraces(std::move(traces));
  m_scene.setSelection(std::nullopt);
  updateScrollBar();
  if (keepRange && hadTraces) {
    m_scene.mapping() = previous;
  } else {
    m_scene.fit(viewSize());
    m_fitted = true;
  }
  m_scene.setScrollY(m_scene.scrollY(), viewSize());
  update();
}

void TimelineWidget::zoomIn() { zoomBy(kZoomStep, m_scene.plotRect(viewSize()).width() / 2); }
void TimelineWidget::zoomOut() { zoomBy(1 / kZoomStep, m_scene.plotRect(viewSize()).width() / 2); }

void TimelineWidget::fitToWindow() {
  m_scene.fit(viewSize());
  m_fitted = true;
  update();
}

void TimelineWidget::clearHighlight() { highlightMicrobatch(-1); }

void TimelineWidget::highlightMicrobatch(std::int32_t microbatch) {
  if (m_scene.highlightedMicrobatch() == microbatch) return;
  m_scene.setHighlightedMicrobatch(microbatch);
  emit microbatchHighlighted(microbatch);
  update();
}

void TimelineWidget::zoomBy(double factor, double x) {
  m_scene.mapping().zoomAt(x, factor);
  m_fitted = false;
  update();
}

double TimelineWidget::plotX(QPointF pos) const { return pos.x() - m_scene.plotRect(viewSize()).left(); }

void TimelineWidget::updateScrollBar() {
  const int visible = static_cast<int>(m_scene.rowsRect(size()).height());
  const int overflow = m_scene.contentHeight() - visible;
  m_scrollBar->setVisible(overflow > 0);
  const QRectF rows = m_scene.rowsRect(size());
  m_scrollBar->setGeometry(width() - m_scrollBar->sizeHint().width(), static_cast<int>(rows.top()),
                           m_scrollBar->sizeHint().width(), static_cast<int>(rows.height()));
  m_scrollBar->setRange(0, std::max(0, overflow));
  m_scrollBar->setPageStep(visible);
  m_scrollBar->setSingleStep(m_scene.metrics().laneHeight);
  m_scrollBar->setValue(m_scene.scrollY());
}

void TimelineWidget::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.setRenderHint(QPainter::TextAntialiasing, true);
  PainterCanvas canvas(painter);
  paintTimeline(canvas, m_scene, viewSize());
}

void TimelineWidget::resizeEvent(QResizeEvent* event) {
  const double oldWidth = m_scene.plotRect(event->oldSize()).width();
  const double start = m_scene.mapping().startNs();
  const double end = m_scene.mapping().endNs(oldWidth);
  updateScrollBar();
  if (m_fitted || !event->oldSize().isValid()) {
    m_scene.fit(viewSize());
  } else {
    // Keep the same time range across the new width.
    m_scene.mapping().showRange(start, end, m_scene.plotRect(viewSize()).width());
  }
  m_scene.setScrollY(m_scene.scrollY(), viewSize());
  QWidget::resizeEvent(event);
}

void TimelineWidget::wheelEvent(QWheelEvent* event) {
  const QPoint angle = event->angleDelta();
  const double steps = (angle.y() != 0 ? angle.y() : angle.x()) / 120.0;
  if (event->modifiers() & Qt::ControlModifier) {
    m_scrollBar->setValue(m_scrollBar->value() - static_cast<int>(steps * 3 * m_scene.metrics().laneHeight));
  } else if ((event->modifiers() & Qt::ShiftModifier) || (angle.x() != 0 && angle.y() == 0)) {
    m_scene.mapping().panPixels(-steps * 60);
    m_fitted = false;
    update();
  } else {
    zoomBy(std::pow(kZoomStep, steps), plotX(event->position()));
  }
  event->accept();
}

void TimelineWidget::mousePressEvent(QMouseEvent* event) {
  m_pressPos = m_lastPos = event->position();
  if (event->button() == Qt::LeftButton && event->position().x() >= m_scene.plotRect(viewSize()).left()) {
    m_drag = Drag::Select;
    m_pressTimeNs = m_scene.mapping().toTime(plotX(event->position()));
  } else if (event->button() == Qt::RightButton || event->button() == Qt::MiddleButton) {
    m_drag = Drag::Pan;
    setCursor(Qt::ClosedHandCursor);
  } else {
    m_drag = Drag::None;
  }
}

void TimelineWidget::mouseMoveEvent(QMouseEvent* event) {
  const QPointF pos = event->position();
  if (m_drag == Drag::Select && std::abs(pos.x() - m_pressPos.x()) > kClickSlop) {
    m_scene.setSelection(std::make_pair(m_pressTimeNs, m_scene.mapping().toTime(plotX(pos))));
    update();
  } else if (m_drag == Drag::Pan) {
    m_scene.mapping().panPixels(m_lastPos.x() - pos.x());
    m_fitted = false;
    m_scrollBar->setValue(m_scrollBar->value() - static_cast<int>(pos.y() - m_lastPos.y()));
    update();
  }
  m_lastPos = pos;
}

void TimelineWidget::mouseReleaseEvent(QMouseEvent* event) {
  const QPointF pos = event->position();
  const bool click =
      std::abs(pos.x() - m_pressPos.x()) <= kClickSlop && std::abs(pos.y() - m_pressPos.y()) <= kClickSlop;
  if (m_drag == Drag::Select && !click && m_scene.selection()) {
    const auto [a, b] = *m_scene.selection();
    m_scene.mapping().showRange(std::min(a, b), std::max(a, b), m_scene.plotRect(viewSize()).width());
    m_fitted = false;
    m_scene.setSelection(std::nullopt);
    update();
  } else if (event->button() == Qt::LeftButton && click) {
    m_scene.setSelection(std::nullopt);
    const Hit hit = m_scene.hitTest(pos, viewSize());
    if (hit.valid && hit.type == RowType::GroupHeader) {
      // A folded run of collapsed groups opens all of them.
      const bool collapse = !m_scene.isCollapsed(hit.trace, hit.group);
      for (int g = hit.group; g <= std::max(hit.group, hit.last_group); ++g) m_scene.setCollapsed(hit.trace, g, collapse);
      updateScrollBar();
      m_scene.setScrollY(m_scene.scrollY(), viewSize());
      update();
    } else if (hit.valid && hit.span) {
      const auto mb = m_scene.traces()[static_cast<std::size_t>(hit.trace)]->span(*hit.span).microbatch;
      highlightMicrobatch(mb == m_scene.highlightedMicrobatch() ? -1 : mb);
    } else {
      clearHighlight();
    }
  }
  m_drag = Drag::None;
  unsetCursor();
}

void TimelineWidget::keyPressEvent(QKeyEvent* event) {
  const double width = m_scene.plotRect(viewSize()).width();
  switch (event->key()) {
    case Qt::Key_Plus:
    case Qt::Key_Equal: zoomIn(); break;
    case Qt::Key_Minus: zoomOut(); break;
    case Qt::Key_F:
    case Qt::Key_0:
    case Qt::Key_Home: fitToWindow(); break;
    case Qt::Key_Left:
      m_fitted = false;
      m_scene.mapping().panPixels(-width / 8);
      update();
      break;
    case Qt::Key_Right:
      m_fitted = false;
      m_scene.mapping().panPixels(width / 8);
      update();
      break;
    case Qt::Key_Up: m_scrollBar->setValue(m_scrollBar->value() - m_scene.metrics().laneHeight); break;
    case Qt::Key_Down: m_scrollBar->setValue(m_scrollBar->value() + m_scene.metrics().laneHeight); break;
    case Qt::Key_Escape:
      m_scene.setSelection(std::nullopt);
      clearHighlight();
      update();
      break;
    default: QWidget::keyPressEvent(event); return;
  }
  event->accept();
}

bool TimelineWidget::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    const Hit hit = m_scene.hitTest(help->pos(), viewSize());
    const TraceModel* model = hit.valid ? m_scene.traces()[static_cast<std::size_t>(hit.trace)] : nullptr;
    if (model && hit.span) {
      QToolTip::showText(help->globalPos(), model->tooltipText(*hit.span), this);
    } else if (model && hit.bubble) {
      QToolTip::showText(help->globalPos(), model->bubbleTooltipText(*hit.bubble), this);
    } else {
      QToolTip::hideText();
      event->ignore();
    }
    return true;
  }
  return QWidget::event(event);
}

}  // namespace mpsim::view
