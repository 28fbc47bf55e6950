#pragma once
// A TUN device (IP packets, no link-layer header) created inside a named network namespace
// (/var/run/netns/NAME, as `ip netns add` makes them). It lives while the returned descriptor is
// open; the caller configures its address, MTU and state with `ip -n NAME ...`. Every packet read
// or written starts with a virtio-net header (vnet_header_bytes()), and the device takes the
// checksum and segmentation offloads, as a virtual machine's NIC does: TCP hands it segments of up
// to 64 KiB whose checksums are not computed, so forwarding them costs little CPU whatever the MTU.
#include <cstddef>
#include <stdexcept>
#include <string>

namespace sg2::tools {

// "WHAT: <strerror(errno)>", for a failed system call.
std::runtime_error system_error(const std::string& what);

class TunDevice {
 public:
  TunDevice(const std::string& netns, const std::string& name);
  ~TunDevice();
  TunDevice(const TunDevice&) = delete;
  TunDevice& operator=(const TunDevice&) = delete;
  TunDevice(TunDevice&& other) noexcept;

  int fd() const { return fd_; }
  static std::size_t vnet_header_bytes();
  const std::string& netns() const { return netns_; }

 private:
  std::string netns_;
  int fd_ = -1;  // non-blocking
};

}  // namespace sg2::tools
