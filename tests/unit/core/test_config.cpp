// The config schema: one definition gives YAML reading, writing, CLI flags and errors naming keys.
#include "sg2/core/config_cli.h"
#include "sg2/core/config_json.h"
#include "sg2/core/config_schema.h"
#include "test_support.h"

#include <fstream>

namespace sg2::config {
namespace {

struct Sample {
  struct Net {
    int64_t width = 64;
    std::string kind = "skip";
  } net;
  double rate = 0.002;
  bool flag = false;
  std::vector<std::string> items{"a"};
  std::string desc;
  double clamp = 128;  // null: -1
  int ticks = 4;
};

const Sample kDefaults;

const Schema<Sample>& schema() {
  static const Schema<Sample> s = [] {
    Schema<Sample> out;
    out.add("net.width", [](Sample& c) -> auto& { return c.net.width; }, "Width");
    out.add("net.kind", [](Sample& c) -> auto& { return c.net.kind; }, "Kind").one_of({"skip", "resnet"});
    out.add("rate", [](Sample& c) -> auto& { return c.rate; }, "Rate");
    out.add("flag", [](Sample& c) -> auto& { return c.flag; }, "Flag");
    out.add("items", [](Sample& c) -> auto& { return c.items; }, "Items");
    out.add("desc", [](Sample& c) -> auto& { return c.desc; }, "Description");
    out.add("clamp", [](Sample& c) -> auto& { return c.clamp; }, "Clamp").none_is(-1.0);
    out.add("ticks", [](Sample& c) -> auto& { return c.ticks; }, "Ticks");
    return out;
  }();
  return s;
}

TEST(ConfigSchema, ReadsNestedYaml) {
  Sample c;
  schema().read_yaml(c, YAML::Load("net: {width: 128, kind: resnet}\nrate: 0.01\nflag: true\nitems: [x, y]"), "t");
  EXPECT_EQ(c.net.width, 128);
  EXPECT_EQ(c.net.kind, "resnet");
  EXPECT_DOUBLE_EQ(c.rate, 0.01);
  EXPECT_TRUE(c.flag);
  EXPECT_EQ(c.items, (std::vector<std::string>{"x", "y"}));
}

TEST(ConfigSchema, WritesWhatItReads) {
  Sample c;
  c.net.width = 7;
  c.rate = 0.0025;
  c.items = {"p", "q"};
  const std::string text = schema().to_yaml_string(c);
  EXPECT_NE(text.find("rate: 0.0025"), std::string::npos) << text;  // shortest round-trip form
  const Sample back = schema().from_yaml_string(text, "round trip");
  EXPECT_EQ(back.net.width, 7);
  EXPECT_DOUBLE_EQ(back.rate, 0.0025);
  EXPECT_EQ(back.items, c.items);
}

TEST(ConfigSchema, UnknownKeyNamesItAndSuggests) {
  Sample c;
  const std::string message = test::error_message([&] { schema().read_yaml(c, YAML::Load("net: {widht: 3}"), "f.yaml"); });
  EXPECT_NE(message.find("f.yaml"), std::string::npos) << message;
  EXPECT_NE(message.find("net.widht"), std::string::npos) << message;
  EXPECT_NE(message.find("did you mean 'net.width'"), std::string::npos) << message;
}

TEST(ConfigCli, AKeyGivenThroughTwoFlagsIsAnError) {
  CLI::App app;
  CliValues values;
  add_cli_options(schema(), app, values, kDefaults);
  add_cli_alias(schema(), app, values, "--width", "net.width");
  const char* argv[] = {"prog", "--width", "9", "--net.width", "3"};
  app.parse(5, const_cast<char**>(argv));
  Sample c;
  const std::string message = test::error_message([&] { apply_cli(schema(), c, values); });
  EXPECT_NE(message.find("--net.width and --width both set 'net.width' on the command line"), std::string::npos)
      << message;
}

TEST(ConfigSchema, WrongTypeNamesKeyAndSource) {
  Sample c;
  const std::string message = test::error_message([&] { schema().read_yaml(c, YAML::Load("net: {width: wide}"), "f.yaml"); });
  EXPECT_NE(message.find("net.width"), std::string::npos) << message;
  EXPECT_NE(message.find("f.yaml"), std::string::npos) << message;
  EXPECT_NE(message.find("integer"), std::string::npos) << message;
  EXPECT_NE(test::error_message([&] { schema().read_yaml(c, YAML::Load("flag: maybe"), "f"); }).find("true or false"),
            std::string::npos);
}

TEST(ConfigSchema, ChoicesAreEnforced) {
  Sample c;
  const std::string message = test::error_message([&] { schema().read_yaml(c, YAML::Load("net: {kind: orig}"), "f"); });
  EXPECT_NE(message.find("not one of: skip, resnet"), std::string::npos) << message;
  EXPECT_EQ(c.net.kind, "skip");
}

TEST(ConfigSchema, YamlSyntaxErrorNamesFileAndLine) {
  test::TempDir dir;
  std::ofstream(dir.file("bad.yaml")) << "net:\n  width: [1, 2\n";
  Sample c;
  const std::string message = test::error_message([&] { schema().read_yaml_file(c, dir.file("bad.yaml")); });
  EXPECT_NE(message.find("bad.yaml:"), std::string::npos) << message;
}

TEST(ConfigCli, FlagsOverrideFileValues) {
  test::TempDir dir;
  std::ofstream(dir.file("c.yaml")) << "net: {width: 32}\nrate: 0.5\n";
  CLI::App app;
  CliValues values;
  add_cli_options(schema(), app, values, kDefaults);
  const char* argv[] = {"prog", "--net.width", "256", "--items", "[u, v]"};
  app.parse(5, const_cast<char**>(argv));
  Sample c;
  schema().read_yaml_file(c, dir.file("c.yaml"));
  apply_cli(schema(), c, values);
  EXPECT_EQ(c.net.width, 256);       // the flag wins over the file
  EXPECT_DOUBLE_EQ(c.rate, 0.5);     // the file wins over the default
  EXPECT_EQ(c.items, (std::vector<std::string>{"u", "v"}));
  EXPECT_TRUE(cli_has(values, "net.width"));
  EXPECT_FALSE(cli_has(values, "rate"));
}

TEST(ConfigCli, BadFlagValueNamesTheFlag) {
  CLI::App app;
  CliValues values;
  add_cli_options(schema(), app, values, kDefaults);
  const char* argv[] = {"prog", "--rate", "fast"};
  app.parse(3, const_cast<char**>(argv));
  Sample c;
  const std::string message = test::error_message([&] { apply_cli(schema(), c, values); });
  EXPECT_NE(message.find("command line --rate"), std::string::npos) << message;
}

// A Sample with `args` applied as command-line flags.
Sample from_flags(std::vector<std::string> args) {
  CLI::App app;
  CliValues values;
  add_cli_options(schema(), app, values, kDefaults);
  args.insert(args.begin(), "prog");
  std::vector<const char*> argv;
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  app.parse(int(argv.size()), argv.data());
  Sample c;
  apply_cli(schema(), c, values);
  return c;
}

TEST(ConfigCli, TextIsKeptAsTypedAndNullGivesTheNoneValue) {
  EXPECT_EQ(from_flags({"--desc", "exp #3"}).desc, "exp #3");  // not cut at a YAML comment
  EXPECT_EQ(from_flags({"--desc", "&a |"}).desc, "&a |");      // nor read as an anchor and a block
  EXPECT_EQ(from_flags({"--desc", "\"quoted #\""}).desc, "quoted #");
  EXPECT_EQ(from_flags({"--desc", ""}).desc, "");
  EXPECT_EQ(from_flags({"--items", "[u, v]"}).items, (std::vector<std::string>{"u", "v"}));
  EXPECT_DOUBLE_EQ(from_flags({"--clamp", "256"}).clamp, 256);
  EXPECT_DOUBLE_EQ(from_flags({"--clamp", "null"}).clamp, -1);
  EXPECT_DOUBLE_EQ(from_flags({"--clamp", "~"}).clamp, -1);
  EXPECT_EQ(from_flags({"--ticks", " 7 "}).ticks, 7);
}

TEST(ConfigSchema, IntFieldsRefuseValuesOutsideTheirRange) {
  const std::string flag = test::error_message([] { from_flags({"--ticks", "4294967297"}); });
  EXPECT_NE(flag.find("--ticks): expected an integer from -2147483648 to 2147483647, got '4294967297'"),
            std::string::npos)
      << flag;
  Sample c;
  EXPECT_NE(test::error_message([&] { schema().read_yaml(c, YAML::Load("ticks: 2147483648"), "f"); }).find("'ticks'"),
            std::string::npos);
  schema().read_yaml(c, YAML::Load("ticks: -2147483648"), "f");
  EXPECT_EQ(c.ticks, -2147483647 - 1);
}

// YAML's infinities and NaN (.inf, .nan) read as numbers and C's (inf, nan) do not: both are refused
// alike, from a file and from a flag, naming the key.
TEST(ConfigSchema, NumbersMustBeFinite) {
  for (const std::string text : {".inf", "-.Inf", ".nan", "inf", "nan", "1e400"}) {
    Sample c;
    const std::string file = test::error_message([&] { schema().read_yaml(c, YAML::Load("rate: " + text), "f.yaml"); });
    EXPECT_NE(file.find("key 'rate' (f.yaml): expected a finite number, got '" + text + "'"), std::string::npos)
        << file;
    const std::string flag = test::error_message([&] { from_flags({"--rate", text}); });
    EXPECT_NE(flag.find("--rate): expected a finite number"), std::string::npos) << flag;
  }
  EXPECT_DOUBLE_EQ(from_flags({"--rate", "1e300"}).rate, 1e300);
}

TEST(ConfigCli, AliasesAndUnknownFlags) {
  CLI::App app;
  CliValues values;
  add_cli_options(schema(), app, values, kDefaults);
  add_cli_alias(schema(), app, values, "--width", "net.width");
  app.allow_extras();
  const char* argv[] = {"prog", "--width", "9", "--net.widht", "3"};
  app.parse(5, const_cast<char**>(argv));
  Sample c;
  apply_cli(schema(), c, values);
  EXPECT_EQ(c.net.width, 9);
  EXPECT_TRUE(cli_has(values, "net.width"));
  const std::string message = test::error_message([&] { reject_extras(schema(), app.remaining()); });
  EXPECT_NE(message.find("did you mean 'net.width'"), std::string::npos) << message;
}

TEST(ConfigCli, HelpShowsDefaultsAndChoices) {
  CLI::App app;
  CliValues values;
  add_cli_options(schema(), app, values, kDefaults);
  const std::string help = app.help();
  EXPECT_NE(help.find("--net.width"), std::string::npos);
  EXPECT_NE(help.find("[default: 64]"), std::string::npos) << help;
  EXPECT_NE(help.find("{skip|resnet}"), std::string::npos) << help;
}

// A part with its own schema, included in a whole under a prefix, as the networks' options are in
// the training config.
struct Part {
  double clamp = -1;  // < 0: off; the reference's None
  int64_t size = 4;
  std::vector<float> taps{1, 3, 3, 1};
};
struct Whole {
  Part part;
  int other = 0;
};

const Schema<Part>& part_schema() {
  static const Schema<Part> s = [] {
    Schema<Part> out;
    out.add("clamp", [](Part& p) -> auto& { return p.clamp; }, "Clamp").none_is(-1.0);
    out.add("size", [](Part& p) -> auto& { return p.size; }, "Size");
    out.add("taps", [](Part& p) -> auto& { return p.taps; }, "Taps");
    return out;
  }();
  return s;
}

TEST(ConfigSchema, AnIncludedPartKeepsItsFieldsUnderThePrefix) {
  Schema<Whole> whole;
  whole.include("part.", part_schema(), [](Whole& w) -> Part& { return w.part; }, {"size"});
  whole.add("other", [](Whole& w) -> auto& { return w.other; }, "Other");
  EXPECT_EQ(whole.keys(), (std::vector<std::string>{"part.clamp", "part.taps", "other"}));
  Whole w;
  whole.read_yaml(w, YAML::Load("part: {clamp: 256, taps: [1, 2, 1]}\nother: 3"), "w.yaml");
  EXPECT_DOUBLE_EQ(w.part.clamp, 256);
  EXPECT_EQ(w.part.taps, (std::vector<float>{1, 2, 1}));
  EXPECT_EQ(w.other, 3);
  whole.read_yaml(w, YAML::Load("part: {clamp: ~}"), "w.yaml");  // None
  EXPECT_DOUBLE_EQ(w.part.clamp, -1);
  EXPECT_NE(whole.to_yaml_string(w).find("taps: [1, 2, 1]"), std::string::npos) << whole.to_yaml_string(w);
  try {
    whole.read_yaml(w, YAML::Load("part: {taps: x}"), "w.yaml");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("key 'part.taps' (w.yaml): expected a list of numbers"), std::string::npos)
        << e.what();
  }
}

TEST(ConfigJson, NoneIsNullBothWaysAndUnknownKeysAreReturned) {
  Part p;
  nlohmann::json j = to_json(part_schema(), p);
  EXPECT_TRUE(j.at("clamp").is_null()) << j.dump();
  EXPECT_EQ(j.at("size"), 4);
  EXPECT_EQ(j.at("taps"), nlohmann::json({1.0, 3.0, 3.0, 1.0}));
  j["clamp"] = 0.5;
  j["size"] = 8;
  j["extra"] = true;
  Part back;
  EXPECT_EQ(read_json(part_schema(), back, j, "p.json"), std::vector<std::string>{"extra"});
  EXPECT_DOUBLE_EQ(back.clamp, 0.5);
  EXPECT_EQ(back.size, 8);
  j["clamp"] = nullptr;
  read_json(part_schema(), back, j, "p.json");
  EXPECT_DOUBLE_EQ(back.clamp, -1);
  j["size"] = "big";
  EXPECT_THROW(read_json(part_schema(), back, j, "p.json"), Error);
  EXPECT_THROW(read_json(part_schema(), back, nlohmann::json::array(), "p.json"), Error);
}

}  // namespace
}  // namespace sg2::config
