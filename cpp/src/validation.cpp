#include "roofline/validation.hpp"

#include "roofline/errors.hpp"

#include <algorithm>
#include <cmath>

namespace roofline {

std::vector<ValidationResult> validate(const std::vector<ValidationCase>& cases) {
    std::vector<ValidationResult> out;
    out.reserve(cases.size());
    for (std::size_t i = 0; i < cases.size(); ++i) {
        const ValidationCase& c = cases[i];
        const std::string where = "validation case " + std::to_string(i) + " (" + c.table + ", " + c.test + ")";
        if (!c.model || !c.device) throw InvalidArgument(where + ": no model or device");
        check_size(where + " measured tokens/s", c.measured_tokens_per_s, true);
        ValidationResult r;
        r.point = c;
        r.decode = c.workload.gen_tokens > 0;
        Estimate e;
        try {
            e = estimate(*c.model, *c.device, c.workload);
        } catch (const NotFound& x) {
            throw NotFound(where + ": " + x.what());
        } catch (const InvalidArgument& x) {
            throw InvalidArgument(where + ": " + x.what());
        }
        r.predicted_tokens_per_s = r.decode ? e.decode_tokens_per_s : e.prefill_tokens_per_s;
        r.roofline_tokens_per_s = r.decode ? e.ceiling_decode : e.ceiling_prefill;
        r.error = r.predicted_tokens_per_s / c.measured_tokens_per_s - 1;
        r.roofline_error = r.roofline_tokens_per_s / c.measured_tokens_per_s - 1;
        r.bound = phase_bound_names()[static_cast<std::size_t>(r.decode ? e.decode_bound : e.prefill_bound)];
        out.push_back(std::move(r));
    }
    return out;
}

std::vector<ErrorSummary> summarize(const std::vector<ValidationResult>& results) {
    std::vector<std::string> groups;
    for (const auto& r : results)
        if (std::find(groups.begin(), groups.end(), r.point.table) == groups.end()) groups.push_back(r.point.table);
    groups.push_back("all");
    std::vector<ErrorSummary> out;
    for (const auto& g : groups) {
        ErrorSummary s;
        s.group = g;
        for (const auto& r : results) {
            if (g != "all" && r.point.table != g) continue;
            ++s.points;
            s.estimator_mape_percent += std::abs(r.error) * 100;
            s.roofline_mape_percent += std::abs(r.roofline_error) * 100;
            s.estimator_max_percent = std::max(s.estimator_max_percent, std::abs(r.error) * 100);
            s.roofline_max_percent = std::max(s.roofline_max_percent, std::abs(r.roofline_error) * 100);
        }
        if (s.points > 0) {
            s.estimator_mape_percent /= static_cast<double>(s.points);
            s.roofline_mape_percent /= static_cast<double>(s.points);
        }
        out.push_back(s);
    }
    return out;
}

StaticBatchRates static_batch_rates(const EstimatePlan& plan, double batch, double prompt, double gen) {
    const EstimateRow r = plan.evaluate(batch, prompt, gen);
    const double tp = plan.config().tensor_parallel;
    // the pure roofline's seconds of each phase, from its ceilings (tokens/s of the prompt; per sequence of decode)
    const double ideal_prefill = prompt > 0 && r.ceiling_prefill > 0 ? batch * prompt / r.ceiling_prefill : 0.0;
    const double ideal_decode = gen > 0 && r.ceiling_decode > 0 ? gen / r.ceiling_decode : 0.0;
    StaticBatchRates s;
    s.output_tokens_per_s_per_device = r.total_s > 0 ? batch * gen / r.total_s / tp : 0.0;
    s.roofline_output_tokens_per_s_per_device = ideal_prefill + ideal_decode > 0 ? batch * gen / (ideal_prefill + ideal_decode) / tp : 0.0;
    s.ttft_s = r.ttft_s;
    s.roofline_ttft_s = ideal_prefill;
    return s;
}

}  // namespace roofline
