#pragma once
/// The few drawing operations the timeline needs, with two back ends: QPainter (window, PNG) and
/// a small SVG writer (vector export without the Qt SVG module). Text is placed by its baseline.
#include <QColor>
#include <QFont>
#include <QPointF>
#include <QPolygonF>
#include <QRectF>
#include <QString>

class QPainter;

namespace mpsim::view {

struct TextStyle {
  QColor color;
  qreal pixelSize = 12;
  bool bold = false;
};

class Canvas {
 public:
  Canvas() = default;
  Canvas(const Canvas&) = delete;
  Canvas& operator=(const Canvas&) = delete;
  virtual ~Canvas() = default;

  virtual void fillRect(const QRectF& rect, const QColor& color) = 0;
  /// A rectangle with optional fill and outline (an invalid colour means none).
  virtual void rect(const QRectF& rect, qreal radius, const QColor& fill, const QColor& stroke, qreal strokeWidth,
                    bool dashed) = 0;
  virtual void line(const QPointF& a, const QPointF& b, const QColor& color, qreal width, bool dashed) = 0;
  virtual void polygon(const QPolygonF& points, const QColor& fill) = 0;
  virtual void text(const QPointF& baseline, const QString& text, const TextStyle& style) = 0;
  virtual void pushClip(const QRectF& rect) = 0;
  virtual void popClip() = 0;

  /// The font of a style (same in both back ends, so widths agree).
  [[nodiscard]] static QFont font(const TextStyle& style);
  [[nodiscard]] static qreal textWidth(const QString& text, const TextStyle& style);
  [[nodiscard]] static qreal ascent(const TextStyle& style);
  /// `text` shortened with an ellipsis to fit `width`; empty when not even one letter fits.
  [[nodiscard]] static QString elided(const QString& text, const TextStyle& style, qreal width);
};

class PainterCanvas final : public Canvas {
 public:
  explicit PainterCanvas(QPainter& painter) : m_painter(painter) {}
  void fillRect(const QRectF& rect, const QColor& color) override;
  void rect(const QRectF& rect, qreal radius, const QColor& fill, const QColor& stroke, qreal strokeWidth,
            bool dashed) override;
  void line(const QPointF& a, const QPointF& b, const QColor& color, qreal width, bool dashed) override;
  void polygon(const QPolygonF& points, const QColor& fill) override;
  void text(const QPointF& baseline, const QString& text, const TextStyle& style) override;
  void pushClip(const QRectF& rect) override;
  void popClip() override;

 private:
  QPainter& m_painter;
};

}  // namespace mpsim::view
