#pragma once
// CUDA graphs of the parts of a training step (run.cuda_graphs): what a part launches is recorded
// once and then relaunched as one graph, so the host no longer spends its per-op dispatch and launch
// time on it (docs/performance.md: at a few images per GPU and round a step is bound by the host's
// launches). LibTorch's at::cuda::CUDAGraph does the capture: a side stream, a private memory pool
// (shared by the graphs of one pool), and the generators whose draws the part makes registered, so
// that each replay draws the numbers the part would have drawn when run as itself.
//
// What a graph may not do: make the host wait (the capture fails), take inputs other than the
// tensors it was captured with (copy new ones into those), or change shapes. Built without a CUDA
// LibTorch, or on another device, the constructor throws naming what is missing.

#include <ATen/ATen.h>
#include <c10/core/Stream.h>

#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace sg2 {

// A memory pool, and the stream to capture on, that the graphs given it share: they must run one
// after the other, and each graph's outputs be read before the next one runs. The allocator reuses
// a free block only for the stream it was allocated on, so the graphs of one pool are all captured
// on its one stream: the pool then needs the largest graph's memory, not the sum of them all.
struct DeviceGraphPool {
  unsigned long long first = 0, second = 0;  // LibTorch's MempoolId_t
  std::optional<c10::Stream> capture_stream;
};
DeviceGraphPool new_device_graph_pool(const at::Device& device);  // a CUDA device

class DeviceGraph {
 public:
  explicit DeviceGraph(const at::Device& device);  // a CUDA device
  ~DeviceGraph();
  DeviceGraph(const DeviceGraph&) = delete;
  DeviceGraph& operator=(const DeviceGraph&) = delete;

  // Records what `part` launches on the device into the graph (nothing runs: replay() runs it).
  // Waits for the device first and hands the allocator's cached blocks back, as torch.cuda.graph
  // does. `generators`: the CUDA generators `part` draws from besides the device's default one
  // (registered always). Where `part` or the capture fails, the error is thrown on and the process
  // should end: LibTorch's allocator and the generators may be left as in a capture (their draws
  // on the device then throw), so the graph is kept, never freed, for the allocator to refer to.
  void capture(const std::function<void()>& part, const std::vector<at::Generator>& generators,
               const DeviceGraphPool& pool);
  // Runs the captured work on the current stream.
  void replay();
  bool captured() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sg2
