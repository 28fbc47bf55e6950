// Grid sampling differentiable to any order with respect to its input (grid_sample.h).
#include "sg2/ops/grid_sample.h"

#include "sg2/core/error.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

namespace sg2::ops {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr int64_t kBilinear = 0, kZeros = 0;
constexpr bool kAlignCorners = false;

struct GridSampleBackward;

// y = grid_sample(x, grid); its backward is GridSampleBackward, itself differentiable.
struct GridSampleForward : public torch::autograd::Function<GridSampleForward> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, const at::Tensor& grid) {
    ctx->save_for_backward({input, grid});
    return at::grid_sampler_2d(input, grid, kBilinear, kZeros, kAlignCorners);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads);
};

// (dx, dgrid) of grid_sample for dy. dx is linear in dy: its gradient for dy is grid_sample again.
struct GridSampleBackward : public torch::autograd::Function<GridSampleBackward> {
  static variable_list forward(AutogradContext* ctx, const at::Tensor& grad_output, const at::Tensor& input,
                               const at::Tensor& grid) {
    ctx->save_for_backward({grid});
    auto [grad_input, grad_grid] = at::grid_sampler_2d_backward(grad_output, input, grid, kBilinear, kZeros,
                                                                kAlignCorners, {true, true});
    return {grad_input, grad_grid};
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const at::Tensor grid = ctx->get_saved_variables()[0];
    SG2_CHECK(!ctx->needs_input_grad(2), "grid_sample: no second-order gradient with respect to the grid");
    at::Tensor grad2_grad_output;
    if (ctx->needs_input_grad(0) && grads[0].defined()) grad2_grad_output = GridSampleForward::apply(grads[0], grid);
    return {grad2_grad_output, at::Tensor(), at::Tensor()};
  }
};

variable_list GridSampleForward::backward(AutogradContext* ctx, variable_list grads) {
  const auto saved = ctx->get_saved_variables();
  const variable_list d = GridSampleBackward::apply(grads[0], saved[0], saved[1]);
  return {d[0], d[1]};
}

}  // namespace

at::Tensor grid_sample(const at::Tensor& input, const at::Tensor& grid) {
  SG2_CHECK(input.dim() == 4 && grid.dim() == 4 && grid.size(3) == 2 && grid.size(0) == input.size(0),
            "grid_sample: expected input [N, C, H, W] and grid [N, H', W', 2], got {} and {}", input.sizes(),
            grid.sizes());
  return GridSampleForward::apply(input, grid);
}

}  // namespace sg2::ops
