// Embedding lookup: gathering the rows of a table for the new tokens.
#pragma once

#include "roofline/format.hpp"
#include "roofline/op.hpp"

namespace roofline::ops {

/// Gather `tokens` rows of a vocab×hidden table: read tokens·hidden elements of `table` and the int32 ids,
/// write tokens·hidden elements of `out`; table.dequant_flops_per_element per element read. One launch.
/// (The table's size does not matter: only the gathered rows move.)
OpCost embedding_lookup(double tokens, double hidden, const Format& table, const Format& out);

}  // namespace roofline::ops
