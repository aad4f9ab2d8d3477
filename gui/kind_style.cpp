#include "gui/kind_style.h"

namespace mpsim::view {

using mpsim::trace::Span;
using mpsim::trace::SpanKind;

KindGroup kindGroup(SpanKind kind) noexcept {
  switch (kind) {
    case SpanKind::Forward: return KindGroup::Forward;
    case SpanKind::Backward: return KindGroup::Backward;
    case SpanKind::BackwardInput: return KindGroup::BackwardInput;
    case SpanKind::BackwardWeight: return KindGroup::BackwardWeight;
    case SpanKind::Send: return KindGroup::Send;
    case SpanKind::Recv: return KindGroup::Recv;
    case SpanKind::AllReduce:
    case SpanKind::ReduceScatter:
    case SpanKind::AllGather:
    case SpanKind::AllToAll: return KindGroup::Collective;
    case SpanKind::Optimizer: return KindGroup::Optimizer;
    case SpanKind::Transfer: return KindGroup::Transfer;
    case SpanKind::ForwardBackward: return KindGroup::ForwardBackward;
  }
  return KindGroup::Transfer;
}

QColor groupColor(KindGroup group) noexcept {
  // Tableau 10, which stays distinguishable for most colour-vision deficiencies.
  switch (group) {
    case KindGroup::Forward: return QColor(0x4e, 0x79, 0xa7);
    case KindGroup::Backward: return QColor(0xf2, 0x8e, 0x2b);
    case KindGroup::BackwardInput: return QColor(0xe1, 0x57, 0x59);
    case KindGroup::BackwardWeight: return QColor(0xb0, 0x7a, 0xa1);
    case KindGroup::Send: return QColor(0x76, 0xb7, 0xb2);
    case KindGroup::Recv: return QColor(0x59, 0xa1, 0x4f);
    case KindGroup::Collective: return QColor(0xed, 0xc9, 0x48);
    case KindGroup::Optimizer: return QColor(0x9c, 0x75, 0x5f);
    case KindGroup::Transfer: return QColor(0x8c, 0x96, 0xa6);
    case KindGroup::ForwardBackward: return QColor(0xff, 0x9d, 0xa7);  // Tableau 10's pink
  }
  return QColor(0x80, 0x80, 0x80);
}

QColor kindColor(SpanKind kind) noexcept { return groupColor(kindGroup(kind)); }

QString groupLabel(KindGroup group) {
  switch (group) {
    case KindGroup::Forward: return QStringLiteral("forward");
    case KindGroup::Backward: return QStringLiteral("backward");
    case KindGroup::BackwardInput: return QStringLiteral("backward-input");
    case KindGroup::BackwardWeight: return QStringLiteral("backward-weight");
    case KindGroup::Send: return QStringLiteral("send");
    case KindGroup::Recv: return QStringLiteral("receive");
    case KindGroup::Collective: return QStringLiteral("collectives");
    case KindGroup::Optimizer: return QStringLiteral("optimizer");
    case KindGroup::Transfer: return QStringLiteral("link transfer");
    case KindGroup::ForwardBackward: return QStringLiteral("forward & backward");
  }
  return {};
}

QString kindLabel(SpanKind kind) {
  switch (kind) {
    case SpanKind::Forward: return QStringLiteral("forward");
    case SpanKind::Backward: return QStringLiteral("backward");
    case SpanKind::BackwardInput: return QStringLiteral("backward-input");
    case SpanKind::BackwardWeight: return QStringLiteral("backward-weight");
    case SpanKind::Send: return QStringLiteral("send");
    case SpanKind::Recv: return QStringLiteral("receive");
    case SpanKind::AllReduce: return QStringLiteral("all-reduce");
    case SpanKind::ReduceScatter: return QStringLiteral("reduce-scatter");
    case SpanKind::AllGather: return QStringLiteral("all-gather");
    case SpanKind::AllToAll: return QStringLiteral("all-to-all");
    case SpanKind::Optimizer: return QStringLiteral("optimizer");
    case SpanKind::Transfer: return QStringLiteral("transfer");
    case SpanKind::ForwardBackward: return QStringLiteral("forward & backward");
  }
  return {};
}

QString spanShortLabel(const Span& span) {
  QString prefix;
  switch (span.kind) {
    case SpanKind::Forward: prefix = QStringLiteral("F"); break;
    case SpanKind::Backward: prefix = QStringLiteral("B"); break;
    case SpanKind::BackwardInput: prefix = QStringLiteral("I"); break;
    case SpanKind::BackwardWeight: prefix = QStringLiteral("W"); break;
    case SpanKind::Send: prefix = QStringLiteral("S"); break;
    case SpanKind::Recv: prefix = QStringLiteral("R"); break;
    case SpanKind::AllReduce: return QStringLiteral("AR");
    case SpanKind::ReduceScatter: return QStringLiteral("RS");
    case SpanKind::AllGather: return QStringLiteral("AG");
    case SpanKind::AllToAll: return QStringLiteral("A2A");
    case SpanKind::Optimizer: return QStringLiteral("opt");
    case SpanKind::Transfer: return {};
    case SpanKind::ForwardBackward: prefix = QStringLiteral("F&B"); break;
  }
  if (span.microbatch >= 0) prefix += QString::number(span.microbatch);
  if (span.chunk > 0) prefix += QStringLiteral(".%1").arg(span.chunk);
  return prefix;
}

}  // namespace mpsim::view
