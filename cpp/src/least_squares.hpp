// Bounded nonlinear least squares for the fits (engine_fit.cpp, efficiency_fit.cpp): Levenberg-Marquardt with
// forward-difference Jacobians, each parameter clamped to its box after every step.
#pragma once

#include <Eigen/Dense>

#include <algorithm>
#include <functional>

namespace roofline::detail {

struct LeastSquaresResult {
    Eigen::VectorXd x;
    double cost = 0;  ///< sum of squared residuals at x
    int iterations = 0;
};

/// Minimises |residuals(x)|² over lo <= x <= hi from x0 (clamped into the box).
inline LeastSquaresResult least_squares(const std::function<Eigen::VectorXd(const Eigen::VectorXd&)>& residuals,
                                        const Eigen::VectorXd& x0, const Eigen::VectorXd& lo, const Eigen::VectorXd& hi,
                                        int max_iterations) {
    LeastSquaresResult r;
    r.x = x0.cwiseMax(lo).cwiseMin(hi);
    Eigen::VectorXd res = residuals(r.x);
    r.cost = res.squaredNorm();
    const Eigen::Index p = r.x.size();
    double lambda = 1e-3;
    for (int it = 0; it < max_iterations && p > 0; ++it) {
        r.iterations = it + 1;
        Eigen::MatrixXd J(res.size(), p);
        for (Eigen::Index j = 0; j < p; ++j) {
            Eigen::VectorXd xh = r.x;
            const double h = 1e-4 * std::max(1.0, std::abs(r.x(j)));
            xh(j) = r.x(j) + h <= hi(j) ? r.x(j) + h : r.x(j) - h;  // stay inside the box
            J.col(j) = (residuals(xh) - res) / (xh(j) - r.x(j));
        }
        bool improved = false, converged = false;
        for (int tries = 0; tries < 8 && !improved; ++tries) {
            Eigen::MatrixXd A = J.transpose() * J;
            A.diagonal() += lambda * (A.diagonal().array() + 1e-12).matrix();
            const Eigen::VectorXd step = A.ldlt().solve(-J.transpose() * res);
            const Eigen::VectorXd next = (r.x + step).cwiseMax(lo).cwiseMin(hi);
            const Eigen::VectorXd next_res = residuals(next);
            const double next_cost = next_res.squaredNorm();
            if (next_cost < r.cost) {
                converged = (next - r.x).cwiseAbs().maxCoeff() < 1e-7 || r.cost - next_cost < 1e-12 * std::max(1.0, r.cost);
                r.x = next;
                res = next_res;
                r.cost = next_cost;
                lambda = std::max(lambda / 10, 1e-9);
                improved = true;
            } else {
                lambda *= 10;
            }
        }
        if (!improved || converged) break;
    }
    return r;
}

}  // namespace roofline::detail
