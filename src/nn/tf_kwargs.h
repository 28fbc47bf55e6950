#pragma once
// The static_kwargs of TensorFlow StyleGAN2 networks (tf_network_pickle.h): our network options in
// TensorFlow's argument names and back, with stylegan2-ada-pytorch's legacy.load_network_pkl
// defaults for absent arguments. An argument neither side knows is an error naming it.

#include "sg2/core/pickle.h"
#include "sg2/nn/options.h"

#include <string>
#include <vector>

namespace sg2::nn {

pickle::Value generator_tf_kwargs(const GeneratorOptions& g, int64_t num_fp16_res);
pickle::Value discriminator_tf_kwargs(const DiscriminatorOptions& d, int64_t num_fp16_res);

// `network_state`: a Network's pickled state (its static_kwargs are read); `what` names it in errors.
// num_fp16_res receives the network's float16 blocks; notes what is ignored.
GeneratorOptions generator_options_from_tf(const pickle::Value& network_state, const std::string& what,
                                           int64_t* num_fp16_res = nullptr, std::vector<std::string>* notes = nullptr);
DiscriminatorOptions discriminator_options_from_tf(const pickle::Value& network_state, const std::string& what,
                                                   int64_t* num_fp16_res = nullptr,
                                                   std::vector<std::string>* notes = nullptr);

}  // namespace sg2::nn
