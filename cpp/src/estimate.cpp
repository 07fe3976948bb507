#include "roofline/estimate.hpp"

#include "roofline/errors.hpp"
#include "roofline/plan.hpp"
#include "roofline/speculative.hpp"

namespace roofline {

const std::vector<FieldInfo>& estimate_fields() {
    static const std::vector<FieldInfo> fields = [] {
        std::vector<FieldInfo> f;
#define ROOFLINE_X(name, type, unit, meaning) f.push_back({#name, #type, unit, meaning, true});
        ROOFLINE_ESTIMATE_CONFIG_FIELDS(ROOFLINE_X)
#undef ROOFLINE_X
#define ROOFLINE_X(name, type, unit, meaning) f.push_back({#name, #type, unit, meaning, false});
        ROOFLINE_ESTIMATE_FIELDS(ROOFLINE_X)
#undef ROOFLINE_X
        return f;
    }();
    return fields;
}

Estimate estimate(const Model& model, const Device& device, const Workload& w) {
    EstimatePlan::check_point(w.batch, w.prompt_tokens, w.gen_tokens, w.context_tokens);
    check_count("ubatch_tokens", w.ubatch_tokens);
    if (w.tensor_parallel < 1 || w.tensor_parallel > 1024)
        throw InvalidArgument("tensor_parallel must be within [1, 1024], got " + std::to_string(w.tensor_parallel));
    if (w.draft) {  // checked before any plan is built
        check_count("draft_tokens", w.draft_tokens);
        if (w.draft_tokens < 1 || w.draft_tokens > 1024)
            throw InvalidArgument("draft_tokens (gamma) must be within [1, 1024] with a draft model, got " +
                                  std::to_string(w.draft_tokens));
        check_range("acceptance", w.acceptance, 0.0, 1.0);
    }
    const EstimatePlan plan(model, device, PlanConfig::of(w));
    Estimate e = plan.estimate(w.batch, w.prompt_tokens, w.gen_tokens, true, w.context_tokens);
    if (w.draft && w.gen_tokens > 0) {
        PlanConfig dc{w.draft_quant.empty() ? w.quant : w.draft_quant, w.kv_dtype, w.flash_attention, w.engine, 1,
                      w.ubatch_tokens};
        dc.flash_attention_from_engine = w.flash_attention_from_engine;
        const EstimatePlan draft(*w.draft, device, dc);
        apply_speculative(e, plan, draft, w.draft_tokens, w.acceptance);
    }
    return e;
}

}  // namespace roofline
