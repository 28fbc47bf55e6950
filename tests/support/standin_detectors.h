#pragma once
// Small random-weight TorchScript stand-ins with the calling conventions of NVIDIA's metric files:
//   inception-2015-12-05.pt: forward(img, return_features=False, use_fp16=False, no_output_bias=False)
//     -> features [N, 64] (return_features), else softmax class probabilities [N, 16] (without the
//     output bias where no_output_bias)
//   vgg16.pt: forward(img, resize_images=True, return_features=False, return_lpips=False)
//     -> features [N, 256]; LPIPS features (unit channel vectors per position, scaled by
//     1 / sqrt(positions)) where return_lpips
// Both take float NCHW images in [0, 255] of any size. Header-only: the unit tests, the MPI tests and
// tests/tools/standin_detectors share it.

#include <ATen/ATen.h>
#include <torch/script.h>

#include <string>

namespace sg2::test {

inline void write_standin_inception(const std::string& path, uint64_t seed) {
  at::Generator rng = at::detail::createCPUGenerator(seed);
  torch::jit::Module module("StandinInception");
  module.register_buffer("w1", at::randn({64, 3 * 8 * 8}, rng) * 0.2);
  module.register_buffer("b1", at::randn({64}, rng) * 0.1);
  module.register_buffer("w2", at::randn({16, 64}, rng) * 0.5);
  module.register_buffer("b2", at::randn({16}, rng));
  module.define(R"(
def forward(self, img, return_features: bool = False, use_fp16: bool = False, no_output_bias: bool = False):
    x = torch.adaptive_avg_pool2d(img / 255.0, [8, 8]).flatten(1)
    f = torch.relu(torch.linear(x, self.w1, self.b1))
    if return_features:
        return f
    if no_output_bias:
        return torch.softmax(torch.linear(f, self.w2), 1)
    return torch.softmax(torch.linear(f, self.w2, self.b2), 1)
)");
  module.save(path);
}

inline void write_standin_vgg16(const std::string& path, uint64_t seed) {
  at::Generator rng = at::detail::createCPUGenerator(seed);
  torch::jit::Module module("StandinVgg16");
  module.register_buffer("weight", at::randn({16, 3, 3, 3}, rng) * 0.3);
  module.register_buffer("bias", at::randn({16}, rng) * 0.1);
  module.define(R"(
def forward(self, img, resize_images: bool = True, return_features: bool = False, return_lpips: bool = False):
    x = torch.adaptive_avg_pool2d(img / 127.5 - 1.0, [4, 4])
    f = torch.relu(torch.conv2d(x, self.weight, self.bias, [1, 1], [1, 1]))
    if return_lpips:
        f = f / (f.square().sum(1, keepdim=True).sqrt() + 1e-10)
        return f.flatten(1) / 4.0
    return f.flatten(1)
)");
  module.save(path);
}

}  // namespace sg2::test
