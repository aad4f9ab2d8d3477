#pragma once
/// Colours and legend of span kinds, and the viewer's fixed palette (one place, so the window,
/// screenshots and SVG exports look the same).
#include <QColor>
#include <QString>

#include <vector>

#include "sim/trace/timeline.h"

namespace mpsim::view {

/// Legend categories (the span traits' group column): the collectives share one entry.
using KindGroup = mpsim::trace::SpanGroup;

[[nodiscard]] KindGroup kindGroup(mpsim::trace::SpanKind kind) noexcept;
[[nodiscard]] QColor kindColor(mpsim::trace::SpanKind kind) noexcept;
[[nodiscard]] QColor groupColor(KindGroup group) noexcept;
[[nodiscard]] QString groupLabel(KindGroup group);
/// Readable kind name for tooltips: "forward", "backward (input)", "all-reduce", ...
[[nodiscard]] QString kindLabel(mpsim::trace::SpanKind kind);
/// Short bar label: "F3", "B3.1", "W12", "AR".
[[nodiscard]] QString spanShortLabel(const mpsim::trace::Span& span);

/// The fixed colours of the view.
namespace palette {
inline const QColor kBackground{0xff, 0xff, 0xff};
inline const QColor kHeaderBackground{0xf3, 0xf4, 0xf6};
inline const QColor kTraceHeaderBackground{0x1f, 0x29, 0x37};
inline const QColor kTraceHeaderText{0xf9, 0xfa, 0xfb};
inline const QColor kGrid{0xe5, 0xe7, 0xeb};
inline const QColor kRowSeparator{0xee, 0xef, 0xf2};
inline const QColor kText{0x1f, 0x29, 0x37};
inline const QColor kMutedText{0x6b, 0x72, 0x80};
inline const QColor kBubbleOutline{0xe1, 0x1d, 0x48, 0xb0};
inline const QColor kSelection{0x25, 0x63, 0xeb, 0x30};
inline const QColor kSelectionEdge{0x25, 0x63, 0xeb};
inline const QColor kHighlightEdge{0x11, 0x18, 0x27};
/// Memory rows: a slate outside Tableau 10, which the span kinds use up.
inline const QColor kMemoryFill{0xb4, 0xc0, 0xd0};
inline const QColor kMemoryPeak{0x47, 0x55, 0x69};
}  // namespace palette

}  // namespace mpsim::view
