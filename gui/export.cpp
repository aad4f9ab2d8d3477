#include "gui/export.h"

#include <QFile>
#include <QFileInfo>
#include <QPainter>

#include "gui/kind_style.h"
#include "gui/svg_canvas.h"
#include "gui/timeline_painter.h"

namespace mpsim::view {

QImage renderImage(const TimelineScene& scene, QSize size) {
  QImage image(size, QImage::Format_RGB32);
  image.fill(palette::kBackground);
  QPainter painter(&image);
  painter.setRenderHint(QPainter::TextAntialiasing, true);
  PainterCanvas canvas(painter);
  paintTimeline(canvas, scene, size);
  painter.end();
  return image;
}

QString renderSvg(const TimelineScene& scene, QSize size) {
  SvgCanvas canvas(size);
  paintTimeline(canvas, scene, size);
  return canvas.document();
}

bool exportScene(const TimelineScene& scene, QSize size, const QString& path, QString* error) {
  const bool svg = QFileInfo(path).suffix().compare(QLatin1String("svg"), Qt::CaseInsensitive) == 0;
  if (svg) {
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate)) {
      if (error) *error = QStringLiteral("%1: %2").arg(path, file.errorString());
      return false;
    }
    const QByteArray bytes = renderSvg(scene, size).toUtf8();
    if (file.write(bytes) != bytes.size()) {
      if (error) *error = QStringLiteral("%1: %2").arg(path, file.errorString());
      return false;
    }
    return true;
  }
  if (!renderImage(scene, size).save(path, "PNG")) {
    if (error) *error = QStringLiteral("%1: cannot write the PNG image").arg(path);
    return false;
  }
  return true;
}

}  // namespace mpsim::view
