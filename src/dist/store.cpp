// The TCPStore rendezvous of an Env launch (stylegan2_launch / torchrun): rank 0 serves, all connect.
#include "backends.h"

#include "sg2/core/error.h"

#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

namespace sg2::dist {

namespace {

class TcpStoreRendezvous final : public Rendezvous {
 public:
  explicit TcpStoreRendezvous(c10::intrusive_ptr<c10d::Store> store) : store_(std::move(store)) {}
  void set(const std::string& key, const std::string& value) override {
    store_->set(key, std::vector<uint8_t>(value.begin(), value.end()));
  }
  std::string get(const std::string& key) override {
    const std::vector<uint8_t> value = store_->get(key);
    return std::string(value.begin(), value.end());
  }
  void* c10d_store() override { return &store_; }

 private:
  c10::intrusive_ptr<c10d::Store> store_;
};

}  // namespace

std::shared_ptr<Rendezvous> connect_tcp_store(const EnvRendezvous& env, double timeout_seconds) {
  c10d::TCPStoreOptions options;
  options.port = static_cast<uint16_t>(env.master_port);
  options.isServer = env.world.rank == 0;
  options.numWorkers = static_cast<size_t>(env.world.size);
  options.waitWorkers = true;
  options.timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000));
  try {
    auto store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, options);
    return std::make_shared<TcpStoreRendezvous>(std::move(store));
  } catch (const std::exception& e) {
    SG2_FAIL("rank {} of {}: rendezvous at MASTER_ADDR={} MASTER_PORT={} failed within {:.0f} s: {}", env.world.rank,
             env.world.size, env.master_addr, env.master_port, timeout_seconds, e.what());
  }
}

}  // namespace sg2::dist
