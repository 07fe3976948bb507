#include "roofline/ops/embedding.hpp"

#include "roofline/errors.hpp"

namespace roofline::ops {

OpCost embedding_lookup(double tokens, double hidden, const Format& table, const Format& out) {
    check_count("embedding_lookup tokens", tokens);
    check_count("embedding_lookup hidden", hidden);
    OpCost op;
    op.name = "embedding_lookup";
    op.add_dequant(table, tokens * hidden);
    op.add_dram(tokens * hidden * table.bytes_per_element() + tokens * 4.0, tokens * hidden * out.bytes_per_element());
    op.launches = 1;
    return op;
}

}  // namespace roofline::ops
