#include "tun_device.h"

#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace sg2::tools {

std::runtime_error system_error(const std::string& what) {
  return std::runtime_error(what + ": " + std::strerror(errno));
}

namespace {

int open_or_throw(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) throw system_error("cannot open '" + path + "'");
  return fd;
}

// Runs `body` with this thread in network namespace `netns`, then returns to the original one.
template <typename Body>
void in_network_namespace(const std::string& netns, Body body) {
  const int original = open_or_throw("/proc/self/ns/net", O_RDONLY);
  const int target = ::open(("/var/run/netns/" + netns).c_str(), O_RDONLY | O_CLOEXEC);
  if (target < 0) {
    const std::runtime_error error =
        system_error("no network namespace '" + netns + "' (/var/run/netns/" + netns + ", made by `ip netns add`)");
    ::close(original);
    throw error;
  }
  if (::setns(target, CLONE_NEWNET) != 0) {
    const std::runtime_error error = system_error("cannot enter network namespace '" + netns + "' (needs root)");
    ::close(target);
    ::close(original);
    throw error;
  }
  ::close(target);
  const auto leave = [&] {
    const bool left = ::setns(original, CLONE_NEWNET) == 0;
    ::close(original);
    if (!left) throw system_error("cannot return from network namespace '" + netns + "'");
  };
  try {
    body();
  } catch (...) {
    leave();
    throw;
  }
  leave();
}

}  // namespace

TunDevice::TunDevice(const std::string& netns, const std::string& name) : netns_(netns) {
  if (name.empty() || name.size() >= IFNAMSIZ) {
    throw std::invalid_argument("interface name '" + name + "' must have 1 to " + std::to_string(IFNAMSIZ - 1) +
                                " characters");
  }
  in_network_namespace(netns, [&] {
    fd_ = open_or_throw("/dev/net/tun", O_RDWR | O_NONBLOCK);
    ifreq request{};
    request.ifr_flags = IFF_TUN | IFF_NO_PI | IFF_VNET_HDR;
    std::strncpy(request.ifr_name, name.c_str(), IFNAMSIZ - 1);
    const int header_bytes = static_cast<int>(vnet_header_bytes());
    const unsigned offloads = TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6;
    if (::ioctl(fd_, TUNSETIFF, &request) != 0 || ::ioctl(fd_, TUNSETVNETHDRSZ, &header_bytes) != 0 ||
        ::ioctl(fd_, TUNSETOFFLOAD, offloads) != 0) {
      const std::runtime_error error = system_error("cannot create TUN device '" + name + "' in '" + netns + "'");
      ::close(fd_);
      fd_ = -1;
      throw error;
    }
  });
}

// struct virtio_net_hdr (linux/virtio_net.h, which C++ cannot include: a member is named `class`):
// flags, gso_type (1 byte each), hdr_len, gso_size, csum_start, csum_offset (2 bytes each).
std::size_t TunDevice::vnet_header_bytes() { return 10; }

TunDevice::~TunDevice() {
  if (fd_ >= 0) ::close(fd_);
}

TunDevice::TunDevice(TunDevice&& other) noexcept : netns_(std::move(other.netns_)), fd_(std::exchange(other.fd_, -1)) {}

}  // namespace sg2::tools
