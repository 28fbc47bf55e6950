// The TCPStore rendezvous of an Env launch. Under stylegan2_launch (and torchrun --standalone)
// rank 0 serves LibTorch's TCPStore and every rank is its client. Under torchrun's agent store
// (TORCHELASTIC_USE_AGENT_STORE=True) the agent already serves one on MASTER_PORT: every rank is a
// client through TcpStoreClient (PyTorch 2.x's protocol), under a key prefix of its own.
#include "backends.h"
#include "tcp_store_client.h"

#include "sg2/core/error.h"

#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

namespace sg2::dist {

namespace {

std::vector<uint8_t> to_bytes(const std::string& text) { return std::vector<uint8_t>(text.begin(), text.end()); }

class LibTorchStoreRendezvous final : public Rendezvous {
 public:
  explicit LibTorchStoreRendezvous(c10::intrusive_ptr<c10d::Store> store) : store_(std::move(store)) {}
  void set(const std::string& key, const std::string& value) override { store_->set(key, to_bytes(value)); }
  std::string get(const std::string& key) override {
    const std::vector<uint8_t> value = store_->get(key);
    return std::string(value.begin(), value.end());
  }
  int64_t add(const std::string& key, int64_t delta) override { return store_->add(key, delta); }
  bool check(const std::vector<std::string>& keys) override { return store_->check(keys); }
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    store_->wait(keys, timeout);
  }
  bool delete_key(const std::string& key) override { return store_->deleteKey(key); }
  int64_t num_keys() override { return store_->getNumKeys(); }
  std::chrono::milliseconds timeout() const override { return store_->getTimeout(); }

 private:
  c10::intrusive_ptr<c10d::Store> store_;
};

// Keys under "sg2/attempt_<restart count>/": apart from the agent's own and from a restarted attempt's.
class AgentStoreRendezvous final : public Rendezvous {
 public:
  AgentStoreRendezvous(std::unique_ptr<TcpStoreClient> client, std::string prefix)
      : client_(std::move(client)), prefix_(std::move(prefix)) {}
  void set(const std::string& key, const std::string& value) override { client_->set(prefix_ + key, value); }
  std::string get(const std::string& key) override { return client_->get(prefix_ + key); }
  int64_t add(const std::string& key, int64_t delta) override { return client_->add(prefix_ + key, delta); }
  bool check(const std::vector<std::string>& keys) override { return client_->check(prefixed(keys)); }
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    client_->wait(prefixed(keys), timeout);
  }
  bool delete_key(const std::string& key) override { return client_->delete_key(prefix_ + key); }
  int64_t num_keys() override { return client_->num_keys(); }
  std::chrono::milliseconds timeout() const override { return client_->timeout(); }

 private:
  std::vector<std::string> prefixed(const std::vector<std::string>& keys) const {
    std::vector<std::string> out;
    for (const std::string& key : keys) out.push_back(prefix_ + key);
    return out;
  }
  std::unique_ptr<TcpStoreClient> client_;
  std::string prefix_;
};

std::shared_ptr<Rendezvous> serve_or_join_libtorch_store(const EnvRendezvous& env, std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions options;
  options.port = static_cast<uint16_t>(env.master_port);
  options.isServer = env.world.rank == 0;
  options.numWorkers = static_cast<size_t>(env.world.size);
  options.waitWorkers = true;
  options.timeout = timeout;
  return std::make_shared<LibTorchStoreRendezvous>(c10::make_intrusive<c10d::TCPStore>(env.master_addr, options));
}

}  // namespace

std::shared_ptr<Rendezvous> connect_tcp_store(const EnvRendezvous& env, double timeout_seconds) {
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000));
  const auto start = std::chrono::steady_clock::now();
  try {
    if (!env.agent_store) return serve_or_join_libtorch_store(env, timeout);
    auto client = std::make_unique<TcpStoreClient>(env.master_addr, env.master_port, timeout);
    return std::make_shared<AgentStoreRendezvous>(std::move(client), fmt::format("sg2/attempt_{}/", env.restart_count));
  } catch (const std::exception& e) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    SG2_FAIL("rank {} of {}: rendezvous at MASTER_ADDR={} MASTER_PORT={}{} failed after {:.1f} s (timeout {:.0f} s): {}",
             env.world.rank, env.world.size, env.master_addr, env.master_port,
             env.agent_store ? " (torchrun's agent store)" : "", elapsed, timeout_seconds, e.what());
  }
}

}  // namespace sg2::dist
