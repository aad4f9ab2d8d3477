#include "gui/svg_canvas.h"

namespace mpsim::view {

namespace {

QString number(qreal v) {
  QString s = QString::number(v, 'f', 2);
  while (s.endsWith(QLatin1Char('0'))) s.chop(1);
  if (s.endsWith(QLatin1Char('.'))) s.chop(1);
  return s == QLatin1String("-0") ? QStringLiteral("0") : s;
}

QString colorAttr(const char* name, const QColor& c) {
  QString out = QStringLiteral(" %1=\"%2\"").arg(QLatin1String(name), c.name(QColor::HexRgb));
  if (c.alpha() != 255) out += QStringLiteral(" %1-opacity=\"%2\"").arg(QLatin1String(name), number(c.alphaF()));
  return out;
}

QString strokeAttrs(const QColor& c, qreal width, bool dashed) {
  QString out = colorAttr("stroke", c) + QStringLiteral(" stroke-width=\"%1\"").arg(number(width));
  if (dashed) out += QStringLiteral(" stroke-dasharray=\"%1 %2\"").arg(number(3 * width), number(2 * width));
  return out;
}

}  // namespace

SvgCanvas::SvgCanvas(QSize size) : m_size(size) {}

void SvgCanvas::fillRect(const QRectF& r, const QColor& color) {
  m_body += QStringLiteral("<rect x=\"%1\" y=\"%2\" width=\"%3\" height=\"%4\"%5/>\n")
                .arg(number(r.x()), number(r.y()), number(r.width()), number(r.height()), colorAttr("fill", color));
}

void SvgCanvas::rect(const QRectF& r, qreal radius, const QColor& fill, const QColor& stroke, qreal strokeWidth,
                     bool dashed) {
  QString attrs = fill.isValid() ? colorAttr("fill", fill) : QStringLiteral(" fill=\"none\"");
  if (stroke.isValid()) attrs += strokeAttrs(stroke, strokeWidth, dashed);
  if (radius > 0) attrs += QStringLiteral(" rx=\"%1\"").arg(number(radius));
  m_body += QStringLiteral("<rect x=\"%1\" y=\"%2\" width=\"%3\" height=\"%4\"%5/>\n")
                .arg(number(r.x()), number(r.y()), number(r.width()), number(r.height()), attrs);
}

void SvgCanvas::line(const QPointF& a, const QPointF& b, const QColor& color, qreal width, bool dashed) {
  m_body += QStringLiteral("<line x1=\"%1\" y1=\"%2\" x2=\"%3\" y2=\"%4\"%5/>\n")
                .arg(number(a.x()), number(a.y()), number(b.x()), number(b.y()), strokeAttrs(color, width, dashed));
}

void SvgCanvas::polygon(const QPolygonF& points, const QColor& fill) {
  QStringList coords;
  for (const QPointF& p : points) coords << QStringLiteral("%1,%2").arg(number(p.x()), number(p.y()));
  m_body += QStringLiteral("<polygon points=\"%1\"%2/>\n").arg(coords.join(QLatin1Char(' ')), colorAttr("fill", fill));
}

void SvgCanvas::text(const QPointF& baseline, const QString& text, const TextStyle& style) {
  m_body += QStringLiteral("<text x=\"%1\" y=\"%2\" font-size=\"%3\"%4%5>%6</text>\n")
                .arg(number(baseline.x()), number(baseline.y()), number(style.pixelSize),
                     style.bold ? QStringLiteral(" font-weight=\"bold\"") : QString(), colorAttr("fill", style.color),
                     text.toHtmlEscaped());
}

void SvgCanvas::pushClip(const QRectF& r) {
  const QString id = QStringLiteral("clip%1").arg(m_nextClipId++);
  m_defs += QStringLiteral("<clipPath id=\"%1\"><rect x=\"%2\" y=\"%3\" width=\"%4\" height=\"%5\"/></clipPath>\n")
                .arg(id, number(r.x()), number(r.y()), number(r.width()), number(r.height()));
  m_body += QStringLiteral("<g clip-path=\"url(#%1)\">\n").arg(id);
  ++m_openClips;
}

void SvgCanvas::popClip() {
  if (m_openClips == 0) return;
  m_body += QStringLiteral("</g>\n");
  --m_openClips;
}

QString SvgCanvas::document() const {
  QString out = QStringLiteral(
                    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                    "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%1\" height=\"%2\" "
                    "viewBox=\"0 0 %1 %2\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n")
                    .arg(m_size.width())
                    .arg(m_size.height());
  if (!m_defs.isEmpty()) out += QStringLiteral("<defs>\n") + m_defs + QStringLiteral("</defs>\n");
  out += m_body;
  for (int i = 0; i < m_openClips; ++i) out += QStringLiteral("</g>\n");
  out += QStringLiteral("</svg>\n");
  return out;
}

}  // namespace mpsim::view
