#include "sg2/device/device_graph.h"

#include "sg2/core/error.h"
#include "sg2/device/cuda_device.h"

#if SG2_TORCH_CUDA
#include <ATen/core/CachingHostAllocator.h>
#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace sg2 {

#if SG2_TORCH_CUDA

DeviceGraphPool new_device_graph_pool(const at::Device& device) {
  SG2_CHECK(device.is_cuda(), "a CUDA graph pool needs a CUDA device, not {}", device.str());
  const c10::DeviceIndex index = device.has_index() ? device.index() : c10::cuda::current_device();
  const at::cuda::MempoolId_t id = at::cuda::graph_pool_handle();
  return {id.first, id.second, c10::Stream(c10::cuda::getStreamFromPool(false, index))};
}

struct DeviceGraph::Impl {
  c10::DeviceIndex device;
  at::cuda::CUDAGraph graph;
  bool captured = false;
};

DeviceGraph::DeviceGraph(const at::Device& device) {
  SG2_CHECK(device.is_cuda(), "a CUDA graph needs a CUDA device, not {} (run.cuda_graphs is for CUDA)", device.str());
  impl_ = std::make_unique<Impl>();
  impl_->device = device.has_index() ? device.index() : c10::cuda::current_device();
}

namespace {

// `waiting` runs what it has queued after what `done` has queued so far.
void order_after(const c10::cuda::CUDAStream& waiting, const c10::cuda::CUDAStream& done) {
  cudaEvent_t event = nullptr;
  C10_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  C10_CUDA_CHECK(cudaEventRecord(event, done.stream()));
  C10_CUDA_CHECK(cudaStreamWaitEvent(waiting.stream(), event, 0));
  C10_CUDA_CHECK(cudaEventDestroy(event));  // freed once the wait has passed it
}

// After `part` or the capture failed: the capture ended as far as it can be, the allocator no
// longer routing allocations to the pool (capture_end does that only where cudaStreamEndCapture
// succeeded, and the generators' capture ends only there too).
void end_failed_capture(at::cuda::CUDAGraph& graph, c10::DeviceIndex device, const at::cuda::MempoolId_t& pool) {
  try {
    graph.capture_end();
    return;
  } catch (...) {
  }
  try {
    c10::cuda::CUDACachingAllocator::endAllocateToPool(device, pool);
  } catch (...) {  // capture_end got that far
  }
  try {
    at::getHostAllocator(at::kCUDA)->end_allocate_to_pool(pool);
  } catch (...) {
  }
}

}  // namespace

void DeviceGraph::capture(const std::function<void()>& part, const std::vector<at::Generator>& generators,
                          const DeviceGraphPool& pool) {
  SG2_CHECK(!impl_->captured, "this CUDA graph holds a capture already");
  SG2_CHECK(pool.capture_stream.has_value(), "a CUDA graph pool without its stream (new_device_graph_pool)");
  const c10::cuda::CUDAGuard on_device(impl_->device);
  {
    const HostSyncAllowed once;  // nothing in flight while the allocator changes pools
    c10::cuda::device_synchronize();
    release_cached_device_memory(at::Device(at::kCUDA, impl_->device));
  }
  const c10::cuda::CUDAStream ambient = c10::cuda::getCurrentCUDAStream(impl_->device);
  const c10::cuda::CUDAStream side(*pool.capture_stream);
  const at::cuda::MempoolId_t pool_id{pool.first, pool.second};
  {
    // Captures must run on a side stream; replays may run on any. Thread-local mode: the loader's
    // and the communicator's threads go on making their own CUDA calls meanwhile.
    const c10::cuda::CUDAStreamGuard on_side_stream(side);
    impl_->graph.register_generator_state(at::cuda::detail::getDefaultCUDAGenerator(impl_->device));
    for (const at::Generator& generator : generators) impl_->graph.register_generator_state(generator);
    impl_->graph.capture_begin(pool_id, cudaStreamCaptureModeThreadLocal);
    try {
      part();
      impl_->graph.capture_end();
    } catch (...) {
      end_failed_capture(impl_->graph, impl_->device, pool_id);
      (void)impl_.release();  // kept: the allocator and the generators may still refer to it
      throw;
    }
  }
  // capture_begin set the generators' seed and offset on the side stream; replays set them on theirs.
  order_after(ambient, side);
  impl_->captured = true;
}

void DeviceGraph::replay() {
  SG2_CHECK(captured(), "replay of a CUDA graph that captured nothing");
  impl_->graph.replay();
}

#else

DeviceGraphPool new_device_graph_pool(const at::Device& device) {
  SG2_FAIL("a CUDA graph pool on {} needs a LibTorch built with CUDA", device.str());
}

struct DeviceGraph::Impl {
  bool captured = false;
};

DeviceGraph::DeviceGraph(const at::Device& device) {
  SG2_FAIL("a CUDA graph on {} needs a LibTorch built with CUDA; this one has none (run.cuda_graphs false runs the "
           "step without graphs)",
           device.str());
}

void DeviceGraph::capture(const std::function<void()>&, const std::vector<at::Generator>&, const DeviceGraphPool&) {
  SG2_FAIL("CUDA graphs need a LibTorch built with CUDA");
}

void DeviceGraph::replay() { SG2_FAIL("CUDA graphs need a LibTorch built with CUDA"); }

#endif

DeviceGraph::~DeviceGraph() = default;

bool DeviceGraph::captured() const { return impl_ != nullptr && impl_->captured; }

}  // namespace sg2
