#pragma once
// A process-wide setting held at a value while the scope lives, the value before it back after
// (cuDNN's TF32, the TF32 split's devices, upfirdn2d's kernel policy): get and set are the
// setting's own accessors.

namespace sg2 {

template <typename T>
class ScopedSetting {
 public:
  ScopedSetting(T (*get)(), void (*set)(T), T value) : set_(set), before_(get()) { set_(value); }
  ~ScopedSetting() { set_(before_); }
  ScopedSetting(const ScopedSetting&) = delete;
  ScopedSetting& operator=(const ScopedSetting&) = delete;

 private:
  void (*set_)(T);
  T before_;
};

}  // namespace sg2
