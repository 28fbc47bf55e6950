#pragma once
// Python's pickle format, the subset that plain data and objects of unknown classes need: None,
// bool, int, float, str, bytes, tuple, list, dict, references to classes or functions (a GLOBAL),
// and objects made from them (REDUCE / NEWOBJ, then BUILD with a state). No Python code runs: an
// object of a class the reader does not know is kept as how it was made (its class, the arguments
// and the state), which the caller interprets (numpy arrays: nn/tf_network_pickle.h). The reader
// takes protocols 2 to 5 as Python writes them (memo, frames); the writer writes protocol 3.
// Format: https://docs.python.org/3/library/pickle.html and the opcode table of CPython's pickletools.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace sg2::pickle {

class Value;
using Items = std::vector<Value>;
using DictItems = std::vector<std::pair<Value, Value>>;
struct Object;

// One pickled value. Copies share a list's, dict's or object's contents, as Python references do
// (the pickle's memo refers to the same list from several places).
class Value {
 public:
  enum class Kind { None, Bool, Int, Float, String, Bytes, Tuple, List, Dict, Global, Object };

  Value() = default;  // None
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value real(double f);
  static Value string(std::string s);
  static Value bytes(std::string data);
  static Value tuple(Items items);
  static Value list(Items items);
  static Value dict(DictItems items = {});
  static Value global(const std::string& module, const std::string& name);  // a class or function
  // callable(*args), then its state set (BUILD) unless state is None. new_object: cls.__new__(cls, *args).
  static Value object(const Value& callable, Value args, Value state, bool new_object = false);
  static Value object(const Value& callable, Value args);

  Kind kind() const { return kind_; }
  bool is_none() const { return kind_ == Kind::None; }
  // Each accessor fails naming `what` (e.g. "'G.pkl': static_kwargs.resolution") and the kind found.
  bool as_bool(const std::string& what) const;
  int64_t as_int(const std::string& what) const;
  double as_number(const std::string& what) const;  // an int or a float
  const std::string& as_string(const std::string& what) const;
  const std::string& as_bytes(const std::string& what) const;
  const Items& as_sequence(const std::string& what) const;  // a tuple or a list
  Items& list_items();                                       // a list's or a tuple's items, to fill
  const DictItems& as_dict(const std::string& what) const;
  DictItems& dict_items();
  const Object& as_object(const std::string& what) const;
  Object& object_data();
  // A str-keyed dict's entry, or nullptr.
  const Value* find(const std::string& key) const;
  // "module.name" of a global; of an object, its callable's.
  std::string qualified_name() const;
  // The kind's Python name, for messages ("int", "dict", "object of numpy.dtype").
  std::string describe() const;

 private:
  Kind kind_ = Kind::None;
  bool bool_ = false;
  int64_t int_ = 0;
  double float_ = 0;
  std::string text_;  // str, bytes; a global's "module\nname"
  std::shared_ptr<Items> items_;
  std::shared_ptr<DictItems> dict_;
  std::shared_ptr<Object> object_;
};

struct Object {
  Value callable;  // a global
  Value args;      // a tuple
  Value state;     // None until BUILD
  bool new_object = false;
};

// The value a pickle's bytes hold; errors name `source` (a file name) and the byte offset.
Value loads(const std::string& data, const std::string& source);
// The pickle of `value`, protocol 3 (Python 3.0 on).
std::string dumps(const Value& value);

}  // namespace sg2::pickle
