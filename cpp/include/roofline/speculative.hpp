// Speculative decoding: a draft model proposes γ tokens, each accepted with probability α; one target pass verifies
// γ + 1 tokens. Decode tokens/s follow from the expected tokens per cycle and the cycle's time.
#pragma once

#include "roofline/estimate.hpp"
#include "roofline/plan.hpp"

namespace roofline {

/// Expected tokens one draft-and-verify cycle yields: (1 − α^(γ+1)) / (1 − α), γ + 1 when α = 1.
double speculative_tokens_per_cycle(double draft_tokens, double acceptance);

/// Seconds of one cycle after `past` tokens already in each sequence's cache: γ draft steps, then one target pass
/// over γ + 1 tokens.
double speculative_cycle_s(const EstimatePlan& target, const EstimatePlan& draft, double batch, double past,
                           double draft_tokens);

/// An estimate's decode replaced by speculative decoding's: γ draft steps and one verification per cycle at the
/// generation's mean context; decode_s, tpot_s, tokens/s and total_s follow, speculative_tokens_per_cycle is set.
/// Checks γ within [1, 1024] and α within [0, 1].
void apply_speculative(Estimate& e, const EstimatePlan& target, const EstimatePlan& draft, double draft_tokens,
                       double acceptance);

}  // namespace roofline
