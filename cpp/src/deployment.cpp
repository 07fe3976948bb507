#include "roofline/deployment.hpp"

#include "roofline/errors.hpp"
#include "roofline/plan.hpp"
#include "roofline/serving.hpp"
#include "roofline/sweep.hpp"

#include <algorithm>
#include <functional>
#include <optional>
#include <cmath>
#include <limits>
#include <numeric>

namespace roofline {

namespace {
// What a deployment's search found: reached the rate, the capacity within the targets, the load and its numbers.
struct Found {
    bool feasible = false, capacity_feasible = false;
    double capacity = 0, batch = 0, tokens_per_s = 0, tpot_s = 0, ttft_s = 0;
    std::string reason;
};
}  // namespace

std::vector<Deployment> cheapest_deployments(const DeploymentRequest& r) {
    if (!r.model) throw InvalidArgument("cheapest deployments: no model");
    if (r.devices.empty()) throw InvalidArgument("cheapest deployments: 'devices' must list at least one device");
    if (r.price_per_hour.size() != r.devices.size())
        throw InvalidArgument("cheapest deployments: one price per device is needed (" + std::to_string(r.devices.size()) +
                              "), got " + std::to_string(r.price_per_hour.size()));
    for (std::size_t i = 0; i < r.devices.size(); ++i) {
        if (!r.devices[i]) throw InvalidArgument("cheapest deployments: devices[" + std::to_string(i) + "] is null");
        check_size("price_per_hour['" + r.devices[i]->id + "']", r.price_per_hour[i]);
    }
    check_size("target_tokens_per_s", r.target_tokens_per_s, true);
    if (r.quants.empty()) throw InvalidArgument("cheapest deployments: 'quant' must list at least one quantization");
    const Architecture& a = r.model->arch;
    std::vector<int> counts = r.counts;
    if (counts.empty()) {
        for (int c : {1, 2, 4, 8})
            if (a.n_head % c == 0 && a.n_kv_head % c == 0) counts.push_back(c);  // the defaults divide the heads
    }
    for (int c : counts)
        if (c < 1 || c > 1024) throw InvalidArgument("tensor_parallel must be a whole number within [1, 1024], got " + std::to_string(c));
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double target = r.target_tokens_per_s;
    std::vector<Deployment> rows;
    for (std::size_t di = 0; di < r.devices.size(); ++di) {
        const Device& dev = *r.devices[di];
        const double price = r.price_per_hour[di];
        for (int count : counts)
            for (const std::string& q : r.quants) {
                if (std::any_of(rows.begin(), rows.end(), [&](const Deployment& x) {
                        return x.device == dev.id && x.count == count && x.quant == q;
                    }))
                    continue;  // a repeated quantization
                Deployment row;
                row.device = dev.id;
                row.count = count;
                row.quant = q;
                row.tpot_s = row.ttft_s = nan;
                row.cost_per_hour = price * count;
                row.cost_per_million_tokens = row.cost_per_million_tokens_at_capacity = nan;
                const bool serving_engine = is_serving_engine(r.engine, dev, r.split_mode, "cheapest deployments");
                try {
                    // the smallest load (batch, or clients under a serving engine) reaching a rate within the
                    // latency targets, with the capacity within them; replicas when one copy falls short
                    std::function<Found(double)> search;
                    std::optional<EstimatePlan> plan;
                    std::optional<ServingPlan> serving;
                    if (serving_engine) {  // continuous batching: clients, not a static batch
                        ServingConfig sc;
                        sc.quant = q;
                        sc.engine = r.engine;
                        sc.kv_dtype = r.kv_dtype;
                        sc.parallel.tensor = count;
                        serving.emplace(*r.model, dev, sc);
                        row.split_mode = count > 1 ? "tensor" : "none";
                        search = [&](double rate) {
                            const ServingThroughputAnswer x = min_concurrency_for_throughput(*serving, r.prompt_tokens, r.gen_tokens, rate, r.tpot_s, r.ttft_s);
                            return Found{x.feasible, x.capacity.feasible, x.capacity.at.output_tokens_per_s, x.concurrency,
                                         x.at.output_tokens_per_s, x.at.tpot_s, x.at.ttft_s, x.reason};
                        };
                    } else {
                        PlanConfig pc{q, r.kv_dtype, r.flash_attention, r.engine, count};
                        pc.flash_attention_from_engine = r.flash_attention_from_engine;
                        pc.split_mode = r.split_mode;
                        plan.emplace(*r.model, dev, pc);
                        row.split_mode = plan->config().split_mode;
                        search = [&](double rate) {
                            const ThroughputAnswer x = min_batch_for_throughput(*plan, r.prompt_tokens, r.gen_tokens, rate, r.tpot_s, r.ttft_s);
                            return Found{x.feasible, x.capacity.feasible, x.capacity.at.decode_tokens_per_s_total, x.batch,
                                         x.at.decode_tokens_per_s_total, x.at.tpot_s, x.at.ttft_s, x.reason};
                        };
                    }
                    Found f = search(target);
                    const double capacity = f.capacity_feasible ? f.capacity : 0.0;
                    row.capacity_tokens_per_s = capacity;
                    int copies = 1;
                    if (!f.feasible && r.replicas && f.capacity_feasible && capacity > 0) {
                        copies = static_cast<int>(std::ceil(target / capacity));
                        f = search(target / copies);
                        if (f.feasible) f.reason = std::to_string(copies) + " replicas; " + f.reason;
                    }
                    row.reason = f.reason;
                    if (f.feasible) {
                        const double hourly = price * count * copies;
                        row.feasible = true;
                        row.batch = f.batch;
                        row.replicas = copies;
                        row.tokens_per_s = f.tokens_per_s * copies;
                        row.tpot_s = f.tpot_s;
                        row.ttft_s = f.ttft_s;
                        row.cost_per_hour = hourly;
                        row.cost_per_million_tokens = hourly / (3600.0 * target) * 1e6;
                        row.cost_per_million_tokens_at_capacity = hourly / (3600.0 * capacity * copies) * 1e6;
                    }
                } catch (const Error& e) {  // a configuration that cannot be estimated stays in the table, with why
                    row.reason = e.what();
                }
                rows.push_back(std::move(row));
            }
    }
    std::vector<std::size_t> order(rows.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t i, std::size_t j) {
        const Deployment &x = rows[i], &y = rows[j];
        if (x.feasible != y.feasible) return x.feasible;
        if (x.feasible && x.cost_per_million_tokens != y.cost_per_million_tokens)
            return x.cost_per_million_tokens < y.cost_per_million_tokens;
        return x.capacity_tokens_per_s > y.capacity_tokens_per_s;
    });
    std::vector<Deployment> out;
    out.reserve(rows.size());
    for (std::size_t i : order) out.push_back(rows[i]);
    return out;
}

}  // namespace roofline
