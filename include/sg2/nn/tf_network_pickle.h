#pragma once
// Network pickles in the form of NVIDIA's TensorFlow StyleGAN2: a pickled tuple (G, D, Gs) of
// dnnlib.tflib.network.Network objects, each a state dict {version, name, static_kwargs (the
// constructor arguments in TensorFlow names), components (G's "mapping" and "synthesis"),
// build_module_src, build_func_name, variables: [(TensorFlow name, numpy array), ...]}.
//
// stylegan2-ada-pytorch's legacy.load_network_pkl reads this form without TensorFlow (it only
// needs static_kwargs and the variables), converts it to its own networks, and so does everything
// built on it (generate.py, projector.py, style_mixing.py, calc_metrics.py, stylegan3's
// visualizer). The names and layouts here are the inverse of that conversion: dense weights
// [in, out], convolutions [kh, kw, in, out] (the generator's upsampling convolution and skip
// flipped in kh and kw), modulation biases less 1, the constant and the noise inputs with leading
// batch dimensions. TensorFlow itself cannot rebuild a network from such a pickle (the graph code
// it would run is not in it). Reading takes the pickles of the original TensorFlow code as well
// (protocol 2 to 5, numpy 1 or 2), with legacy.load_network_pkl's defaults for absent arguments.

#include "sg2/nn/options.h"
#include "sg2/nn/state_dict.h"

#include <functional>
#include <string>
#include <vector>

namespace sg2::nn {

// G, D and G_ema in our names: "G.<name>", "D.<name>", "G_ema.<name>" (state-dict keys; the
// resample filters are constants of the options, no variables: written from nothing, read from the
// options).
struct PickledNetworks {
  GeneratorOptions G;
  DiscriminatorOptions D;
  TensorMap tensors;
  int64_t num_fp16_res = 0;           // the blocks the reference runs in float16 (G's and D's)
  std::vector<std::string> notes;     // what reading ignored (TensorFlow variables with no tensor here)
};

// Called after each variable written or read: (variables done, variables in all).
using VariableProgress = std::function<void(int64_t done, int64_t total)>;

// The pickle's bytes. Every G., D. and G_ema. tensor of `networks` is written.
std::string tf_network_pickle(const PickledNetworks& networks, const VariableProgress& progress = {});
// The networks a pickle holds; errors name `source` and the argument or variable.
PickledNetworks read_tf_network_pickle(const std::string& data, const std::string& source,
                                       const VariableProgress& progress = {});

// How one of our tensors is stored in the pickle (exposed for the tests).
enum class TfLayout { Same, Matrix, Conv, FlippedConv, Const, Noise, ModulationBias };
struct TfVariable {
  std::string path;  // as legacy.load_network_pkl collects them: "mapping/Dense0/weight"
  TfLayout layout = TfLayout::Same;
};
// `name` is a generator's (is_generator) or a discriminator's state-dict key; false for keys with
// no variable (resample filters); an error for keys it does not know.
bool tf_variable_of(const std::string& name, bool is_generator, TfVariable* variable);
at::Tensor to_tf_layout(const at::Tensor& tensor, TfLayout layout);
at::Tensor from_tf_layout(const at::Tensor& tensor, TfLayout layout);

}  // namespace sg2::nn
