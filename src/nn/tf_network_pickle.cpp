#include "sg2/nn/tf_network_pickle.h"

#include "sg2/core/enum_names.h"
#include "sg2/core/error.h"
#include "sg2/core/pickle.h"
#include "sg2/nn/networks.h"
#include "tf_kwargs.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <regex>
#include <set>

namespace sg2::nn {

using pickle::Items;
using pickle::Value;

// ---- Names and layouts (the inverse of legacy.load_network_pkl's conversion) ----

namespace {

bool dense_variable(const std::string& layer, const std::string& param, TfVariable* variable) {
  *variable = {layer + "/" + param, param == "weight" ? TfLayout::Matrix : TfLayout::Same};
  return true;
}

// The noise input of a synthesis layer: noise0 is 4x4's, then two per resolution.
int64_t noise_index(int64_t resolution, const std::string& layer) {
  const auto log2 = static_cast<int64_t>(std::lround(std::log2(static_cast<double>(resolution))));
  return resolution == 4 ? 0 : 2 * log2 - (layer == "conv0" ? 5 : 4);
}

bool synthesis_variable(const std::smatch& m, TfVariable* variable) {
  const int64_t r = std::stoll(m[1]);
  const std::string layer = m[2], param = m[3];
  const std::string tf_layer = layer == "torgb" ? "ToRGB" : r == 4 ? "Conv" : layer == "conv0" ? "Conv0_up" : "Conv1";
  const std::string path = fmt::format("synthesis/{}x{}/{}/", r, r, tf_layer);
  if (param == "weight") {
    *variable = {path + "weight", layer == "conv0" ? TfLayout::FlippedConv : TfLayout::Conv};
  } else if (param == "noise_const") {
    *variable = {fmt::format("synthesis/noise{}", noise_index(r, layer)), TfLayout::Noise};
  } else if (param == "affine.weight") {
    *variable = {path + "mod_weight", TfLayout::Matrix};
  } else if (param == "affine.bias") {
    *variable = {path + "mod_bias", TfLayout::ModulationBias};
  } else {
    *variable = {path + param, TfLayout::Same};  // bias, noise_strength
  }
  return true;
}

bool generator_variable(const std::string& name, TfVariable* variable) {
  static const std::regex mapping(R"(mapping\.(?:fc(\d+)|embed)\.(weight|bias))");
  static const std::regex layer(R"(synthesis\.b(\d+)\.(conv0|conv1|torgb)\.(weight|bias|noise_const|noise_strength|affine\.weight|affine\.bias))");
  static const std::regex skip(R"(synthesis\.b(\d+)\.skip\.weight)");
  std::smatch m;
  if (name == "mapping.w_avg") {
    *variable = {"dlatent_avg", TfLayout::Same};
  } else if (name == "synthesis.b4.const") {
    *variable = {"synthesis/4x4/Const/const", TfLayout::Const};
  } else if (std::regex_match(name, m, mapping)) {
    return dense_variable(m[1].matched ? "mapping/Dense" + m[1].str() : "mapping/LabelEmbed", m[2], variable);
  } else if (std::regex_match(name, m, layer)) {
    return synthesis_variable(m, variable);
  } else if (std::regex_match(name, m, skip)) {
    *variable = {fmt::format("synthesis/{0}x{0}/Skip/weight", m[1].str()), TfLayout::FlippedConv};
  } else {
    return false;
  }
  return true;
}

bool discriminator_variable(const std::string& name, TfVariable* variable) {
  static const std::regex block(R"(b(\d+)\.(fromrgb|conv0|conv1|skip)\.(weight|bias))");
  static const std::regex mapping(R"(mapping\.(?:fc(\d+)|embed)\.(weight|bias))");
  static const std::regex epilogue(R"(b4\.(conv|fc|out)\.(weight|bias))");
  std::smatch m;
  if (std::regex_match(name, m, block)) {
    const std::string layer = m[2], param = m[3];
    const std::string tf_layer = layer == "fromrgb" ? "FromRGB" : layer == "conv0" ? "Conv0" : layer == "conv1"
                                 ? "Conv1_down" : "Skip";
    *variable = {fmt::format("{0}x{0}/{1}/{2}", m[1].str(), tf_layer, param),
                 param == "weight" ? TfLayout::Conv : TfLayout::Same};
    return true;
  }
  if (std::regex_match(name, m, mapping)) {
    return dense_variable(m[1].matched ? "Mapping" + m[1].str() : "LabelEmbed", m[2], variable);
  }
  if (std::regex_match(name, m, epilogue)) {
    const std::string layer = m[1], param = m[2];
    if (layer == "conv") {
      *variable = {"4x4/Conv/" + param, param == "weight" ? TfLayout::Conv : TfLayout::Same};
      return true;
    }
    return dense_variable(layer == "fc" ? "4x4/Dense0" : "Output", param, variable);
  }
  return false;
}

}  // namespace

bool tf_variable_of(const std::string& name, bool is_generator, TfVariable* variable) {
  const std::string filter = "resample_filter";
  if (name.size() >= filter.size() && name.compare(name.size() - filter.size(), filter.size(), filter) == 0) {
    return false;  // a constant of the architecture, not a variable
  }
  const bool known = is_generator ? generator_variable(name, variable) : discriminator_variable(name, variable);
  SG2_CHECK(known, "the {}'s tensor '{}' has no TensorFlow StyleGAN2 variable", is_generator ? "generator" :
            "discriminator", name);
  return true;
}

at::Tensor to_tf_layout(const at::Tensor& t, TfLayout layout) {
  switch (layout) {
    case TfLayout::Same: return t;
    case TfLayout::Matrix: return t.t();                                        // [out, in] -> [in, out]
    case TfLayout::Conv: return t.permute({2, 3, 1, 0});                        // OIHW -> HWIO
    case TfLayout::FlippedConv: return t.permute({2, 3, 1, 0}).flip({0, 1});
    case TfLayout::Const: return t.unsqueeze(0);                                // [C, 4, 4] -> [1, C, 4, 4]
    case TfLayout::Noise: return t.unsqueeze(0).unsqueeze(0);                   // [H, W] -> [1, 1, H, W]
    case TfLayout::ModulationBias: return t - 1;
  }
  return t;
}

at::Tensor from_tf_layout(const at::Tensor& t, TfLayout layout) {
  switch (layout) {
    case TfLayout::Same: return t;
    case TfLayout::Matrix: return t.t();
    case TfLayout::Conv: return t.permute({3, 2, 0, 1});
    case TfLayout::FlippedConv: return t.flip({0, 1}).permute({3, 2, 0, 1});
    case TfLayout::Const: return t.select(0, 0);
    case TfLayout::Noise: return t.select(0, 0).select(0, 0);
    case TfLayout::ModulationBias: return t + 1;
  }
  return t;
}

// ---- numpy arrays ----

namespace {

constexpr const char* kReconstruct[] = {"numpy.core.multiarray._reconstruct", "numpy._core.multiarray._reconstruct"};
constexpr const char* kFromBuffer[] = {"numpy.core.numeric._frombuffer", "numpy._core.numeric._frombuffer"};

bool is_one_of(const std::string& name, const char* const (&names)[2]) { return name == names[0] || name == names[1]; }

Value shape_tuple(at::IntArrayRef sizes) {
  Items items;
  for (const int64_t s : sizes) items.push_back(Value::integer(s));
  return Value::tuple(std::move(items));
}

// numpy.ndarray's pickle (protocol 2 to 4): _reconstruct(ndarray, (0,), b'b'), then the state
// (1, shape, dtype('<f4'), fortran order, the bytes).
Value numpy_array(const at::Tensor& tensor) {
  const at::Tensor t = tensor.detach().to(at::kCPU, at::kFloat).contiguous();
  const Value dtype = Value::object(Value::global("numpy", "dtype"),
                                   Value::tuple({Value::string("f4"), Value::boolean(false), Value::boolean(true)}),
                                   Value::tuple({Value::integer(3), Value::string("<"), {}, {}, {}, Value::integer(-1),
                                                 Value::integer(-1), Value::integer(0)}));
  std::string data(static_cast<size_t>(t.numel()) * sizeof(float), '\0');
  if (!data.empty()) std::memcpy(data.data(), t.data_ptr<float>(), data.size());
  const Value state = Value::tuple({Value::integer(1), shape_tuple(t.sizes()), dtype, Value::boolean(false),
                                    Value::bytes(std::move(data))});
  return Value::object(Value::global("numpy.core.multiarray", "_reconstruct"),
                       Value::tuple({Value::global("numpy", "ndarray"), Value::tuple({Value::integer(0)}),
                                     Value::bytes("b")}),
                       state);
}

at::ScalarType numpy_type(const Value& dtype, const std::string& what) {
  const pickle::Object& d = dtype.as_object(what + "'s dtype");
  SG2_CHECK(dtype.qualified_name() == "numpy.dtype", "{}: a dtype made by {}", what, dtype.qualified_name());
  const Items& args = d.args.as_sequence(what + "'s dtype");
  SG2_CHECK(!args.empty(), "{}: a dtype without its type code", what);
  const std::string code = args[0].as_string(what + "'s dtype");
  if (!d.state.is_none()) {
    const Items& state = d.state.as_sequence(what + "'s dtype");
    SG2_CHECK(state.size() >= 2, "{}: a dtype state without its byte order", what);
    const std::string order = state[1].as_string(what + "'s byte order");
    SG2_CHECK(order != ">", "{}: a big-endian array (byte order '>')", what);
  }
  static const std::map<std::string, at::ScalarType> types{
      {"f2", at::kHalf}, {"f4", at::kFloat}, {"f8", at::kDouble}, {"i1", at::kChar}, {"u1", at::kByte},
      {"i2", at::kShort}, {"i4", at::kInt}, {"i8", at::kLong}, {"b1", at::kBool}};
  const auto it = types.find(code);
  SG2_CHECK(it != types.end(), "{}: an array of numpy type '{}' (expected a number type)", what, code);
  return it->second;
}

at::Tensor tensor_from_bytes(const std::string& data, std::vector<int64_t> shape, at::ScalarType type, bool fortran,
                             const std::string& what) {
  if (fortran) std::reverse(shape.begin(), shape.end());
  uint64_t expected = at::elementSize(type);  // bytes, checked against the data before any allocation
  for (const int64_t s : shape) {
    SG2_CHECK(s >= 0 && (s == 0 || expected <= data.size() / static_cast<uint64_t>(s) || expected == 0),
              "{}: an array of shape {} larger than its {} bytes of data", what, shape, data.size());
    expected *= static_cast<uint64_t>(s);
  }
  SG2_CHECK(data.size() == expected, "{}: {} bytes for an array of shape {} ({} expected)", what, data.size(), shape,
            expected);
  at::Tensor t = at::empty(shape, at::TensorOptions(type));
  if (expected > 0) std::memcpy(t.data_ptr(), data.data(), expected);
  if (fortran) {
    std::vector<int64_t> reversed(shape.size());
    for (size_t i = 0; i < shape.size(); ++i) reversed[i] = static_cast<int64_t>(shape.size() - 1 - i);
    t = t.permute(reversed);
  }
  return t.to(at::kFloat).contiguous();
}

std::vector<int64_t> shape_of(const Value& tuple, const std::string& what) {
  std::vector<int64_t> shape;
  for (const Value& s : tuple.as_sequence(what + "'s shape")) shape.push_back(s.as_int(what + "'s shape"));
  return shape;
}

at::Tensor tensor_from_numpy(const Value& array, const std::string& what) {
  const pickle::Object& o = array.as_object(what);
  const std::string maker = array.qualified_name();
  if (is_one_of(maker, kFromBuffer)) {  // protocol 5: _frombuffer(bytes, dtype, shape, order)
    const Items& a = o.args.as_sequence(what);
    SG2_CHECK(a.size() == 4, "{}: _frombuffer with {} arguments", what, a.size());
    return tensor_from_bytes(a[0].as_bytes(what), shape_of(a[2], what), numpy_type(a[1], what),
                             a[3].as_string(what) == "F", what);
  }
  SG2_CHECK(is_one_of(maker, kReconstruct), "{}: expected a numpy array, found {}", what, array.describe());
  const Items& state = o.state.as_sequence(what + "'s state");
  SG2_CHECK(state.size() == 5, "{}: a numpy array state of {} entries (5 expected)", what, state.size());
  return tensor_from_bytes(state[4].as_bytes(what + "'s data"), shape_of(state[1], what),
                           numpy_type(state[2], what), state[3].as_bool(what + "'s order"), what);
}

// ---- Network objects ----

constexpr const char* kNetworkClass = "dnnlib.tflib.network.Network";

// Counts the variables written or read for a VariableProgress.
struct VariableCounter {
  const VariableProgress& report;
  int64_t total = 0, done = 0;
  void tick() {
    ++done;
    if (report) report(done, total);
  }
};

Value network_object(const std::string& name, const std::string& build_function, Value static_kwargs,
                     pickle::DictItems components, const std::vector<std::pair<std::string, at::Tensor>>& variables,
                     VariableCounter& counter) {
  Items pairs;
  for (const auto& [path, tensor] : variables) {
    pairs.push_back(Value::tuple({Value::string(path), numpy_array(tensor)}));
    counter.tick();
  }
  const Value state = Value::dict({
      {Value::string("version"), Value::integer(4)},
      {Value::string("name"), Value::string(name)},
      {Value::string("static_kwargs"), std::move(static_kwargs)},
      {Value::string("components"), Value::dict(std::move(components))},
      {Value::string("build_module_src"),
       Value::string("# Written by stylegan2-cpp (stylegan2_export): the variables and static_kwargs of a StyleGAN2 "
                     "network, for stylegan2-ada-pytorch's legacy.load_network_pkl. No TensorFlow graph code.\n")},
      {Value::string("build_func_name"), Value::string(build_function)},
      {Value::string("variables"), Value::list(std::move(pairs))},
  });
  return Value::object(Value::global("dnnlib.tflib.network", "Network"), Value::tuple({}), state, true);
}

using Variables = std::vector<std::pair<std::string, at::Tensor>>;

// A network's tensors ("G_ema." + name) as TensorFlow variables, in state-dict order.
Variables tf_variables(const TensorMap& tensors, const std::string& prefix, bool is_generator) {
  Variables variables;
  for (const auto& [key, tensor] : tensors) {
    if (key.compare(0, prefix.size(), prefix) != 0) continue;
    TfVariable v;
    if (tf_variable_of(key.substr(prefix.size()), is_generator, &v)) {
      variables.emplace_back(v.path, to_tf_layout(tensor, v.layout));
    }
  }
  SG2_CHECK(!variables.empty(), "no {}* tensors to export", prefix);
  return variables;
}

// G_main with its mapping and synthesis components, from the generator's variables.
Value generator_network(const PickledNetworks& n, const std::string& name, const Variables& variables,
                        VariableCounter& counter) {
  Variables top, mapping, synthesis;
  for (const auto& [path, tensor] : variables) {
    if (path.rfind("mapping/", 0) == 0) {
      mapping.emplace_back(path.substr(8), tensor);
    } else if (path.rfind("synthesis/", 0) == 0) {
      synthesis.emplace_back(path.substr(10), tensor);
    } else {
      top.emplace_back(path, tensor);
    }
  }
  const Value kwargs = generator_tf_kwargs(n.G, n.num_fp16_res);
  pickle::DictItems components{
      {Value::string("mapping"), network_object("G_mapping", "G_mapping", kwargs, {}, mapping, counter)},
      {Value::string("synthesis"),
       network_object("G_synthesis", "G_synthesis_stylegan2", kwargs, {}, synthesis, counter)}};
  return network_object(name, "G_main", kwargs, std::move(components), top, counter);
}

}  // namespace

std::string tf_network_pickle(const PickledNetworks& networks, const VariableProgress& progress) {
  const Variables G = tf_variables(networks.tensors, "G.", true), D = tf_variables(networks.tensors, "D.", false);
  const Variables Gs = tf_variables(networks.tensors, "G_ema.", true);
  VariableCounter counter{progress, static_cast<int64_t>(G.size() + D.size() + Gs.size())};
  const Value G_net = generator_network(networks, "G", G, counter);
  const Value D_net = network_object("D", "D_stylegan2", discriminator_tf_kwargs(networks.D, networks.num_fp16_res),
                                     {}, D, counter);
  return pickle::dumps(Value::tuple({G_net, D_net, generator_network(networks, "Gs", Gs, counter)}));
}

// ---- Reading ----

namespace {

using PathMap = std::map<std::string, at::Tensor>;

// StyleGAN2's networks nest components two deep (G / mapping); deeper is a damaged or cyclic pickle.
constexpr int kMaxComponentDepth = 8;

// The variables of a network and its components.
int64_t count_variables(const Value& network, int depth = 0) {
  if (network.kind() != Value::Kind::Object || depth > kMaxComponentDepth) return 0;
  const Value& state = network.as_object("").state;
  const Value* variables = state.find("variables");
  int64_t count = variables != nullptr && variables->kind() == Value::Kind::List
                      ? static_cast<int64_t>(variables->as_sequence("").size()) : 0;
  const Value* components = state.find("components");
  if (components != nullptr && components->kind() == Value::Kind::Dict) {
    for (const auto& [key, component] : components->as_dict("")) count += count_variables(component, depth + 1);
  }
  return count;
}

// Every variable of a network and its components, named as legacy's _collect_tf_params names them.
void collect_variables(const Value& network, const std::string& prefix, const std::string& what, PathMap& out,
                       VariableCounter& counter, int depth = 0) {
  SG2_CHECK(depth <= kMaxComponentDepth, "{}: components nested more than {} deep (a cycle?)", what,
            kMaxComponentDepth);
  const Value& state = network.as_object(what).state;
  const Value* variables = state.find("variables");
  SG2_CHECK(variables != nullptr, "{}: a Network without variables", what);
  for (const Value& pair : variables->as_sequence(what + ".variables")) {
    const Items& nv = pair.as_sequence(what + ".variables");
    SG2_CHECK(nv.size() == 2, "{}.variables: an entry of {} items (name, array expected)", what, nv.size());
    const std::string name = nv[0].as_string(what + ".variables' names");
    out[prefix + name] = tensor_from_numpy(nv[1], what + " variable " + prefix + name);
    counter.tick();
  }
  if (const Value* components = state.find("components"); components != nullptr) {
    for (const auto& [key, component] : components->as_dict(what + ".components")) {
      const std::string name = key.as_string(what + ".components");
      collect_variables(component, prefix + name + "/", what + "/" + name, out, counter, depth + 1);
    }
  }
}

const Value& network_state(const Value& network, const std::string& what) {
  SG2_CHECK(network.kind() == Value::Kind::Object && network.qualified_name() == kNetworkClass,
            "{}: expected a {} object, found {}", what, kNetworkClass, network.describe());
  const Value& state = network.as_object(what).state;
  const Value* version = state.find("version");
  SG2_CHECK(version != nullptr && version->as_int(what + ".version") >= 4,
            "{}: a TensorFlow network pickle older than version 4 (StyleGAN2's)", what);
  return state;
}

// Our tensors of one network from its TensorFlow variables; names every variable left over.
void load_network(const PathMap& variables, const NamedTensors& ours, const std::string& prefix, bool is_generator,
                  const std::string& what, PickledNetworks& out) {
  std::set<std::string> used;
  for (const auto& [name, tensor] : ours) {
    TfVariable v;
    if (!tf_variable_of(name, is_generator, &v)) {
      out.tensors[prefix + name] = tensor;  // a constant the options give (resample filters)
      continue;
    }
    const auto it = variables.find(v.path);
    SG2_CHECK(it != variables.end(), "{}: no variable '{}' for {} (a network other than its static_kwargs say?)", what,
              v.path, name);
    at::Tensor value = from_tf_layout(it->second, v.layout).contiguous();
    SG2_CHECK(value.sizes() == tensor.sizes(), "{}: variable '{}' has shape {}; {} needs {} (in TensorFlow layout {})",
              what, v.path, it->second.sizes(), name, tensor.sizes(), to_tf_layout(tensor, v.layout).sizes());
    out.tensors[prefix + name] = value;
    used.insert(v.path);
  }
  for (const auto& [path, tensor] : variables) {
    if (!used.count(path) && path.find("lod") == std::string::npos) {
      out.notes.push_back(fmt::format("{}: variable '{}' {} has no tensor here and is ignored", what, path,
                                      tensor.sizes()));
    }
  }
}

}  // namespace

PickledNetworks read_tf_network_pickle(const std::string& data, const std::string& source,
                                       const VariableProgress& progress) {
  const Value root = pickle::loads(data, source);
  if (root.kind() == Value::Kind::Dict && root.find("G_ema") != nullptr) {
    SG2_FAIL("'{}' is a stylegan2-ada-pytorch pickle of PyTorch modules, not a TensorFlow-form one: convert it with "
             "scripts/export_pkl.py and stylegan2_import --state-dict", source);
  }
  const bool triple = root.kind() == Value::Kind::Tuple && root.as_sequence(source).size() == 3;
  SG2_CHECK(triple, "'{}' holds {}, not the tuple (G, D, Gs) of a TensorFlow StyleGAN2 network pickle", source,
            root.describe());
  const Items& nets = root.as_sequence(source);
  const std::string names[] = {source + ": G", source + ": D", source + ": Gs"};
  PickledNetworks out;
  int64_t fp16_g = 0, fp16_d = 0;
  out.G = generator_options_from_tf(network_state(nets[2], names[2]), names[2], &fp16_g, &out.notes);
  out.D = discriminator_options_from_tf(network_state(nets[1], names[1]), names[1], &fp16_d, &out.notes);
  out.num_fp16_res = std::max(fp16_g, fp16_d);
  const GeneratorOptions G_options = generator_options_from_tf(network_state(nets[0], names[0]), names[0]);
  SG2_CHECK(to_json(G_options) == to_json(out.G), "'{}': G and Gs are built with different static_kwargs", source);
  // The float16 blocks the pickle's networks compute in, which an import keeps.
  out.G.precision.num_fp16_res = fp16_g;
  out.D.precision.num_fp16_res = fp16_d;
  const NamedTensors G = state_dict(*std::make_shared<Generator>(out.G));
  VariableCounter counter{progress, count_variables(nets[0]) + count_variables(nets[1]) + count_variables(nets[2])};
  for (const auto& [index, prefix] : std::vector<std::pair<int, std::string>>{{0, "G."}, {2, "G_ema."}}) {
    PathMap variables;
    collect_variables(nets[index], "", names[index], variables, counter);
    load_network(variables, G, prefix, true, names[index], out);
  }
  PathMap variables;
  collect_variables(nets[1], "", names[1], variables, counter);
  load_network(variables, state_dict(*std::make_shared<Discriminator>(out.D)), "D.", false, names[1], out);
  return out;
}

}  // namespace sg2::nn
