#include "sg2/core/pickle.h"

#include "sg2/core/error.h"

#include <cstring>
#include <unordered_map>

namespace sg2::pickle {

// ---- Value ----

Value Value::boolean(bool b) {
  Value v;
  v.kind_ = Kind::Bool;
  v.bool_ = b;
  return v;
}

Value Value::integer(int64_t i) {
  Value v;
  v.kind_ = Kind::Int;
  v.int_ = i;
  return v;
}

Value Value::real(double f) {
  Value v;
  v.kind_ = Kind::Float;
  v.float_ = f;
  return v;
}

Value Value::string(std::string s) {
  Value v;
  v.kind_ = Kind::String;
  v.text_ = std::move(s);
  return v;
}

Value Value::bytes(std::string data) {
  Value v = string(std::move(data));
  v.kind_ = Kind::Bytes;
  return v;
}

Value Value::tuple(Items items) {
  Value v = list(std::move(items));
  v.kind_ = Kind::Tuple;
  return v;
}

Value Value::list(Items items) {
  Value v;
  v.kind_ = Kind::List;
  v.items_ = std::make_shared<Items>(std::move(items));
  return v;
}

Value Value::dict(DictItems items) {
  Value v;
  v.kind_ = Kind::Dict;
  v.dict_ = std::make_shared<DictItems>(std::move(items));
  return v;
}

Value Value::global(const std::string& module, const std::string& name) {
  Value v;
  v.kind_ = Kind::Global;
  v.text_ = module + "\n" + name;
  return v;
}

Value Value::object(const Value& callable, Value args) { return object(callable, std::move(args), Value()); }

Value Value::object(const Value& callable, Value args, Value state, bool new_object) {
  SG2_CHECK(callable.kind_ == Kind::Global, "pickle: an object is made by a class or function, not a {}",
            callable.describe());
  Value v;
  v.kind_ = Kind::Object;
  v.object_ = std::make_shared<Object>(Object{callable, std::move(args), std::move(state), new_object});
  return v;
}

namespace {

[[noreturn]] void wrong_kind(const std::string& what, const char* expected, const Value& found) {
  SG2_FAIL("{}: expected {}, found {}", what, expected, found.describe());
}

}  // namespace

bool Value::as_bool(const std::string& what) const {
  if (kind_ != Kind::Bool) wrong_kind(what, "a bool", *this);
  return bool_;
}

int64_t Value::as_int(const std::string& what) const {
  if (kind_ != Kind::Int) wrong_kind(what, "an int", *this);
  return int_;
}

double Value::as_number(const std::string& what) const {
  if (kind_ == Kind::Int) return static_cast<double>(int_);
  if (kind_ != Kind::Float) wrong_kind(what, "a number", *this);
  return float_;
}

const std::string& Value::as_string(const std::string& what) const {
  if (kind_ != Kind::String) wrong_kind(what, "a str", *this);
  return text_;
}

const std::string& Value::as_bytes(const std::string& what) const {
  if (kind_ != Kind::Bytes) wrong_kind(what, "bytes", *this);
  return text_;
}

const Items& Value::as_sequence(const std::string& what) const {
  if (kind_ != Kind::Tuple && kind_ != Kind::List) wrong_kind(what, "a tuple or list", *this);
  return *items_;
}

Items& Value::list_items() {
  SG2_CHECK(kind_ == Kind::Tuple || kind_ == Kind::List, "pickle: items added to a {}", describe());
  return *items_;
}

const DictItems& Value::as_dict(const std::string& what) const {
  if (kind_ != Kind::Dict) wrong_kind(what, "a dict", *this);
  return *dict_;
}

DictItems& Value::dict_items() {
  SG2_CHECK(kind_ == Kind::Dict, "pickle: dict items added to a {}", describe());
  return *dict_;
}

const Object& Value::as_object(const std::string& what) const {
  if (kind_ != Kind::Object) wrong_kind(what, "an object", *this);
  return *object_;
}

Object& Value::object_data() {
  SG2_CHECK(kind_ == Kind::Object, "pickle: a state set on a {}", describe());
  return *object_;
}

const Value* Value::find(const std::string& key) const {
  if (kind_ != Kind::Dict) return nullptr;
  for (auto it = dict_->rbegin(); it != dict_->rend(); ++it) {  // the last of repeated keys, as Python keeps
    if (it->first.kind_ == Kind::String && it->first.text_ == key) return &it->second;
  }
  return nullptr;
}

std::string Value::qualified_name() const {
  if (kind_ == Kind::Object) return object_->callable.qualified_name();
  if (kind_ != Kind::Global) return "";
  std::string name = text_;
  name[name.find('\n')] = '.';
  return name;
}

std::string Value::describe() const {
  switch (kind_) {
    case Kind::None: return "None";
    case Kind::Bool: return "a bool";
    case Kind::Int: return "an int";
    case Kind::Float: return "a float";
    case Kind::String: return "a str";
    case Kind::Bytes: return "bytes";
    case Kind::Tuple: return "a tuple";
    case Kind::List: return "a list";
    case Kind::Dict: return "a dict";
    case Kind::Global: return "the class or function " + qualified_name();
    case Kind::Object: return "an object made by " + qualified_name();
  }
  return "?";
}

// ---- Reader ----

namespace {

// The opcodes (CPython's Lib/pickle.py names).
enum Op : uint8_t {
  MARK = '(', STOP = '.', POP = '0', POP_MARK = '1', BININT = 'J', BININT1 = 'K', BININT2 = 'M', NONE = 'N',
  BINFLOAT = 'G', BINSTRING = 'T', SHORT_BINSTRING = 'U', BINUNICODE = 'X', BINBYTES = 'B', SHORT_BINBYTES = 'C',
  EMPTY_TUPLE = ')', TUPLE = 't', EMPTY_LIST = ']', APPEND = 'a', APPENDS = 'e', LIST = 'l', EMPTY_DICT = '}',
  DICT = 'd', SETITEM = 's', SETITEMS = 'u', GLOBAL = 'c', REDUCE = 'R', BUILD = 'b', BINPUT = 'q',
  LONG_BINPUT = 'r', BINGET = 'h', LONG_BINGET = 'j', PROTO = 0x80, NEWOBJ = 0x81, TUPLE1 = 0x85, TUPLE2 = 0x86,
  TUPLE3 = 0x87, NEWTRUE = 0x88, NEWFALSE = 0x89, LONG1 = 0x8a, SHORT_BINUNICODE = 0x8c, BINUNICODE8 = 0x8d,
  BINBYTES8 = 0x8e, BYTEARRAY8 = 0x96, NEWOBJ_EX = 0x92, STACK_GLOBAL = 0x93, MEMOIZE = 0x94, FRAME = 0x95,
};

class Reader {
 public:
  static constexpr size_t kMaxStackValues = 10000;

  Reader(const std::string& data, const std::string& source) : data_(data), source_(source) {}

  Value run() {
    while (true) {
      op_offset_ = pos_;
      const uint8_t op = byte();
      if (op == STOP) break;
      step(op);
      // Values nest at most as deep as the stack grows: bounded, so that freeing them cannot
      // exhaust the thread's stack (Python's pickler batches items by 1,000).
      check(stack_.size() <= kMaxStackValues, "more than {} values on the stack", kMaxStackValues);
    }
    check(stack_.size() == 1 && marks_.empty(), "the pickle ends with {} values on its stack", stack_.size());
    return stack_.back();
  }

 private:
  template <class... Args>
  void check(bool condition, fmt::format_string<Args...> format, Args&&... args) {
    if (!condition) {
      SG2_FAIL("'{}' at byte {}: {} (not a pickle this reader takes)", source_, op_offset_,
               fmt::format(format, std::forward<Args>(args)...));
    }
  }

  uint8_t byte() { return static_cast<uint8_t>(take(1)[0]); }
  std::string take(uint64_t n) {
    check(n <= data_.size() - pos_, "the file ends inside a value ({} more bytes expected)", n);
    std::string out = data_.substr(pos_, n);
    pos_ += n;
    return out;
  }
  uint64_t little_endian(int n) {
    const std::string b = take(n);
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(b[i]);
    return v;
  }
  std::string line() {
    const size_t end = data_.find('\n', pos_);
    check(end != std::string::npos, "a GLOBAL without its line end");
    std::string out = data_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return out;
  }

  Value pop() {
    check(stack_.size() > (marks_.empty() ? 0 : marks_.back()), "an operation needs a value the stack lacks");
    Value v = stack_.back();
    stack_.pop_back();
    return v;
  }
  Value& top() {
    check(stack_.size() > (marks_.empty() ? 0 : marks_.back()), "an operation needs a value the stack lacks");
    return stack_.back();
  }
  Items pop_to_mark() {
    check(!marks_.empty(), "no MARK before a sequence's end");
    Items items(stack_.begin() + static_cast<std::ptrdiff_t>(marks_.back()), stack_.end());
    stack_.resize(marks_.back());
    marks_.pop_back();
    return items;
  }
  void memo_put(uint64_t index) { memo_[index] = top(); }
  Value memo_get(uint64_t index) {
    const auto it = memo_.find(index);
    check(it != memo_.end(), "memo entry {} is read before it is written", index);
    return it->second;
  }

  Value long_integer(const std::string& bytes) {
    check(bytes.size() <= 8, "an integer of {} bytes (more than 64 bits)", bytes.size());
    uint64_t v = 0;
    for (size_t i = bytes.size(); i-- > 0;) v = (v << 8) | static_cast<uint8_t>(bytes[i]);
    if (!bytes.empty() && bytes.size() < 8 && (static_cast<uint8_t>(bytes.back()) & 0x80)) {
      v |= ~uint64_t{0} << (8 * bytes.size());  // sign extension
    }
    return Value::integer(static_cast<int64_t>(v));
  }

  // callable(*args): Python 2-protocol bytes (_codecs.encode(text, 'latin1')) become bytes; any
  // other call is kept as an object.
  Value call(const Value& callable, const Value& args) {
    check(callable.kind() == Value::Kind::Global, "REDUCE calls {}, not a class or function", callable.describe());
    const std::string name = callable.qualified_name();
    if ((name == "__builtin__.bytes" || name == "builtins.bytes") && args.as_sequence(source_).empty()) {
      return Value::bytes("");  // protocol 2's empty bytes
    }
    if (name == "_codecs.encode") {
      const Items& a = args.as_sequence(source_ + ": _codecs.encode's arguments");
      check(a.size() == 2 && a[1].kind() == Value::Kind::String && a[1].as_string("") == "latin1",
            "_codecs.encode with other arguments than (text, 'latin1')");
      return Value::bytes(latin1_bytes(a[0].as_string(source_ + ": _codecs.encode's text")));
    }
    return Value::object(callable, args);
  }
  static std::string latin1_bytes(const std::string& utf8) {
    std::string out;
    for (size_t i = 0; i < utf8.size(); ++i) {
      const auto c = static_cast<uint8_t>(utf8[i]);
      if (c < 0x80) {
        out.push_back(static_cast<char>(c));
      } else {  // U+0080..U+00FF: two bytes 110000xx 10xxxxxx
        SG2_CHECK(i + 1 < utf8.size() && (c & 0xfe) == 0xc2, "pickle: a latin-1 text with a character past U+00FF");
        out.push_back(static_cast<char>(((c & 0x03) << 6) | (static_cast<uint8_t>(utf8[++i]) & 0x3f)));
      }
    }
    return out;
  }

  void step(uint8_t op);

  const std::string& data_;
  const std::string& source_;
  uint64_t pos_ = 0, op_offset_ = 0;
  Items stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, Value> memo_;
};

void Reader::step(uint8_t op) {
  switch (op) {
    case PROTO: check(byte() <= 5, "a pickle protocol past 5"); break;
    case FRAME: little_endian(8); break;
    case MARK: marks_.push_back(stack_.size()); break;
    case POP: pop(); break;
    case POP_MARK: pop_to_mark(); break;
    case NONE: stack_.emplace_back(); break;
    case NEWTRUE: stack_.push_back(Value::boolean(true)); break;
    case NEWFALSE: stack_.push_back(Value::boolean(false)); break;
    case BININT: stack_.push_back(Value::integer(static_cast<int32_t>(little_endian(4)))); break;
    case BININT1: stack_.push_back(Value::integer(static_cast<int64_t>(little_endian(1)))); break;
    case BININT2: stack_.push_back(Value::integer(static_cast<int64_t>(little_endian(2)))); break;
    case LONG1: stack_.push_back(long_integer(take(byte()))); break;
    case BINFLOAT: {
      uint64_t bits = 0;
      for (const char c : take(8)) bits = (bits << 8) | static_cast<uint8_t>(c);  // big-endian
      double real = 0;
      std::memcpy(&real, &bits, sizeof real);
      stack_.push_back(Value::real(real));
      break;
    }
    case SHORT_BINUNICODE: stack_.push_back(Value::string(take(byte()))); break;
    case BINUNICODE: stack_.push_back(Value::string(take(little_endian(4)))); break;
    case BINUNICODE8: stack_.push_back(Value::string(take(little_endian(8)))); break;
    case SHORT_BINSTRING: stack_.push_back(Value::string(take(byte()))); break;  // Python 2 str
    case BINSTRING: stack_.push_back(Value::string(take(little_endian(4)))); break;
    case SHORT_BINBYTES: stack_.push_back(Value::bytes(take(byte()))); break;
    case BINBYTES: stack_.push_back(Value::bytes(take(little_endian(4)))); break;
    case BINBYTES8: case BYTEARRAY8: stack_.push_back(Value::bytes(take(little_endian(8)))); break;
    case EMPTY_TUPLE: stack_.push_back(Value::tuple({})); break;
    case TUPLE: stack_.push_back(Value::tuple(pop_to_mark())); break;
    case TUPLE1: case TUPLE2: case TUPLE3: {
      Items items(op - TUPLE1 + 1);
      for (auto it = items.rbegin(); it != items.rend(); ++it) *it = pop();
      stack_.push_back(Value::tuple(std::move(items)));
      break;
    }
    case EMPTY_LIST: stack_.push_back(Value::list({})); break;
    case LIST: stack_.push_back(Value::list(pop_to_mark())); break;
    case APPEND: { Value v = pop(); top().list_items().push_back(std::move(v)); break; }
    case APPENDS: {
      Items items = pop_to_mark();
      Items& list = top().list_items();
      list.insert(list.end(), items.begin(), items.end());
      break;
    }
    case EMPTY_DICT: stack_.push_back(Value::dict()); break;
    case DICT: case SETITEMS: {
      Items items = pop_to_mark();
      check(items.size() % 2 == 0, "a dict's items are not key, value pairs");
      if (op == DICT) stack_.push_back(Value::dict());
      for (size_t i = 0; i < items.size(); i += 2) top().dict_items().emplace_back(items[i], items[i + 1]);
      break;
    }
    case SETITEM: {
      Value value = pop(), key = pop();
      top().dict_items().emplace_back(std::move(key), std::move(value));
      break;
    }
    case GLOBAL: { std::string module = line(); stack_.push_back(Value::global(module, line())); break; }
    case STACK_GLOBAL: {
      const Value name = pop(), module = pop();
      stack_.push_back(Value::global(module.as_string(source_ + ": STACK_GLOBAL's module"),
                                     name.as_string(source_ + ": STACK_GLOBAL's name")));
      break;
    }
    case REDUCE: { const Value args = pop(), callable = pop(); stack_.push_back(call(callable, args)); break; }
    case NEWOBJ: {
      const Value args = pop(), cls = pop();
      stack_.push_back(Value::object(cls, args, Value(), true));
      break;
    }
    case NEWOBJ_EX: {
      const Value kwargs = pop(), args = pop(), cls = pop();
      check(kwargs.as_dict(source_ + ": NEWOBJ_EX's keywords").empty(), "an object made with keyword arguments");
      stack_.push_back(Value::object(cls, args, Value(), true));
      break;
    }
    case BUILD: {
      Value state = pop();
      check(top().kind() == Value::Kind::Object, "BUILD sets a state on {}", top().describe());
      top().object_data().state = std::move(state);
      break;
    }
    case BINPUT: memo_put(byte()); break;
    case LONG_BINPUT: memo_put(little_endian(4)); break;
    case MEMOIZE: memo_put(memo_.size()); break;
    case BINGET: stack_.push_back(memo_get(byte())); break;
    case LONG_BINGET: stack_.push_back(memo_get(little_endian(4))); break;
    default: check(false, "opcode 0x{:02x} is not supported (persistent ids, sets, text protocols)", op);
  }
}

// ---- Writer ----

class Writer {
 public:
  std::string run(const Value& value) {
    out_ = {char(PROTO), 3};
    write(value);
    out_.push_back(char(STOP));
    return std::move(out_);
  }

 private:
  void op(uint8_t code) { out_.push_back(static_cast<char>(code)); }
  void little_endian(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  void integer(int64_t i) {
    if (i >= 0 && i < 256) {
      op(BININT1), little_endian(static_cast<uint64_t>(i), 1);
    } else if (i >= 0 && i < 65536) {
      op(BININT2), little_endian(static_cast<uint64_t>(i), 2);
    } else if (i >= INT32_MIN && i <= INT32_MAX) {
      op(BININT), little_endian(static_cast<uint32_t>(static_cast<int32_t>(i)), 4);
    } else {
      op(LONG1), op(8), little_endian(static_cast<uint64_t>(i), 8);
    }
  }
  void sized(uint8_t code, const std::string& data) {
    SG2_CHECK(data.size() <= UINT32_MAX, "pickle: a str or bytes value of {} bytes (over 4 GiB)", data.size());
    op(code), little_endian(data.size(), 4);
    out_ += data;
  }
  void items(const Items& values) {
    for (const Value& v : values) write(v);
  }

  void write(const Value& v) {
    switch (v.kind()) {
      case Value::Kind::None: op(NONE); break;
      case Value::Kind::Bool: op(v.as_bool("") ? NEWTRUE : NEWFALSE); break;
      case Value::Kind::Int: integer(v.as_int("")); break;
      case Value::Kind::Float: {
        op(BINFLOAT);
        const double real = v.as_number("");
        uint64_t bits = 0;
        std::memcpy(&bits, &real, sizeof bits);
        for (int i = 7; i >= 0; --i) out_.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
        break;
      }
      case Value::Kind::String: sized(BINUNICODE, v.as_string("")); break;
      case Value::Kind::Bytes: sized(BINBYTES, v.as_bytes("")); break;
      case Value::Kind::Tuple: op(MARK), items(v.as_sequence("")), op(TUPLE); break;
      case Value::Kind::List: op(MARK), items(v.as_sequence("")), op(LIST); break;
      case Value::Kind::Dict:
        op(MARK);
        for (const auto& [key, value] : v.as_dict("")) write(key), write(value);
        op(DICT);
        break;
      case Value::Kind::Global: {
        std::string name = v.qualified_name();
        const size_t dot = name.rfind('.');
        out_ += "c" + name.substr(0, dot) + "\n" + name.substr(dot + 1) + "\n";
        break;
      }
      case Value::Kind::Object: {
        const Object& o = v.as_object("");
        write(o.callable), write(o.args), op(o.new_object ? NEWOBJ : REDUCE);
        if (!o.state.is_none()) write(o.state), op(BUILD);
        break;
      }
    }
  }

  std::string out_;
};

}  // namespace

Value loads(const std::string& data, const std::string& source) { return Reader(data, source).run(); }

std::string dumps(const Value& value) { return Writer().run(value); }

}  // namespace sg2::pickle
