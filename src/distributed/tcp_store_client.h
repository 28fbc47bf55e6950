#pragma once
// Internal: a client of PyTorch 2.x's TCPStore server in its own wire protocol, for the store that
// torchrun's agent serves on MASTER_PORT (TORCHELASTIC_USE_AGENT_STORE=True). LibTorch 1.13's own
// client speaks an older protocol that a 2.x server closes, so the workers cannot use it there.
//
// Protocol (torch/csrc/distributed/c10d/TCPStoreBackend.hpp, checked against a 2.11 server): one
// query-type byte per request, integers in host byte order, strings and values as a uint64 length
// and the bytes. After connecting: VALIDATE (type 0, uint32 0x3C85F7CE) and PING (type 13, a
// uint32 nonce the server echoes) in one send. get(key) is WAIT for the key, then GET; a wait that
// times out is cancelled with CANCEL_WAIT.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace sg2::dist {

class TcpStoreClient {
 public:
  // Connects (retrying until `timeout`), validates and pings; errors name the address.
  TcpStoreClient(const std::string& host, int port, std::chrono::milliseconds timeout);
  ~TcpStoreClient();
  TcpStoreClient(const TcpStoreClient&) = delete;
  TcpStoreClient& operator=(const TcpStoreClient&) = delete;

  void set(const std::string& key, const std::string& value);
  // Waits until the key exists (at most the timeout), then returns its value.
  std::string get(const std::string& key);
  int64_t add(const std::string& key, int64_t delta);
  bool check(const std::vector<std::string>& keys);
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout);
  bool delete_key(const std::string& key);
  int64_t num_keys();
  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  void send_bytes(const void* data, size_t size);
  void send_query(uint8_t type);
  void send_string(const std::string& text);
  void send_keys(const std::vector<std::string>& keys);
  void receive_bytes(void* data, size_t size);
  uint8_t receive_byte();
  int64_t receive_int();
  std::string receive_string();
  bool readable_within(std::chrono::milliseconds timeout);

  std::string where_;  // "TCPStore at host:port"
  std::chrono::milliseconds timeout_;
  int socket_ = -1;
};

}  // namespace sg2::dist
