#include "sg2/train/event_writer.h"

#include "event.pb.h"
#include "sg2/core/error.h"
#include "sg2/core/system.h"
#include "sg2/data/tfrecord.h"
#include "sg2/distributed/world.h"

namespace sg2::train {

namespace {

tensorboard::Event event_at(int64_t step) {
  tensorboard::Event event;
  event.set_wall_time(unix_time());
  event.set_step(step);
  return event;
}

}  // namespace

EventWriter::EventWriter(const std::string& run_dir)
    : path_(fmt::format("{}/events.out.tfevents.{}.{}", run_dir, static_cast<int64_t>(unix_time()), hostname())),
      out_(path_, std::ios::binary | std::ios::app) {
  SG2_CHECK(out_.good(), "cannot open the event file '{}'", path_);
  tensorboard::Event version = event_at(0);
  version.set_file_version("brain.Event:2");
  write_event(version.SerializeAsString());
  flush();
}

void EventWriter::write_event(const std::string& serialized_event) {
  std::vector<uint8_t> record;
  data::append_record(record, serialized_event.data(), serialized_event.size());
  out_.write(reinterpret_cast<const char*>(record.data()), static_cast<std::streamsize>(record.size()));
  SG2_CHECK(out_.good(), "cannot write to the event file '{}'", path_);
}

void EventWriter::add_scalar(const std::string& tag, double value, int64_t step) {
  tensorboard::Event event = event_at(step);
  tensorboard::SummaryValue* entry = event.mutable_summary()->add_value();
  entry->set_tag(tag);
  entry->set_simple_value(static_cast<float>(value));
  write_event(event.SerializeAsString());
}

void EventWriter::add_png(const std::string& tag, const std::vector<uint8_t>& png, int64_t height, int64_t width,
                          int64_t channels, int64_t step) {
  tensorboard::Event event = event_at(step);
  tensorboard::SummaryValue* entry = event.mutable_summary()->add_value();
  entry->set_tag(tag);
  tensorboard::SummaryImage* image = entry->mutable_image();
  image->set_height(static_cast<int32_t>(height));
  image->set_width(static_cast<int32_t>(width));
  image->set_colorspace(static_cast<int32_t>(channels));
  image->set_encoded_image_string(png.data(), png.size());
  write_event(event.SerializeAsString());
}

void EventWriter::add_session_start(int64_t step) {
  tensorboard::Event event = event_at(step);
  event.mutable_session_log()->set_status(tensorboard::SessionLog::START);
  write_event(event.SerializeAsString());
}

void EventWriter::flush() {
  out_.flush();
  SG2_CHECK(out_.good(), "cannot flush the event file '{}'", path_);
}

}  // namespace sg2::train
