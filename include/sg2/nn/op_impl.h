#pragma once
// Which implementation of an op runs (the reference's `impl` argument of torch_utils/ops, 'cuda' or
// 'ref'). Every op that has a hand-written kernel takes an Impl as its last argument:
// - Fast: the kernel where one exists for the tensor's device and type (kernels.h), else the
//   reference;
// - Reference: the plain composition of LibTorch ops that defines what the op computes.
// Left out, it is the calling thread's default: Fast, or what the innermost ImplScope on this thread
// says. Composite ops (conv2d_resample, modulated_conv2d) pass theirs down, so one scope runs a whole
// network on the reference ops (parity checks, the bench's --reference-ops) without touching other
// threads. Only the forward pass chooses: each backward is that of the implementation that ran.

namespace sg2::nn::ops {

enum class Impl { Fast, Reference };

const char* to_string(Impl impl);

// This thread's default: Fast outside any ImplScope.
Impl default_impl();

// Makes `impl` this thread's default for the scope's lifetime; the outer default comes back after.
class ImplScope {
 public:
  explicit ImplScope(Impl impl);
  ~ImplScope();
  ImplScope(const ImplScope&) = delete;
  ImplScope& operator=(const ImplScope&) = delete;

 private:
  Impl outer_;
};

}  // namespace sg2::nn::ops
