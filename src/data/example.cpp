#include "sg2/data/example.h"

#include "sg2/core/error.h"
#include "example.pb.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <cstring>
#include <limits>

namespace sg2::data {

namespace {

const char* kind_name(const tfexample::Feature& feature) {
  switch (feature.kind_case()) {
    case tfexample::Feature::kBytesList: return "bytes_list";
    case tfexample::Feature::kFloatList: return "float_list";
    case tfexample::Feature::kInt64List: return "int64_list";
    default: return "no value";
  }
}

const tfexample::Feature& require_feature(const tfexample::Example& example, const std::string& key,
                                          tfexample::Feature::KindCase kind, const char* kind_label,
                                          const std::string& where) {
  const auto& features = example.features().feature();
  const auto it = features.find(key);
  SG2_CHECK(it != features.end(), "{}: the Example has no feature '{}' (a StyleGAN2 record has 'shape' and 'data')",
            where, key);
  SG2_CHECK(it->second.kind_case() == kind, "{}: feature '{}' is a {}, expected a {}", where, key,
            kind_name(it->second), kind_label);
  return it->second;
}

}  // namespace

ImageRecord decode_image_example(const uint8_t* payload, uint64_t size, const std::string& where) {
  SG2_CHECK(size <= uint64_t(std::numeric_limits<int>::max()), "{}: payload of {} bytes is too large", where, size);
  tfexample::Example example;
  SG2_CHECK(example.ParseFromArray(payload, static_cast<int>(size)),
            "{}: the payload ({} bytes) is not a tf.train.Example protobuf", where, size);
  const auto& shape = require_feature(example, "shape", tfexample::Feature::kInt64List, "int64_list", where).int64_list();
  SG2_CHECK(shape.value_size() == 3, "{}: feature 'shape' has {} values, expected 3 ([C, H, W])", where,
            shape.value_size());
  ImageRecord image;
  image.channels = shape.value(0);
  image.height = shape.value(1);
  image.width = shape.value(2);
  SG2_CHECK(image.channels >= 1 && image.channels <= kMaxImageChannels && image.height >= 1 &&
                image.height <= kMaxImageSide && image.width >= 1 && image.width <= kMaxImageSide,
            "{}: impossible image shape [{}, {}, {}] (expected 1-{} channels, sides 1-{})", where, image.channels,
            image.height, image.width, kMaxImageChannels, kMaxImageSide);
  const auto& data = require_feature(example, "data", tfexample::Feature::kBytesList, "bytes_list", where).bytes_list();
  SG2_CHECK(data.value_size() == 1, "{}: feature 'data' has {} elements, expected 1", where, data.value_size());
  const std::string& bytes = data.value(0);
  const auto expected = static_cast<uint64_t>(image.channels * image.height * image.width);
  SG2_CHECK(bytes.size() == expected, "{}: feature 'data' has {} bytes but shape [{}, {}, {}] needs {}", where,
            bytes.size(), image.channels, image.height, image.width, expected);
  image.pixels.resize(bytes.size());
  std::memcpy(image.pixels.data(), bytes.data(), bytes.size());
  return image;
}

std::string encode_image_example(const uint8_t* pixels, int64_t channels, int64_t height, int64_t width) {
  tfexample::Example example;
  auto& features = *example.mutable_features()->mutable_feature();
  auto* shape = features["shape"].mutable_int64_list();
  shape->add_value(channels);
  shape->add_value(height);
  shape->add_value(width);
  features["data"].mutable_bytes_list()->add_value(pixels, static_cast<size_t>(channels * height * width));
  // Deterministic: the feature map in key order, so that the same image is always the same bytes.
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    SG2_CHECK(example.SerializeToCodedStream(&coded), "serialising an Example of shape [{}, {}, {}] failed", channels,
              height, width);
  }
  return out;
}

}  // namespace sg2::data
