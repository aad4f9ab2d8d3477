#include "gui/kind_style.h"

#include <array>
#include <string_view>

namespace mpsim::view {

using mpsim::trace::Span;
using mpsim::trace::SpanKind;

namespace {

/// A legend group's colour (0xRRGGBB) and name.
struct GroupStyle {
  KindGroup kind;
  QRgb rgb;
  const char* label;
};

/// One row per KindGroup, in the enum's order. Tableau 10, which stays distinguishable for most
/// colour-vision deficiencies.
constexpr std::array<GroupStyle, mpsim::trace::kSpanGroupCount> kGroupStyles{{
    {KindGroup::Forward, 0x4e79a7, "forward"},
    {KindGroup::Backward, 0xf28e2b, "backward"},
    {KindGroup::BackwardInput, 0xe15759, "backward-input"},
    {KindGroup::BackwardWeight, 0xb07aa1, "backward-weight"},
    {KindGroup::Send, 0x76b7b2, "send"},
    {KindGroup::Recv, 0x59a14f, "receive"},
    {KindGroup::Collective, 0xedc948, "collectives"},
    {KindGroup::Optimizer, 0x9c755f, "optimizer"},
    {KindGroup::Transfer, 0x8c96a6, "link transfer"},
    {KindGroup::ForwardBackward, 0xff9da7, "forward & backward"},  // Tableau 10's pink
}};
static_assert(mpsim::core::rows_in_enum_order(kGroupStyles),
              "kGroupStyles: one row per KindGroup, in the enum's order");

const GroupStyle& style(KindGroup group) noexcept { return kGroupStyles[static_cast<std::size_t>(group)]; }

QString fromView(std::string_view text) { return QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size())); }

}  // namespace

KindGroup kindGroup(SpanKind kind) noexcept { return mpsim::trace::traits(kind).group; }

QColor groupColor(KindGroup group) noexcept { return QColor(style(group).rgb); }

QColor kindColor(SpanKind kind) noexcept { return groupColor(kindGroup(kind)); }

QString groupLabel(KindGroup group) { return QString::fromUtf8(style(group).label); }

QString kindLabel(SpanKind kind) { return fromView(mpsim::trace::traits(kind).label); }

QString spanShortLabel(const Span& span) {
  const mpsim::trace::SpanTraits& t = mpsim::trace::traits(span.kind);
  QString prefix = fromView(t.bar);
  if (!t.numbered) return prefix;
  if (span.microbatch >= 0) prefix += QString::number(span.microbatch);
  if (span.chunk > 0) prefix += QStringLiteral(".%1").arg(span.chunk);
  return prefix;
}

}  // namespace mpsim::view
