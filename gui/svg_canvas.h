#pragma once
/// A Canvas that writes SVG 1.1: rects, lines, polygons and text, with clip rectangles as
/// nested groups. Output is deterministic (fixed number formatting, no ids from addresses).
#include <QSize>
#include <QString>

#include <vector>

#include "gui/canvas.h"

namespace mpsim::view {

class SvgCanvas final : public Canvas {
 public:
  explicit SvgCanvas(QSize size);
  void fillRect(const QRectF& rect, const QColor& color) override;
  void rect(const QRectF& rect, qreal radius, const QColor& fill, const QColor& stroke, qreal strokeWidth,
            bool dashed) override;
  void line(const QPointF& a, const QPointF& b, const QColor& color, qreal width, bool dashed) override;
  void polygon(const QPolygonF& points, const QColor& fill) override;
  void text(const QPointF& baseline, const QString& text, const TextStyle& style) override;
  void pushClip(const QRectF& rect) override;
  void popClip() override;

  /// The finished document (closes any open clip groups).
  [[nodiscard]] QString document() const;

 private:
  QSize m_size;
  QString m_body;
  QString m_defs;
  int m_openClips = 0;
  int m_nextClipId = 0;
};

}  // namespace mpsim::view
