#include "gui/main_window.h"

#include <QAction>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QKeySequence>
#include <QLabel>
#include <QMenuBar>
#include <QMimeData>
#include <QSplitter>
#include <QStatusBar>
#include <QVBoxLayout>

#include "gui/export.h"
#include "gui/report_panel.h"
#include "gui/timeline_widget.h"

namespace mpsim::view {

namespace {
const QString kTraceFilter = QStringLiteral("Trace files (*.json *.json.gz);;All files (*)");
}

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle(QStringLiteral("mpsim-view"));
  setAcceptDrops(true);
  auto* central = new QWidget(this);
  auto* layout = new QVBoxLayout(central);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(0);
  m_banner = new QLabel(central);
  m_banner->setWordWrap(true);
  m_banner->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_banner->setStyleSheet(
      QStringLiteral("QLabel { background: #fde8ec; color: #9f1239; padding: 8px; "
                     "border-bottom: 1px solid #fecdd6; }"));
  m_banner->hide();
  layout->addWidget(m_banner);
  auto* splitter = new QSplitter(Qt::Horizontal, central);
  m_timeline = new TimelineWidget(splitter);
  m_report = new ReportPanel(splitter);
  splitter->addWidget(m_timeline);
  splitter->addWidget(m_report);
  splitter->setStretchFactor(0, 3);
  splitter->setStretchFactor(1, 1);
  splitter->setSizes({1040, 420});
  layout->addWidget(splitter, 1);
  setCentralWidget(central);
  resize(1460, 820);

  connect(m_timeline, &TimelineWidget::microbatchHighlighted, this, [this](std::int32_t mb) {
    std::vector<const TraceModel*> traces;
    for (const auto& m : m_models) traces.push_back(m.get());
    m_report->showTraces(traces, mb);
    statusBar()->showMessage(mb >= 0 ? QStringLiteral("microbatch %1 highlighted (Esc clears)").arg(mb) : QString());
  });
  m_reloadTimer.setSingleShot(true);
  m_reloadTimer.setInterval(250);  // writers often replace a file in several steps
  connect(&m_reloadTimer, &QTimer::timeout, this, &MainWindow::reloadChanged);
  connect(&m_watcher, &QFileSystemWatcher::fileChanged, this, [this](const QString& path) {
    m_changed.insert(path);
    m_reloadTimer.start();
  });
  createMenus();
  refresh(false);
}

MainWindow::~MainWindow() = default;

void MainWindow::createMenus() {
  QMenu* file = menuBar()->addMenu(QStringLiteral("&File"));
  file->addAction(QStringLiteral("&Open..."), QKeySequence::Open, this, [this] {
    const QStringList paths =
        QFileDialog::getOpenFileNames(this, QStringLiteral("Open traces"), QString(), kTraceFilter);
    if (!paths.isEmpty()) openFiles(paths);
  });
  file->addAction(QStringLiteral("&Compare with..."), QKeySequence(Qt::CTRL | Qt::Key_D), this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, QStringLiteral("Compare with"), QString(), kTraceFilter);
    if (!path.isEmpty()) compareWith(path);
  });
  file->addAction(QStringLiteral("Close comparison"), this, [this] { closeComparison(); });
  file->addAction(QStringLiteral("&Reload"), QKeySequence::Refresh, this, [this] { reloadAll(); });
  file->addSeparator();
  file->addAction(QStringLiteral("&Export view (PNG, SVG)..."), QKeySequence(Qt::CTRL | Qt::Key_E), this,
                  [this] { exportImage(); });
  file->addSeparator();
  file->addAction(QStringLiteral("&Quit"), QKeySequence::Quit, this, [this] { close(); });

  QMenu* view = menuBar()->addMenu(QStringLiteral("&View"));
  view->addAction(QStringLiteral("Zoom &in"), QKeySequence::ZoomIn, m_timeline, &TimelineWidget::zoomIn);
  view->addAction(QStringLiteral("Zoom &out"), QKeySequence::ZoomOut, m_timeline, &TimelineWidget::zoomOut);
  view->addAction(QStringLiteral("&Fit to window"), QKeySequence(Qt::CTRL | Qt::Key_0), m_timeline,
                  &TimelineWidget::fitToWindow);
  view->addAction(QStringLiteral("&Clear highlight"), m_timeline, &TimelineWidget::clearHighlight);
}

void MainWindow::showError(const QString& message) {
  m_banner->setText(message);
  m_banner->setVisible(!message.isEmpty());
}

QString MainWindow::errorText() const { return m_banner->text(); }

QStringList MainWindow::openPaths() const {
  QStringList out;
  for (const auto& m : m_models) out << m->sourcePath();
  return out;
}

void MainWindow::openFiles(const QStringList& paths) {
  if (paths.isEmpty()) return;
  std::vector<std::unique_ptr<TraceModel>> loaded;
  QStringList errors;
  for (const QString& path : paths.mid(0, 2)) {
    QString error;
    auto model = TraceModel::load(path, &error);
    if (model) {
      loaded.push_back(std::move(model));
    } else {
      errors << error;
    }
  }
  if (paths.size() > 2) errors << QStringLiteral("only two traces can be compared; ignored the rest");
  showError(errors.join(QLatin1Char('\n')));
  if (loaded.empty()) return;
  m_models = std::move(loaded);
  refresh(false);
}

void MainWindow::compareWith(const QString& path) {
  if (m_models.empty()) {
    openFiles({path});
    return;
  }
  QString error;
  auto model = TraceModel::load(path, &error);
  showError(error);
  if (!model) return;
  m_models.resize(1);
  m_models.push_back(std::move(model));
  refresh(false);
}

void MainWindow::closeComparison() {
  if (m_models.size() < 2) return;
  m_models.resize(1);
  refresh(true);
}

void MainWindow::reloadAll() {
  for (const auto& m : m_models) m_changed.insert(m->sourcePath());
  reloadChanged();
}

void MainWindow::reloadChanged() {
  QStringList errors;
  bool any = false;
  for (auto& model : m_models) {
    const QString path = model->sourcePath();
    if (!m_changed.contains(path)) continue;
    QString error;
    auto fresh = TraceModel::load(path, &error);
    if (fresh) {
      model = std::move(fresh);
      any = true;
    } else {
      errors << error + QStringLiteral(" (showing the previous version)");
    }
  }
  m_changed.clear();
  showError(errors.join(QLatin1Char('\n')));
  if (any) refresh(true);
  watch();
}

void MainWindow::watch() {
  // Files replaced by rename drop out of the watcher: add them back whenever they exist again.
  for (const auto& m : m_models) {
    if (!m_watcher.files().contains(m->sourcePath()) && QFileInfo::exists(m->sourcePath())) {
      m_watcher.addPath(m->sourcePath());
    }
  }
}

void MainWindow::refresh(bool keepRange) {
  std::vector<const TraceModel*> traces;
  for (const auto& m : m_models) traces.push_back(m.get());
  if (!m_watcher.files().isEmpty()) m_watcher.removePaths(m_watcher.files());
  watch();
  m_timeline->setTraces(traces, keepRange);
  m_report->showTraces(traces, m_timeline->scene().highlightedMicrobatch());
  QStringList names;
  for (const auto& m : m_models) names << QFileInfo(m->sourcePath()).fileName();
  setWindowTitle(names.isEmpty() ? QStringLiteral("mpsim-view")
                                 : QStringLiteral("%1 \u2014 mpsim-view").arg(names.join(QStringLiteral(" vs "))));
}

void MainWindow::exportImage() {
  if (m_models.empty()) return;
  QString filter = QStringLiteral("PNG image (*.png)");
  const QString path = QFileDialog::getSaveFileName(this, QStringLiteral("Export view"), QStringLiteral("timeline.png"),
                                                    QStringLiteral("PNG image (*.png);;SVG image (*.svg)"), &filter);
  if (path.isEmpty()) return;
  QString error;
  if (!exportScene(m_timeline->scene(), m_timeline->viewSize(), path, &error)) {
    showError(error);
  } else {
    statusBar()->showMessage(QStringLiteral("saved %1").arg(path), 5000);
  }
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  if (event->mimeData()->hasUrls()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
  QStringList paths;
  for (const QUrl& url : event->mimeData()->urls()) {
    if (url.isLocalFile()) paths << url.toLocalFile();
  }
  if (paths.isEmpty()) return;
  // Dropping one file with Ctrl held (or onto an open trace with Shift) adds it for comparison.
  if (paths.size() == 1 && !m_models.empty() && (event->modifiers() & (Qt::ControlModifier | Qt::ShiftModifier))) {
    compareWith(paths.front());
  } else {
    openFiles(paths);
  }
  event->acceptProposedAction();
}

}  // namespace mpsim::view
