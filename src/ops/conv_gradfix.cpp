#include "sg2/ops/conv_gradfix.h"

#include "sg2/core/error.h"
#include "sg2/ops/tf32_split.h"

#include <torch/csrc/autograd/custom_function.h>

#include <vector>

namespace sg2::ops {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The geometry through autograd's saved data: stride, padding, output padding, groups, transpose,
// layout, the TF32 split's devices.
std::vector<int64_t> pack(const ConvGeometry& g) {
  return {g.stride[0], g.stride[1], g.padding[0], g.padding[1], g.output_padding[0], g.output_padding[1],
          g.groups,    g.transpose ? 1 : 0, g.layout == at::MemoryFormat::ChannelsLast ? 1 : 0, static_cast<int64_t>(g.tf32_split)};
}

ConvGeometry unpack(const std::vector<int64_t>& v) {
  ConvGeometry g;
  g.stride = {v[0], v[1]};
  g.padding = {v[2], v[3]};
  g.output_padding = {v[4], v[5]};
  g.groups = v[6];
  g.transpose = v[7] != 0;
  g.layout = v[8] != 0 ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
  g.tf32_split = static_cast<DeviceSet>(v[9]);
  return g;
}

const std::array<int64_t, 2> kNoDilation{1, 1};

// t in `layout`, with strides the backends read as that layout also where t's shape makes it
// ambiguous (1 channel or 1 pixel): cuDNN picks its output's layout from its input's strides.
at::Tensor in_layout(const at::Tensor& t, at::MemoryFormat layout) {
  if (t.is_contiguous(layout) && t.suggest_memory_format() == layout) return t;
  return at::empty(t.sizes(), t.options().memory_format(layout)).copy_(t);
}

// y in the geometry's layout on every backend (LibTorch's CPU transposed convolution gives NCHW), in
// three TF32 passes where run.float32_convolutions asks (tf32_split.h).
at::Tensor convolve(const at::Tensor& x_any, const at::Tensor& w, const ConvGeometry& g) {
  const at::Tensor x = in_layout(x_any, g.layout);
  const at::Tensor y = bilinear_in_tf32_passes(x, w, g.tf32_split, [&g](const at::Tensor& xs, const at::Tensor& ws) {
    return g.transpose ? at::conv_transpose2d(xs, ws, at::Tensor(), g.stride, g.padding, g.output_padding, g.groups,
                                              kNoDilation)
                       : at::conv2d(xs, ws, at::Tensor(), g.stride, g.padding, kNoDilation, g.groups);
  });
  return y.contiguous(g.layout);
}

// dw of y = conv(x, w) for dy, by the backend's weight-gradient kernel (bilinear in dy and x: in
// three TF32 passes where run.float32_convolutions asks). Only the weight's shape and type are read
// when only its gradient is asked for: an expanded one-element tensor, left uninitialised (no fill
// launched per call in the training step).
at::Tensor weight_gradient(const at::Tensor& dy, const at::Tensor& x, const ConvGeometry& g,
                           const std::vector<int64_t>& w_sizes) {
  const at::Tensor shape_only = at::empty({}, x.options()).expand(w_sizes);
  return bilinear_in_tf32_passes(dy, x, g.tf32_split, [&](const at::Tensor& dys, const at::Tensor& xs) {
    return std::get<1>(at::convolution_backward(dys, xs, shape_only, c10::nullopt, g.stride, g.padding, kNoDilation,
                                                g.transpose, g.output_padding, g.groups, {false, true, false}));
  });
}

struct GradfixConvolution;

// dw = weight_gradient(dy, x), differentiable: <dw, ggw> is bilinear in (dy, x), so its gradient
// for dy is conv(x, ggw) and for x the input gradient of a convolution with weight ggw.
struct GradfixWeightGradient : public torch::autograd::Function<GradfixWeightGradient> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& dy, const at::Tensor& x,
                            const std::vector<int64_t>& geometry, const std::vector<int64_t>& w_sizes) {
    ctx->save_for_backward({dy, x});
    ctx->saved_data["geometry"] = geometry;
    ctx->saved_data["w_sizes"] = w_sizes;
    return weight_gradient(dy, x, unpack(geometry), w_sizes);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads);
};

// y = conv(x, w); dx is this convolution's input-gradient geometry applied to dy with w, dw a
// GradfixWeightGradient: both differentiable again the same way.
struct GradfixConvolution : public torch::autograd::Function<GradfixConvolution> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& w,
                            const std::vector<int64_t>& geometry) {
    ctx->save_for_backward({x, w});
    ctx->saved_data["geometry"] = geometry;
    return convolve(x, w, unpack(geometry));
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &x = saved[0], &w = saved[1];
    const ConvGeometry g = unpack(ctx->saved_data["geometry"].toIntVector());
    const at::Tensor dy = in_layout(grads[0], g.layout);  // ToRGB's: NCHW, from the float32 images
    at::Tensor dx, dw;
    if (ctx->needs_input_grad(0)) {
      dx = conv2d_gradfix(dy, w, input_gradient_geometry(g, x.sizes(), dy.sizes(), w.sizes()));
    }
    if (ctx->needs_input_grad(1)) dw = GradfixWeightGradient::apply(dy, x, pack(g), w.sizes().vec());
    return {dx, dw, at::Tensor()};
  }
};

variable_list GradfixWeightGradient::backward(AutogradContext* ctx, variable_list grads) {
  const auto saved = ctx->get_saved_variables();
  const at::Tensor &dy = saved[0], &x = saved[1], &ggw = grads[0];
  const ConvGeometry g = unpack(ctx->saved_data["geometry"].toIntVector());
  const std::vector<int64_t> w_sizes = ctx->saved_data["w_sizes"].toIntVector();
  at::Tensor ddy, dx;
  if (ctx->needs_input_grad(0)) ddy = conv2d_gradfix(x, ggw, g);
  if (ctx->needs_input_grad(1)) {
    dx = conv2d_gradfix(dy, ggw, input_gradient_geometry(g, x.sizes(), dy.sizes(), w_sizes));
  }
  return {ddy, dx, at::Tensor(), at::Tensor()};
}

}  // namespace

ConvGeometry input_gradient_geometry(const ConvGeometry& g, at::IntArrayRef x_sizes, at::IntArrayRef y_sizes,
                                     at::IntArrayRef w_sizes) {
  ConvGeometry back = g;
  back.transpose = !g.transpose;
  back.output_padding = {0, 0};
  if (!g.transpose) {  // the transposed convolution must give back x's size exactly
    for (int i = 0; i < 2; ++i) {
      back.output_padding[i] = x_sizes[i + 2] - (y_sizes[i + 2] - 1) * g.stride[i] + 2 * g.padding[i] - w_sizes[i + 2];
    }
  }
  return back;
}

at::Tensor conv2d_gradfix(const at::Tensor& x, const at::Tensor& w, const ConvGeometry& geometry) {
  SG2_CHECK(x.dim() == 4 && w.dim() == 4, "conv2d_gradfix: expected 4-D input and weight, got {} and {}", x.sizes(),
            w.sizes());
  return GradfixConvolution::apply(x, w, pack(geometry));
}

at::Tensor conv2d_weight_gradient(const at::Tensor& dy, const at::Tensor& x, const ConvGeometry& geometry,
                                  at::IntArrayRef w_sizes) {
  return weight_gradient(dy, x, geometry, w_sizes.vec());
}

bool uses_conv2d_gradfix(const at::Tensor& x, const at::Tensor& w, const ComputeSettings& compute) {
  return !compute.reference() && covers(compute.conv2d_gradfix, x) && at::GradMode::is_enabled() &&
         (x.requires_grad() || w.requires_grad());
}

}  // namespace sg2::ops
