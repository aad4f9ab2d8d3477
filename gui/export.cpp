#include "gui/export.h"

#include <QFile>
#include <QFileInfo>
#include <QPainter>
#include <QSaveFile>
#include <QTextDocument>

#include <algorithm>
#include <cmath>

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

QImage renderImageWithPanel(const TimelineScene& scene, QSize size, const QString& panelHtml, int panelWidth) {
  constexpr int kMargin = 12;
  QTextDocument panel;
  panel.setDocumentMargin(kMargin);
  panel.setHtml(panelHtml);
  panel.setTextWidth(panelWidth);
  const int height = std::max(size.height(), static_cast<int>(std::ceil(panel.size().height())));
  QImage image(QSize(size.width() + panelWidth, height), QImage::Format_RGB32);
  image.fill(Qt::white);
  QPainter painter(&image);
  painter.setRenderHint(QPainter::TextAntialiasing, true);
  painter.drawImage(0, 0, renderImage(scene, size));
  painter.translate(size.width(), 0);
  panel.drawContents(&painter);
  painter.end();
  return image;
}

bool savePng(const QImage& image, const QString& path, QString* error) {
  // Through a temporary file renamed over the path: a reader never sees half an image.
  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly) || !image.save(&file, "PNG") || !file.commit()) {
    if (error) *error = QStringLiteral("%1: cannot write the PNG image (%2)").arg(path, file.errorString());
    return false;
  }
  return true;
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
  return savePng(renderImage(scene, size), path, error);
}

}  // namespace mpsim::view
