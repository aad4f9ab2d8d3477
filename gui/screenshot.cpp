#include "gui/screenshot.h"

#include <memory>
#include <vector>

#include "gui/export.h"
#include "gui/timeline_scene.h"
#include "gui/trace_model.h"

namespace mpsim::view {

int renderScreenshot(const QStringList& traces, const ScreenshotOptions& options, QTextStream& err) {
  if (traces.isEmpty()) {
    err << "mpsim-view: --screenshot needs a trace file\n";
    err.flush();
    return 2;
  }
  std::vector<std::unique_ptr<TraceModel>> models;
  for (const QString& path : traces.mid(0, 2)) {
    QString error;
    auto model = TraceModel::load(path, &error);
    if (!model) {
      err << "mpsim-view: " << error << "\n";
      err.flush();
      return 1;
    }
    models.push_back(std::move(model));
  }
  TimelineScene scene;
  std::vector<const TraceModel*> views;
  for (const auto& m : models) views.push_back(m.get());
  scene.setTraces(views);
  scene.setHighlightedMicrobatch(options.highlightMicrobatch);
  for (int t = 0; t < static_cast<int>(views.size()); ++t) {
    const auto& groups = views[static_cast<std::size_t>(t)]->groups();
    for (int g = 0; g < static_cast<int>(groups.size()); ++g) {
      const auto& group = groups[static_cast<std::size_t>(g)];
      if (options.collapse.contains(group.name) ||
          (group.isLinks && options.collapse.contains(QStringLiteral("links")))) {
        scene.setCollapsed(t, g, true);
      }
    }
  }
  const QSize size(std::max(options.width, 300),
                   options.height > 0 ? options.height : std::min(scene.naturalHeight(), 8000));
  scene.fit(size);
  QString error;
  if (!exportScene(scene, size, options.output, &error)) {
    err << "mpsim-view: " << error << "\n";
    err.flush();
    return 1;
  }
  return 0;
}

}  // namespace mpsim::view
