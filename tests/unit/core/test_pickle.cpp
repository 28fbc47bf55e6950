// The pickle reader and writer: Python's own pickles of plain data (protocols 2, 4 and 5, as
// CPython 3.11 writes them), round trips of what the writer writes, and errors on bad input.
#include "sg2/core/error.h"
#include "sg2/core/pickle.h"
#include "test_support.h"

namespace sg2::pickle {
namespace {

std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2) out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

// ({"a": [1, -2, 2**40, -300000, 1.5, None, True, False]}, "été", b"\x00\xff", ()) as
// pickle.dumps(value, protocol=P) writes it.
const char* kPythonProtocol2 =
    "8002287d710058010000006171015d7102284b014afeffffff8a060000000000014a206cfbff473ff80000000000004e888965735805"
    "000000c3a974c3a97103635f636f646563730a656e636f64650a7104580300000000c3bf710558060000006c6174696e3171068671"
    "07527108297471092e";
const char* kPythonProtocol5 =
    "8005953d00000000000000287d948c0161945d94284b014afeffffff8a060000000000014a206cfbff473ff80000000000004e8889"
    "65738c05c3a974c3a994430200ff942974942e";

void expect_the_python_value(const Value& v) {
  const Items& top = v.as_sequence("top");
  ASSERT_EQ(top.size(), 4u);
  const Value* a = top[0].find("a");
  ASSERT_NE(a, nullptr);
  const Items& list = a->as_sequence("a");
  ASSERT_EQ(list.size(), 8u);
  EXPECT_EQ(list[0].as_int("0"), 1);
  EXPECT_EQ(list[1].as_int("1"), -2);
  EXPECT_EQ(list[2].as_int("2"), int64_t{1} << 40);
  EXPECT_EQ(list[3].as_int("3"), -300000);
  EXPECT_EQ(list[4].as_number("4"), 1.5);
  EXPECT_TRUE(list[5].is_none());
  EXPECT_TRUE(list[6].as_bool("6"));
  EXPECT_FALSE(list[7].as_bool("7"));
  EXPECT_EQ(top[1].as_string("1"), "\xc3\xa9t\xc3\xa9");  // UTF-8
  EXPECT_EQ(top[2].as_bytes("2"), std::string("\x00\xff", 2));
  EXPECT_EQ(top[3].kind(), Value::Kind::Tuple);
  EXPECT_TRUE(top[3].as_sequence("3").empty());
}

TEST(Pickle, ReadsWhatPythonWrites) {
  expect_the_python_value(loads(from_hex(kPythonProtocol2), "p2"));  // bytes as _codecs.encode(text, 'latin1')
  expect_the_python_value(loads(from_hex(kPythonProtocol5), "p5"));  // frames, memo, short opcodes
}

TEST(Pickle, ReadsProtocol2BytesEmptyOrNot) {
  // pickle.dumps((b"", b"ab"), protocol=2): bytes() for the empty one, _codecs.encode for the other.
  const Value v = loads(from_hex("8002635f5f6275696c74696e5f5f0a62797465730a710029527101635f636f646563730a656e636f64650a"
                                 "710258020000006162710358060000006c6174696e3171048671055271068671072e"),
                        "p2");
  EXPECT_EQ(v.as_sequence("")[0].as_bytes("0"), "");
  EXPECT_EQ(v.as_sequence("")[1].as_bytes("1"), "ab");
}

TEST(Pickle, WhatItWritesReadsBackTheSame) {
  const Value original = loads(from_hex(kPythonProtocol5), "p5");
  expect_the_python_value(loads(dumps(original), "ours"));
  const Value object = Value::object(Value::global("dnnlib.tflib.network", "Network"), Value::tuple({}),
                                     Value::dict({{Value::string("version"), Value::integer(4)}}), true);
  const Value back = loads(dumps(Value::list({object, Value::real(-0.25), Value::integer(INT64_MIN)})), "ours");
  const Items& items = back.as_sequence("");
  EXPECT_EQ(items[0].qualified_name(), "dnnlib.tflib.network.Network");
  EXPECT_TRUE(items[0].as_object("").new_object);
  EXPECT_EQ(items[0].as_object("").state.find("version")->as_int(""), 4);
  EXPECT_EQ(items[1].as_number(""), -0.25);
  EXPECT_EQ(items[2].as_int(""), INT64_MIN);
}

void expect_error(const std::function<void()>& body, const std::string& part) {
  EXPECT_NE(test::error_message(body).find(part), std::string::npos) << test::error_message(body);
}

TEST(Pickle, BadInputNamesTheSourceAndTheByte) {
  const std::string data = from_hex(kPythonProtocol5);
  expect_error([&] { loads(data.substr(0, 40), "cut.pkl"); }, "'cut.pkl' at byte");
  expect_error([&] { loads(std::string("\x80\x03\x00", 3), "odd.pkl"); }, "opcode 0x00 is not supported");
  expect_error([&] { loads(std::string("\x80\x03h\x07.", 5), "memo.pkl"); }, "memo entry 7");
  expect_error([&] { loads(data, "p5").as_dict("the networks"); }, "the networks: expected a dict, found a tuple");
  // Values nested as deep as the stack is tall are refused before they could exhaust the thread's stack.
  const std::string deep = std::string("\x80\x03", 2) + std::string(20000, ']') + ".";
  expect_error([&] { loads(deep, "deep.pkl"); }, "more than 10000 values on the stack");
  // An operation that reaches below the innermost MARK, as CPython refuses it.
  expect_error([&] { loads(std::string("\x80\x03](K\x01" "a.", 7), "mark.pkl"); }, "needs a value the stack lacks");
}

}  // namespace
}  // namespace sg2::pickle
