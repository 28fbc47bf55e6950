// Network pickles in the TensorFlow StyleGAN2 form: every architecture and conditioning survives a
// write and a read (options and tensors), each layout is undone by its inverse, config-f's keys all
// have distinct variables, and bad pickles are refused with the argument or variable named.
#include "sg2/core/pickle.h"
#include "sg2/nn/networks.h"
#include "sg2/nn/tf_network_pickle.h"
#include "test_support.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <set>

namespace sg2::nn {
namespace {

GeneratorOptions small_generator(Architecture arch, int64_t c_dim) {
  GeneratorOptions g;
  g.z_dim = g.w_dim = 16;
  g.c_dim = c_dim;
  g.img_resolution = 16;
  g.channel_base = 128;
  g.channel_max = 16;
  g.mapping_layers = 2;
  g.architecture = arch;
  g.conv_clamp = 256;
  return g;
}

DiscriminatorOptions small_discriminator(Architecture arch, int64_t c_dim) {
  DiscriminatorOptions d;
  d.c_dim = c_dim;
  d.img_resolution = 16;
  d.channel_base = 128;
  d.channel_max = 16;
  d.architecture = arch;
  d.mbstd_group_size = 0;
  d.mapping_layers = 3;
  return d;
}

// Random values in every tensor (biases included, so that a misplaced one shows).
void add_random_tensors(const torch::nn::Module& module, const std::string& prefix, TensorMap& out) {
  for (const auto& [name, tensor] : state_dict(module)) {
    const bool filter = name.find("resample_filter") != std::string::npos;
    out[prefix + name] = filter ? tensor.clone() : at::randn(tensor.sizes());
  }
}

PickledNetworks random_networks(Architecture g_arch, Architecture d_arch, int64_t c_dim) {
  PickledNetworks n;
  n.G = small_generator(g_arch, c_dim);
  n.D = small_discriminator(d_arch, c_dim);
  n.num_fp16_res = 2;
  const Generator G(n.G);
  add_random_tensors(G, "G.", n.tensors);
  add_random_tensors(G, "G_ema.", n.tensors);
  add_random_tensors(Discriminator(n.D), "D.", n.tensors);
  return n;
}

TEST(TfNetworkPickle, EveryArchitectureAndConditioningRoundTrips) {
  at::manual_seed(3);
  for (const auto g_arch : {Architecture::Orig, Architecture::Skip, Architecture::Resnet}) {
    for (const auto d_arch : {Architecture::Orig, Architecture::Skip, Architecture::Resnet}) {
      for (const int64_t c_dim : {0, 3}) {
        SCOPED_TRACE(fmt::format("G {}, D {}, c_dim {}", name_of(g_arch), name_of(d_arch), c_dim));
        const PickledNetworks original = random_networks(g_arch, d_arch, c_dim);
        const PickledNetworks back = read_tf_network_pickle(tf_network_pickle(original), "test.pkl");
        EXPECT_EQ(to_json(back.G), to_json(original.G));
        EXPECT_EQ(to_json(back.D), to_json(original.D));
        EXPECT_EQ(back.num_fp16_res, 2);
        EXPECT_EQ(back.G.precision.num_fp16_res, 2);
        EXPECT_EQ(back.D.precision.num_fp16_res, 2);
        EXPECT_TRUE(back.notes.empty()) << back.notes.front();
        ASSERT_EQ(back.tensors.size(), original.tensors.size());
        for (const auto& [name, tensor] : original.tensors) {
          // Modulation biases are stored less 1 (float32): exact near 1, within an ulp of 1 elsewhere.
          const double tolerance = name.find("affine.bias") != std::string::npos ? 2.4e-7 : 0.0;
          EXPECT_LE((back.tensors.at(name) - tensor).abs().max().item<double>(), tolerance) << name;
        }
      }
    }
  }
}

// Arguments as the TensorFlow code leaves them: D's label mapping absent (0 layers: the embedding
// alone), w_avg_beta None (legacy's 1), and an explicit None filter (no filtering).
TEST(TfNetworkPickle, ReadsTheTensorFlowDefaults) {
  using pickle::Value;
  PickledNetworks n = random_networks(Architecture::Skip, Architecture::Resnet, 3);
  n.D.mapping_layers = 0;
  n.tensors.clear();
  const Generator G(n.G);
  add_random_tensors(G, "G.", n.tensors);
  add_random_tensors(G, "G_ema.", n.tensors);
  add_random_tensors(Discriminator(n.D), "D.", n.tensors);
  Value root = pickle::loads(tf_network_pickle(n), "tf.pkl");
  const auto kwargs_of = [](Value& network) -> pickle::DictItems& {
    return const_cast<Value&>(*network.as_object("").state.find("static_kwargs")).dict_items();
  };
  auto& d_kwargs = kwargs_of(root.list_items()[1]);
  d_kwargs.erase(std::remove_if(d_kwargs.begin(), d_kwargs.end(),
                                [](const auto& kv) { return kv.first.as_string("") == "mapping_layers"; }),
                 d_kwargs.end());
  for (const int g : {0, 2}) {
    for (auto& [key, value] : kwargs_of(root.list_items()[g])) {
      if (key.as_string("") == "w_avg_beta") value = Value();
    }
  }
  const PickledNetworks back = read_tf_network_pickle(pickle::dumps(root), "tf.pkl");
  EXPECT_EQ(back.D.mapping_layers, 0);
  EXPECT_EQ(back.G.w_avg_beta, 1.0);
  for (const auto& [name, tensor] : n.tensors) {
    if (name.rfind("D.", 0) == 0) {
      EXPECT_TRUE(back.tensors.at(name).equal(tensor)) << name;
    }
  }
  for (auto& [key, value] : d_kwargs) {
    if (key.as_string("") == "resample_kernel") value = Value();
  }
  EXPECT_EQ(read_tf_network_pickle(pickle::dumps(root), "tf.pkl").D.resample_filter, std::vector<float>{1});
}

TEST(TfNetworkPickle, EachLayoutIsUndoneByItsInverse) {
  const at::Tensor conv = at::randn({5, 3, 3, 3}), matrix = at::randn({4, 6});
  for (const auto layout : {TfLayout::Same, TfLayout::Conv, TfLayout::FlippedConv, TfLayout::ModulationBias}) {
    EXPECT_TRUE(from_tf_layout(to_tf_layout(conv, layout), layout).allclose(conv, 0, 2.4e-7));  // x - 1 + 1: an ulp of 1
  }
  EXPECT_TRUE(from_tf_layout(to_tf_layout(matrix, TfLayout::Matrix), TfLayout::Matrix).equal(matrix));
  EXPECT_EQ(to_tf_layout(conv, TfLayout::Conv).sizes(), (std::vector<int64_t>{3, 3, 3, 5}));  // [kh, kw, in, out]
  // The flipped layout mirrors the kernel: TensorFlow's transposed convolution is the reverse of PyTorch's.
  EXPECT_TRUE(to_tf_layout(conv, TfLayout::FlippedConv)[0][0].equal(to_tf_layout(conv, TfLayout::Conv)[2][2]));
  EXPECT_EQ(to_tf_layout(at::zeros({8, 4, 4}), TfLayout::Const).sizes(), (std::vector<int64_t>{1, 8, 4, 4}));
  EXPECT_EQ(to_tf_layout(at::zeros({8, 8}), TfLayout::Noise).sizes(), (std::vector<int64_t>{1, 1, 8, 8}));
}

// The variables of config-f (the reference's key lists) as legacy.load_network_pkl names them.
TEST(TfNetworkPickle, ConfigFKeysHaveDistinctVariables) {
  const std::string path = test::shared_dir() + "/reference/keys_configf_1024.json";
  if (!std::ifstream(path).good()) GTEST_SKIP() << "no " << path;
  const nlohmann::json keys = nlohmann::json::parse(std::ifstream(path));
  for (const auto& [net, is_generator] : std::vector<std::pair<std::string, bool>>{{"G", true}, {"D", false}}) {
    std::set<std::string> paths;
    size_t variables = 0;
    for (const auto& entry : keys.at(net).items()) {
      TfVariable v;
      const std::string name = entry.key();
      if (!tf_variable_of(name, is_generator, &v)) continue;
      paths.insert(v.path);
      ++variables;
    }
    EXPECT_EQ(paths.size(), variables) << net;
    EXPECT_GT(variables, 20u) << net;
  }
  TfVariable v;
  ASSERT_TRUE(tf_variable_of("synthesis.b1024.conv0.noise_const", true, &v));
  EXPECT_EQ(v.path, "synthesis/noise15");  // 2 log2(1024) - 5, as the reference's conversion
  ASSERT_TRUE(tf_variable_of("b1024.conv1.weight", false, &v));
  EXPECT_EQ(v.path, "1024x1024/Conv1_down/weight");
}

TEST(TfNetworkPickle, BadPicklesNameWhatIsWrong) {
  using pickle::Value;
  const PickledNetworks n = random_networks(Architecture::Skip, Architecture::Resnet, 0);
  Value root = pickle::loads(tf_network_pickle(n), "good.pkl");
  const auto error_of = [](const Value& value) {
    return test::error_message([&] { read_tf_network_pickle(pickle::dumps(value), "bad.pkl"); });
  };
  Value& D = root.list_items()[1];
  Value& kwargs = const_cast<Value&>(*D.as_object("D").state.find("static_kwargs"));
  kwargs.dict_items().emplace_back(Value::string("fused_modconv"), Value::boolean(true));
  EXPECT_NE(error_of(root).find("unknown TensorFlow argument 'fused_modconv'"), std::string::npos) << error_of(root);
  kwargs.dict_items().pop_back();
  for (auto& [key, value] : kwargs.dict_items()) {
    if (key.as_string("") == "nonlinearity") value = Value::string("relu");
  }
  EXPECT_NE(error_of(root).find("nonlinearity is 'relu'; only 'lrelu'"), std::string::npos) << error_of(root);
  const Value dict = Value::dict({{Value::string("G_ema"), Value()}});
  EXPECT_NE(error_of(dict).find("scripts/export_pkl.py"), std::string::npos) << error_of(dict);
  EXPECT_NE(error_of(Value::list({})).find("not the tuple (G, D, Gs)"), std::string::npos);
  // A generator whose static_kwargs describe other networks than its variables.
  const std::string message = test::error_message([&] {
    PickledNetworks mixed = n;
    mixed.G.channel_max = 8;  // every variable is twice as wide as the options say
    read_tf_network_pickle(tf_network_pickle(mixed), "mixed.pkl");
  });
  EXPECT_NE(message.find("has shape"), std::string::npos) << message;
}

}  // namespace
}  // namespace sg2::nn
