// Efficiency grids over two log2 axes (GEMM and MoE tables).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace roofline::detail {

// Bilinear in (log2 a, log2 b) over a row-major grid whose axes start at
// log2 a0 and log2 b0, held at the grid's edges, at log2 a and log2 b already
// taken (callers that reuse one axis). Unbounded: grids of factors use it.
inline double log2_grid_blend_at(const std::vector<float>& grid, int log2_a0, int a_points,
                                 int log2_b0, int b_points, double log2_a, double log2_b) noexcept {
  const double x = std::clamp(log2_a - log2_a0, 0.0, static_cast<double>(a_points - 1));
  const double y = std::clamp(log2_b - log2_b0, 0.0, static_cast<double>(b_points - 1));
  const int x0 = std::min(static_cast<int>(x), std::max(a_points - 2, 0));
  const int y0 = std::min(static_cast<int>(y), std::max(b_points - 2, 0));
  const int x1 = std::min(x0 + 1, a_points - 1), y1 = std::min(y0 + 1, b_points - 1);
  const double fx = x - x0, fy = y - y0;
  auto at = [&](int i, int j) {
    return static_cast<double>(grid[static_cast<std::size_t>(i * b_points + j)]);
  };
  return (1 - fx) * ((1 - fy) * at(x0, y0) + fy * at(x0, y1)) +
         fx * ((1 - fy) * at(x1, y0) + fy * at(x1, y1));
}

// The same, an efficiency: never above 1.
inline double log2_grid_value_at(const std::vector<float>& grid, int log2_a0, int a_points,
                                 int log2_b0, int b_points, double log2_a, double log2_b) noexcept {
  return std::min(log2_grid_blend_at(grid, log2_a0, a_points, log2_b0, b_points, log2_a, log2_b),
                  1.0);
}

inline double log2_grid_value(const std::vector<float>& grid, int log2_a0, int a_points,
                              int log2_b0, int b_points, double a, double b) noexcept {
  return log2_grid_value_at(grid, log2_a0, a_points, log2_b0, b_points, std::log2(std::max(a, 1.0)),
                            std::log2(std::max(b, 1.0)));
}

}  // namespace roofline::detail
