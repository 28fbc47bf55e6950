#pragma once
// TensorBoard event files: <run_dir>/events.out.tfevents.<unix time>.<host>, TFRecord-framed Event
// protobufs (src/train/event.proto), the first one carrying file_version "brain.Event:2". Records are
// appended and flushed as they come, so TensorBoard shows a run while it trains. Rank 0 writes them.

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace sg2::train {

class EventWriter {
 public:
  explicit EventWriter(const std::string& run_dir);

  void add_scalar(const std::string& tag, double value, int64_t step);
  // png: an encoded PNG of height x width with `channels` (1 or 3) channels.
  void add_png(const std::string& tag, const std::vector<uint8_t>& png, int64_t height, int64_t width,
               int64_t channels, int64_t step);
  // A resumed run's start: TensorBoard drops the values of steps >= `step` that earlier files hold.
  void add_session_start(int64_t step);
  void flush();
  const std::string& path() const { return path_; }

 private:
  void write_event(const std::string& serialized_event);

  std::string path_;
  std::ofstream out_;
};

}  // namespace sg2::train
