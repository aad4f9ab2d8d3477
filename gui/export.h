#pragma once
/// Rendering a scene off screen: a QImage (PNG) or an SVG document. Same scene, same size, same
/// pixels/bytes: nothing depends on the clock or on a display.
#include <QImage>
#include <QSize>
#include <QString>

#include "gui/timeline_scene.h"

namespace mpsim::view {

[[nodiscard]] QImage renderImage(const TimelineScene& scene, QSize size);
[[nodiscard]] QString renderSvg(const TimelineScene& scene, QSize size);
/// The timeline of `size` with an HTML panel `panelWidth` wide to its right (the window's report
/// panel); as tall as the taller of the two.
[[nodiscard]] QImage renderImageWithPanel(const TimelineScene& scene, QSize size, const QString& panelHtml, int panelWidth);
/// PNG of `image`, written to a temporary file and renamed over `path`. False with *error set on failure.
bool savePng(const QImage& image, const QString& path, QString* error);
/// Writes PNG or SVG by the file suffix (.svg, anything else PNG). False with *error set on failure.
bool exportScene(const TimelineScene& scene, QSize size, const QString& path, QString* error);

}  // namespace mpsim::view
