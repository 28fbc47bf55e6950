#include "tcp_store_client.h"

#include "sg2/core/error.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace sg2::dist {

namespace {

// PyTorch 2.x QueryType, CheckResponseType and WaitResponseType values.
enum Query : uint8_t { kValidate = 0, kSet = 1, kGet = 3, kAdd = 4, kCheck = 5, kWait = 6, kNumKeys = 7,
                       kDeleteKey = 8, kCancelWait = 12, kPing = 13 };
constexpr uint8_t kCheckReady = 0;
constexpr uint8_t kStopWaiting = 0;
constexpr uint8_t kWaitCanceled = 1;
constexpr uint32_t kValidationMagic = 0x3C85F7CE;

// A connected TCP socket to host:port, or -1.
int connect_once(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return -1;
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd >= 0 && ::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd >= 0) {
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  return fd;
}

}  // namespace

TcpStoreClient::TcpStoreClient(const std::string& host, int port, std::chrono::milliseconds timeout)
    : where_(fmt::format("TCPStore at {}:{}", host, port)), timeout_(timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while ((socket_ = connect_once(host, port)) < 0) {
    SG2_CHECK(std::chrono::steady_clock::now() < deadline, "cannot connect to the {} within {} ms: {}", where_,
              timeout.count(), std::strerror(errno));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  // VALIDATE and PING in one send: the server closes a connection whose validation arrives split.
  const uint32_t nonce = static_cast<uint32_t>(getpid());
  uint8_t hello[10];
  hello[0] = kValidate;
  std::memcpy(hello + 1, &kValidationMagic, 4);
  hello[5] = kPing;
  std::memcpy(hello + 6, &nonce, 4);
  send_bytes(hello, sizeof(hello));
  SG2_CHECK(readable_within(timeout), "the {} did not answer the ping within {} ms", where_, timeout.count());
  uint32_t echo = 0;
  receive_bytes(&echo, sizeof(echo));
  SG2_CHECK(echo == nonce, "the {} answered the ping with {} instead of {}: not a PyTorch 2.x TCPStore", where_,
            echo, nonce);
}

TcpStoreClient::~TcpStoreClient() {
  if (socket_ >= 0) close(socket_);
}

void TcpStoreClient::set(const std::string& key, const std::string& value) {
  send_query(kSet);
  send_string(key);
  send_string(value);
}

std::string TcpStoreClient::get(const std::string& key) {
  wait({key}, timeout_);
  send_query(kGet);
  send_string(key);
  return receive_string();
}

int64_t TcpStoreClient::add(const std::string& key, int64_t delta) {
  send_query(kAdd);
  send_string(key);
  send_bytes(&delta, sizeof(delta));
  return receive_int();
}

bool TcpStoreClient::check(const std::vector<std::string>& keys) {
  send_query(kCheck);
  send_keys(keys);
  return receive_byte() == kCheckReady;
}

void TcpStoreClient::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  send_query(kWait);
  send_keys(keys);
  if (readable_within(timeout)) {
    const uint8_t answer = receive_byte();
    SG2_CHECK(answer == kStopWaiting, "the {} answered a wait with {}", where_, answer);
    return;
  }
  send_query(kCancelWait);
  uint8_t answer = receive_byte();
  if (answer == kStopWaiting) answer = receive_byte();  // the keys arrived as the wait was cancelled
  SG2_CHECK(answer == kWaitCanceled, "the {} answered a cancelled wait with {}", where_, answer);
  SG2_FAIL("waited {} ms for '{}' in the {}: a rank did not arrive (dist.timeout)", timeout.count(),
           keys.empty() ? std::string() : keys.front(), where_);
}

bool TcpStoreClient::delete_key(const std::string& key) {
  send_query(kDeleteKey);
  send_string(key);
  return receive_int() != 0;
}

int64_t TcpStoreClient::num_keys() {
  send_query(kNumKeys);
  return receive_int();
}

void TcpStoreClient::send_bytes(const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (size > 0) {
    const ssize_t sent = ::send(socket_, p, size, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    SG2_CHECK(sent > 0, "sending to the {} failed: {}", where_, std::strerror(errno));
    p += sent;
    size -= static_cast<size_t>(sent);
  }
}

void TcpStoreClient::send_query(uint8_t type) { send_bytes(&type, 1); }

void TcpStoreClient::send_string(const std::string& text) {
  const uint64_t length = text.size();
  send_bytes(&length, sizeof(length));
  send_bytes(text.data(), text.size());
}

void TcpStoreClient::send_keys(const std::vector<std::string>& keys) {
  const uint64_t count = keys.size();
  send_bytes(&count, sizeof(count));
  for (const std::string& key : keys) send_string(key);
}

void TcpStoreClient::receive_bytes(void* data, size_t size) {
  auto* p = static_cast<uint8_t*>(data);
  while (size > 0) {
    const ssize_t got = ::recv(socket_, p, size, 0);
    if (got < 0 && errno == EINTR) continue;
    SG2_CHECK(got > 0, "the {} closed the connection{}", where_, got < 0 ? fmt::format(": {}", std::strerror(errno)) : "");
    p += got;
    size -= static_cast<size_t>(got);
  }
}

uint8_t TcpStoreClient::receive_byte() {
  uint8_t value = 0;
  receive_bytes(&value, 1);
  return value;
}

int64_t TcpStoreClient::receive_int() {
  int64_t value = 0;
  receive_bytes(&value, sizeof(value));
  return value;
}

std::string TcpStoreClient::receive_string() {
  uint64_t length = 0;
  receive_bytes(&length, sizeof(length));
  SG2_CHECK(length <= (uint64_t(1) << 30), "the {} sent a value of {} bytes", where_, length);
  std::string text(length, '\0');
  receive_bytes(text.data(), length);
  return text;
}

bool TcpStoreClient::readable_within(std::chrono::milliseconds timeout) {
  pollfd watched{socket_, POLLIN, 0};
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    const int ready = ::poll(&watched, 1, static_cast<int>(std::max<int64_t>(left.count(), 0)));
    if (ready > 0) return true;
    if (ready == 0) return false;
    SG2_CHECK(errno == EINTR, "waiting for the {} failed: {}", where_, std::strerror(errno));
  }
}

}  // namespace sg2::dist
