#pragma once
/// The application window: the timeline with the report panel beside it, a File menu (open,
/// compare, reload, export), a View menu (zoom, fit), drag-and-drop of trace files, reloading when
/// an open file changes on disk, and a banner for files that cannot be read.
#include <QFileSystemWatcher>
#include <QMainWindow>
#include <QSet>
#include <QStringList>
#include <QTimer>

#include <memory>
#include <vector>

#include "gui/trace_model.h"

class QLabel;

namespace mpsim::view {

class ReportPanel;
class TimelineWidget;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  /// One path replaces what is open; two are stacked for comparison (the first is "A").
  /// Files that cannot be read leave the view as it was and show their error in the banner.
  void openFiles(const QStringList& paths);
  /// Adds (or replaces) the second trace of a comparison.
  void compareWith(const QString& path);
  void closeComparison();
  void reloadAll();

  /// The message of the error banner; empty when there is none.
  [[nodiscard]] QString errorText() const;
  [[nodiscard]] TimelineWidget* timeline() const noexcept { return m_timeline; }
  [[nodiscard]] QStringList openPaths() const;

 protected:
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;

 private:
  void createMenus();
  void showError(const QString& message);
  void refresh(bool keepRange);
  void watch();
  void reloadChanged();
  void exportImage();

  std::vector<std::unique_ptr<TraceModel>> m_models;
  TimelineWidget* m_timeline = nullptr;
  ReportPanel* m_report = nullptr;
  QLabel* m_banner = nullptr;
  QFileSystemWatcher m_watcher;
  QTimer m_reloadTimer;
  QSet<QString> m_changed;
};

}  // namespace mpsim::view
