#include "roofline/speculative.hpp"

#include "roofline/errors.hpp"

#include <cmath>

namespace roofline {

double speculative_tokens_per_cycle(double gamma, double alpha) {
    return alpha >= 1 ? gamma + 1 : (1 - std::pow(alpha, gamma + 1)) / (1 - alpha);
}

double speculative_cycle_s(const EstimatePlan& target, const EstimatePlan& draft, double batch, double past,
                           double gamma) {
    const double draft_step = draft.phase(batch, 1, past).seconds;
    const double verify = target.phase(batch, gamma + 1, past).seconds;
    return gamma * draft_step + verify;
}

void apply_speculative(Estimate& e, const EstimatePlan& target, const EstimatePlan& draft, double gamma, double alpha) {
    check_count("draft_tokens", gamma);
    if (gamma < 1 || gamma > 1024)
        throw InvalidArgument("draft_tokens (gamma) must be within [1, 1024] with a draft model, got " + std::to_string(gamma));
    check_range("acceptance", alpha, 0.0, 1.0);
    const double B = e.batch, P = e.context_tokens + e.prompt_tokens, n = e.gen_tokens;
    if (n <= 0) return;
    const double tau = speculative_tokens_per_cycle(gamma, alpha);
    const double mid = std::floor(P + (n + 1) / 2);  // the generation's mean context
    const double cycle = speculative_cycle_s(target, draft, B, mid - 1, gamma);
    e.speculative_tokens_per_cycle = tau;
    const double lo = e.decode_tokens_per_s > 0 ? e.decode_tokens_per_s_lo / e.decode_tokens_per_s : 1;
    const double hi = e.decode_tokens_per_s > 0 ? e.decode_tokens_per_s_hi / e.decode_tokens_per_s : 1;
    e.decode_tokens_per_s = tau / cycle;
    e.decode_tokens_per_s_lo = e.decode_tokens_per_s * lo;  // the target engine's interval, as without a draft
    e.decode_tokens_per_s_hi = e.decode_tokens_per_s * hi;
    e.decode_tokens_per_s_total = B * tau / cycle;
    e.decode_s = n / e.decode_tokens_per_s;
    e.tpot_s = e.decode_s / n;
    e.total_s = e.prefill_s + e.decode_s;
}

}  // namespace roofline
