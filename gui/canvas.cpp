#include "gui/canvas.h"

#include <QFontMetricsF>
#include <QPainter>

#include <map>
#include <utility>

namespace mpsim::view {

QFont Canvas::font(const TextStyle& style) {
  QFont f(QStringLiteral("DejaVu Sans"));
  f.setStyleHint(QFont::SansSerif);
  f.setPixelSize(static_cast<int>(style.pixelSize));
  f.setBold(style.bold);
  return f;
}

namespace {

/// Font metrics per (size, weight): building them is costly and a frame measures many labels.
/// Used from the GUI thread only.
const QFontMetricsF& metricsOf(const TextStyle& style) {
  static std::map<std::pair<int, bool>, QFontMetricsF> cache;
  const auto key = std::make_pair(static_cast<int>(style.pixelSize), style.bold);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, QFontMetricsF(Canvas::font(style))).first;
  return it->second;
}

}  // namespace

qreal Canvas::textWidth(const QString& text, const TextStyle& style) {
  return metricsOf(style).horizontalAdvance(text);
}

qreal Canvas::ascent(const TextStyle& style) { return metricsOf(style).ascent(); }

QString Canvas::elided(const QString& text, const TextStyle& style, qreal width) {
  if (width <= 0) return {};
  const QFontMetricsF& metrics = metricsOf(style);
  if (metrics.horizontalAdvance(text) <= width) return text;
  const QString out = metrics.elidedText(text, Qt::ElideRight, width);
  return out.size() <= 1 ? QString() : out;
}

namespace {

QPen penOf(const QColor& color, qreal width, bool dashed) {
  QPen pen(color, width);
  pen.setCapStyle(Qt::FlatCap);
  if (dashed) pen.setDashPattern({3, 2});
  return pen;
}

}  // namespace

void PainterCanvas::fillRect(const QRectF& rect, const QColor& color) { m_painter.fillRect(rect, color); }

void PainterCanvas::rect(const QRectF& rect, qreal radius, const QColor& fill, const QColor& stroke, qreal strokeWidth,
                         bool dashed) {
  m_painter.save();
  m_painter.setRenderHint(QPainter::Antialiasing, radius > 0);
  m_painter.setBrush(fill.isValid() ? QBrush(fill) : Qt::NoBrush);
  m_painter.setPen(stroke.isValid() ? penOf(stroke, strokeWidth, dashed) : QPen(Qt::NoPen));
  if (radius > 0) {
    m_painter.drawRoundedRect(rect, radius, radius);
  } else {
    m_painter.drawRect(rect);
  }
  m_painter.restore();
}

void PainterCanvas::line(const QPointF& a, const QPointF& b, const QColor& color, qreal width, bool dashed) {
  m_painter.setPen(penOf(color, width, dashed));
  m_painter.drawLine(a, b);
}

void PainterCanvas::polygon(const QPolygonF& points, const QColor& fill) {
  m_painter.save();
  m_painter.setRenderHint(QPainter::Antialiasing, true);
  m_painter.setPen(Qt::NoPen);
  m_painter.setBrush(fill);
  m_painter.drawPolygon(points);
  m_painter.restore();
}

void PainterCanvas::text(const QPointF& baseline, const QString& text, const TextStyle& style) {
  m_painter.setFont(font(style));
  m_painter.setPen(style.color);
  m_painter.drawText(baseline, text);
}

void PainterCanvas::pushClip(const QRectF& rect) {
  m_painter.save();
  m_painter.setClipRect(rect, Qt::IntersectClip);
}

void PainterCanvas::popClip() { m_painter.restore(); }

}  // namespace mpsim::view
