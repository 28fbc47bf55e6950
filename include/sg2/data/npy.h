#pragma once
// NumPy .npy files of float32 2-D arrays, as the original StyleGAN2 stores labels
// (`<name>-rxx.labels`: float32 [N, label_size]). Versions 1.0-3.0 of the format are read
// ('<f4', C order); version 1.0 is written.

#include <cstdint>
#include <string>
#include <vector>

namespace sg2::data {

struct FloatMatrix {
  int64_t rows = 0, cols = 0;
  std::vector<float> values;  // row-major [rows, cols]
};

// A 2-D float32 .npy; `what` names its rows and columns in errors ("labels [N, label_size]").
FloatMatrix read_npy_float32(const std::string& path, const std::string& what = "labels [N, label_size]");
void write_npy_float32(const std::string& path, const FloatMatrix& matrix);

}  // namespace sg2::data
