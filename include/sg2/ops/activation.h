#pragma once
// The activations of the fused bias + activation op (reference: torch_utils/ops/bias_act.py), in a
// header of their own so the network options can name them without LibTorch's tensor headers.

#include <string>

namespace sg2::ops {

enum class Activation { Linear, Relu, LRelu };
Activation parse_activation(const std::string& name);
std::string to_string(Activation act);
double default_gain(Activation act);   // sqrt(2) for relu/lrelu, else 1
double default_alpha(Activation act);  // 0.2 for lrelu, else 0

}  // namespace sg2::ops
