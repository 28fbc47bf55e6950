// Collectives and the gradient reducer across real processes (mpirun, srun or stylegan2_launch;
// a plain run is a world of one). Expected values are closed forms of rank-filled tensors.
#include "sg2/core/error.h"
#include "sg2/distributed/communicator.h"
#include "sg2/distributed/consistency.h"
#include "sg2/distributed/reducer.h"
#include "sg2/distributed/watchdog.h"

#include "test_world.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <cstdlib>
#include <thread>

namespace sg2::dist {
namespace {

Communicator& comm() { return test::world(); }

const std::vector<int64_t> kOddSizes{1, 7, 1001, 65537};
const std::vector<at::ScalarType> kDtypes{at::kFloat, at::kDouble, at::kInt, at::kLong, at::kHalf, at::kByte};

// [n] with element i = (rank + 1) * (i % 5 + 1): small enough to be exact in every dtype.
at::Tensor rank_filled(int rank, int64_t n, at::ScalarType dtype) {
  at::Tensor pattern = at::arange(n, at::kLong).remainder(5).add(1);
  return pattern.mul(rank + 1).to(dtype).to(comm().device());
}

int64_t sum_of_rank_factors(int size) { return int64_t(size) * (size + 1) / 2; }

TEST(Collectives, AllreduceSumOddSizesAndDtypes) {
  const int n = comm().size();
  for (const auto dtype : kDtypes) {
    for (const int64_t numel : kOddSizes) {
      at::Tensor t = rank_filled(comm().rank(), numel, dtype);
      comm().allreduce({t}, ReduceOp::Sum);
      const at::Tensor expected = rank_filled(0, numel, at::kLong).cpu().mul(sum_of_rank_factors(n));
      EXPECT_TRUE(at::equal(t.cpu().to(at::kLong), expected)) << c10::toString(dtype) << " numel " << numel;
    }
  }
}

TEST(Collectives, AllreduceAvgAndManyTensorsAtOnce) {
  const int n = comm().size();
  std::vector<at::Tensor> tensors{rank_filled(comm().rank(), 3, at::kFloat), rank_filled(comm().rank(), 17, at::kDouble)};
  comm().allreduce(tensors, ReduceOp::Avg);
  const double factor = static_cast<double>(sum_of_rank_factors(n)) / n;
  EXPECT_TRUE(at::allclose(tensors[0].cpu().to(at::kDouble), rank_filled(0, 3, at::kDouble).cpu() * factor));
  EXPECT_TRUE(at::allclose(tensors[1].cpu(), rank_filled(0, 17, at::kDouble).cpu() * factor));
}

TEST(Collectives, AllreduceAvgRejectsIntegers) {
  at::Tensor t = rank_filled(comm().rank(), 3, at::kInt);
  EXPECT_THROW(comm().allreduce({t}, ReduceOp::Avg), std::exception);
}

TEST(Collectives, BroadcastFromLastRank) {
  const int root = comm().size() - 1;
  for (const auto dtype : kDtypes) {
    at::Tensor t = rank_filled(comm().rank(), 1001, dtype);
    comm().broadcast({t}, root);
    EXPECT_TRUE(at::equal(t.cpu(), rank_filled(root, 1001, dtype).cpu())) << c10::toString(dtype);
  }
  EXPECT_EQ(comm().broadcast_bytes(comm().rank() == root ? "unique id bytes" : "", root), "unique id bytes");
}

TEST(Collectives, AllgatherStacksEveryRank) {
  for (const auto dtype : {at::kFloat, at::kLong, at::kHalf}) {
    const at::Tensor gathered = comm().allgather(rank_filled(comm().rank(), 7, dtype).view({7, 1})).cpu();
    ASSERT_EQ(gathered.sizes(), (std::vector<int64_t>{comm().size(), 7, 1}));
    for (int r = 0; r < comm().size(); ++r) {
      EXPECT_TRUE(at::equal(gathered[r].view({7}), rank_filled(r, 7, dtype).cpu())) << "row " << r;
    }
  }
}

TEST(Collectives, BarrierWaitsForTheSlowestRank) {
  comm().barrier();  // every rank's clock starts after every rank arrived (however loaded the machine)
  const auto start = std::chrono::steady_clock::now();
  if (comm().rank() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  comm().barrier();
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(waited, 0.5);  // passes for a rank that left the first barrier up to 0.5 s after rank 0
}

TEST(Collectives, AnyIsTrueEverywhereWhenTrueSomewhere) {
  EXPECT_FALSE(comm().any(false));
  EXPECT_TRUE(comm().any(comm().rank() == comm().size() - 1));
}

TEST(Session, AutoBackendFollowsLaunchDeviceAndWorldSize) {
  const at::Device cuda(at::kCUDA, 0), cpu(at::kCPU);
  EXPECT_EQ(Session::resolve_backend(Backend::Auto, Launcher::Mpi, cuda, 1), Backend::Local);  // nothing to reduce
  EXPECT_EQ(Session::resolve_backend(Backend::Auto, Launcher::Single, cuda, 1), Backend::Local);
  EXPECT_EQ(Session::resolve_backend(Backend::Auto, Launcher::Mpi, cuda, 2), Backend::Nccl);
  EXPECT_EQ(Session::resolve_backend(Backend::Auto, Launcher::Env, cuda, 8), Backend::Nccl);
  EXPECT_EQ(Session::resolve_backend(Backend::Auto, Launcher::Mpi, cpu, 2), Backend::Mpi);
  EXPECT_EQ(Session::resolve_backend(Backend::Auto, Launcher::Env, cpu, 2), Backend::Gloo);
  EXPECT_EQ(Session::resolve_backend(Backend::Nccl, Launcher::Mpi, cuda, 1), Backend::Nccl);  // asked for: kept
}

TEST(Session, TheLocalRankIsKnownBeforeMpiInit) {
  if (comm().world().launcher == Launcher::Mpi) {  // what mpirun states equals what MPI computed
    EXPECT_EQ(local_rank_before_mpi_init(), comm().world().local_rank);
    return;
  }
  EXPECT_EQ(local_rank_before_mpi_init(), -1);
  setenv("SLURM_LOCALID", "3", 1);
  EXPECT_EQ(local_rank_before_mpi_init(), 3);
  setenv("SLURM_LOCALID", "x", 1);
  EXPECT_THROW(local_rank_before_mpi_init(), Error);
  unsetenv("SLURM_LOCALID");
}

// stylegan2_launch or torchrun started one per node by mpirun or srun --mpi=pmix: their ranks see the
// launcher's MPI variables beside their own RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT.
TEST(Session, RankVariablesOfALauncherUnderMpiMakeAnEnvLaunch) {
  const Launcher own = comm().world().launcher;
  if (own == Launcher::Env) GTEST_SKIP() << "the test sets the Env launch's variables itself";
  if (own != Launcher::Mpi) setenv("PMIX_RANK", "0", 1);
  EXPECT_EQ(detect_launcher(), Launcher::Mpi);
  setenv("RANK", "1", 1);
  setenv("WORLD_SIZE", "2", 1);
  EXPECT_EQ(detect_launcher(), Launcher::Mpi);  // RANK and WORLD_SIZE alone, beside MPI's: still MPI
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", "29500", 1);
  EXPECT_EQ(detect_launcher(), Launcher::Env);
  for (const char* name : {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"}) unsetenv(name);
  if (own != Launcher::Mpi) unsetenv("PMIX_RANK");
  EXPECT_EQ(detect_launcher(), own);
}

// srun --mpi=none: Slurm's task variables without any MPI process manager's.
TEST(Session, AnSrunStepWithoutAnMpiPluginIsRefused) {
  const Launcher own = comm().world().launcher;
  if (own == Launcher::Env) GTEST_SKIP() << "RANK and WORLD_SIZE are set: the Env launch wins";
  setenv("SLURM_PROCID", "1", 1);
  setenv("SLURM_STEP_NUM_TASKS", "1", 1);
  EXPECT_EQ(detect_launcher(), own);  // srun -n 1: one process either way
  setenv("SLURM_STEP_NUM_TASKS", "4", 1);
  if (own == Launcher::Mpi) {
    EXPECT_EQ(detect_launcher(), Launcher::Mpi);  // srun --mpi=pmix (or mpirun in the step): MPI's variables
  } else {
    try {
      detect_launcher();
      ADD_FAILURE() << "4 srun tasks without MPI's variables were taken as one process";
    } catch (const Error& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find("task 1 of 4"), std::string::npos) << message;
      EXPECT_NE(message.find("srun --mpi=pmix"), std::string::npos) << message;
    }
  }
  for (const char* name : {"SLURM_PROCID", "SLURM_STEP_NUM_TASKS"}) unsetenv(name);
}

TEST(Collectives, MaxOverRanksIsTheLargestValueEverywhere) {
  EXPECT_EQ(comm().max_over_ranks(comm().rank() == comm().size() - 1 ? 15 : 0), 15);
  EXPECT_EQ(comm().max_over_ranks(-1 - comm().rank()), -1);
  EXPECT_EQ(comm().max_over_ranks(int64_t(1) << 40), int64_t(1) << 40);
}

TEST(Consistency, NamesTheFirstDifferingLineOnEveryRank) {
  const std::vector<std::string> same{"G.z_dim: 512", "G.w_dim: 512"};
  EXPECT_NO_THROW(check_same_lines_on_every_rank(comm(), same, "the config"));
  if (comm().size() == 1) return;
  const std::vector<std::string> differ{"G.z_dim: 512", comm().rank() == 1 ? "G.w_dim: 64" : "G.w_dim: 512"};
  try {
    check_same_lines_on_every_rank(comm(), differ, "the config");
    ADD_FAILURE() << "no error";
  } catch (const std::exception& e) {
    const std::string message = e.what();
    const std::string expected = comm().rank() == 1
                                     ? "the config of rank 1 differs from rank 0's: 'G.w_dim: 64' here, 'G.w_dim: 512' on rank 0"
                                     : "the config of rank(s) [1] differs from rank 0's, first at 'G.w_dim: 512' on rank 0";
    EXPECT_NE(message.find(expected), std::string::npos) << message;
  }
}

TEST(Consistency, NamesTheFirstDifferingTensor) {
  NamedTensors same{{"a", at::ones({5})}, {"b", at::arange(9)}};
  EXPECT_NO_THROW(check_replicas_identical(comm(), same, "test"));
  if (comm().size() == 1) return;
  NamedTensors differ{{"a", at::ones({5})}, {"b.weight", at::full({3}, comm().rank() == 1 ? 2.0 : 1.0)}};
  try {
    check_replicas_identical(comm(), differ, "test");
    ADD_FAILURE() << "no error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("'b.weight' on rank(s) [1]"), std::string::npos) << e.what();
  }
  at::Tensor t = at::full({4}, static_cast<double>(comm().rank()));
  broadcast_tensors(comm(), {{"t", t}}, 0);
  EXPECT_TRUE(at::equal(t, at::zeros({4}, at::kDouble)));
}

// The watchdog's logic with injected faults: a collective that never completes, an asynchronous
// library error, and collectives that complete.
struct FailureLog {
  std::mutex mutex;
  std::vector<std::string> reasons;
  std::chrono::steady_clock::time_point when;
  void add(const std::string& reason) {
    std::lock_guard<std::mutex> lock(mutex);
    reasons.push_back(reason);
    when = std::chrono::steady_clock::now();
  }
  size_t count() {
    std::lock_guard<std::mutex> lock(mutex);
    return reasons.size();
  }
};

void wait_until(const std::function<bool()>& condition, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!condition() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

TEST(Watchdog, AStalledCollectiveEndsTheJobAfterTheTimeoutOnce) {
  FailureLog log;
  CollectiveWatchdog watchdog({0.3, 0.01, nullptr, nullptr, [&](const std::string& r) { log.add(r); }, nullptr});
  const auto start = std::chrono::steady_clock::now();
  watchdog.watch("allreduce of bucket 0", [] { return true; });
  watchdog.watch("allreduce of bucket 1", [] { return false; });  // a peer never joins
  watchdog.watch("allreduce of bucket 2", [] { return false; });
  wait_until([&] { return log.count() > 0; }, 5);
  ASSERT_EQ(log.count(), 1u);
  const double waited = std::chrono::duration<double>(log.when - start).count();
  EXPECT_GE(waited, 0.3);
  EXPECT_LT(waited, 2.0);
  EXPECT_NE(log.reasons[0].find("allreduce of bucket 1 has not completed after"), std::string::npos) << log.reasons[0];
  EXPECT_NE(log.reasons[0].find("(dist.timeout = 0.3 s)"), std::string::npos) << log.reasons[0];
  EXPECT_NE(log.reasons[0].find("2 collective(s) pending"), std::string::npos) << log.reasons[0];
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(log.count(), 1u);  // once
  EXPECT_TRUE(watchdog.failed());
}

TEST(Watchdog, AnAsynchronousErrorEndsTheJobAtOnce) {
  FailureLog log;
  std::atomic<bool> broken{false};
  CollectiveWatchdog watchdog({600, 0.01, nullptr,
                               [&] { return broken ? std::string("unhandled system error (remote process exited)") : ""; },
                               [&](const std::string& r) { log.add(r); }, nullptr});
  watchdog.watch("broadcast", [] { return false; });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(log.count(), 0u);
  broken = true;
  wait_until([&] { return log.count() > 0; }, 5);
  ASSERT_EQ(log.count(), 1u);
  EXPECT_EQ(log.reasons[0], "unhandled system error (remote process exited)");
}

TEST(Watchdog, CompletedCollectivesLeaveTheQueueWithoutFailure) {
  FailureLog log;
  std::atomic<bool> second_done{false};
  std::atomic<int> setup_calls{0};
  CollectiveWatchdog watchdog(
      {0.5, 0.01, [&] { ++setup_calls; }, nullptr, [&](const std::string& r) { log.add(r); }, nullptr});
  watchdog.watch("first", [] { return true; });
  watchdog.watch("second", [&] { return second_done.load(); });
  wait_until([&] { return watchdog.pending() == 1; }, 5);
  EXPECT_EQ(watchdog.pending(), 1u);
  second_done = true;
  wait_until([&] { return watchdog.pending() == 0; }, 5);
  EXPECT_EQ(watchdog.pending(), 0u);
  std::this_thread::sleep_for(std::chrono::milliseconds(600));  // past the timeout: nothing pending, no failure
  EXPECT_EQ(log.count(), 0u);
  EXPECT_EQ(setup_calls.load(), 1);
  EXPECT_FALSE(watchdog.failed());
}

TEST(Watchdog, AWatchdogStuckInItsOwnCallStillEndsTheJob) {
  FailureLog failures, stuck;
  std::atomic<bool> released{false};
  const auto start = std::chrono::steady_clock::now();  // before the watchdog's first beat
  {
    CollectiveWatchdog watchdog({0.3, 0.01, nullptr, nullptr, [&](const std::string& r) { failures.add(r); },
                                 [&](const std::string& r) { stuck.add(r); }});
    watchdog.watch("allreduce", [&] {  // a query that blocks (as cudaEventQuery behind a driver lock)
      while (!released) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      return true;
    });
    wait_until([&] { return stuck.count() > 0; }, 5);
    released = true;  // before any check can return: the destructor joins the watchdog's thread
    ASSERT_EQ(stuck.count(), 1u);
    const double waited = std::chrono::duration<double>(stuck.when - start).count();
    EXPECT_GE(waited, 0.6);  // twice the timeout
    EXPECT_LT(waited, 2.5);
    EXPECT_NE(stuck.reasons[0].find("the collective watchdog has been stuck for"), std::string::npos)
        << stuck.reasons[0];
    EXPECT_EQ(failures.count(), 0u);
  }
  EXPECT_EQ(stuck.count(), 1u);
}

// Parameters of odd shapes; "unused" never receives a gradient (counts as zeros).
NamedTensors make_parameters() {
  at::manual_seed(7);
  NamedTensors params;
  for (const auto& [name, shape] : std::vector<std::pair<std::string, std::vector<int64_t>>>{
           {"w0", {33, 7}}, {"b0", {33}}, {"w1", {5, 33}}, {"unused", {3}}, {"b1", {5}}, {"w2", {1, 5}}}) {
    params.emplace_back(name, at::randn(shape).to(comm().device()).requires_grad_(true));
  }
  return params;
}

// One round of a rank-dependent loss through the parameters (not "unused").
void backward_round(const NamedTensors& p, int round) {
  at::Tensor x = at::randn({4, 7}, at::TensorOptions().dtype(at::kFloat)).add(comm().rank() + round).to(comm().device());
  at::Tensor h = at::tanh(at::addmm(p[1].second, x, p[0].second.t()));
  h = at::tanh(at::addmm(p[4].second, h, p[2].second.t()));
  at::matmul(h, p[5].second.t()).square().mean().backward();
}

// With a shift, finish() adds it to every bucket: each gradient, the unused one's zeros too, gets it once.
void expect_reducer_matches_per_tensor(ReducerOptions options, int rounds, double shift = 0) {
  auto reduced = make_parameters();
  auto reference = make_parameters();
  GradientReducer reducer(comm(), reduced, options);
  for (int step = 0; step < 2; ++step) {  // the second step reuses the buckets
    for (auto* params : {&reduced, &reference}) {
      for (auto& [name, p] : *params) p.mutable_grad() = at::Tensor();
    }
    at::manual_seed(100 + step);
    for (int round = 0; round < rounds; ++round) {
      if (round == rounds - 1) reducer.prepare_for_final_backward();
      backward_round(reduced, round);
    }
    if (shift == 0) {
      reducer.finish(comm().size() * rounds);
    } else {
      reducer.finish(comm().size() * rounds, [shift](at::Tensor& flat) { flat.add_(shift); });
    }
    at::manual_seed(100 + step);
    for (int round = 0; round < rounds; ++round) backward_round(reference, round);
    allreduce_gradients_per_tensor(comm(), reference, comm().size() * rounds);
    for (size_t i = 0; i < reduced.size(); ++i) {
      const at::Tensor unshifted = reduced[i].second.grad() - shift;  // float32 rounding of + shift: ~1e-7 * shift
      EXPECT_TRUE(at::allclose(unshifted, reference[i].second.grad(), 1e-6, 1e-7 + 1e-6 * shift))
          << reduced[i].first << " bucket_bytes " << options.bucket_bytes << " rounds " << rounds << " shift " << shift;
    }
    EXPECT_TRUE(at::equal(reduced[3].second.grad().cpu(), at::full({3}, shift)));
  }
}

TEST(Reducer, BucketedEqualsPerTensorAllreduce) {
  for (const int64_t bucket_bytes : {int64_t(1), int64_t(200), int64_t(25) << 20}) {
    expect_reducer_matches_per_tensor({bucket_bytes, true}, 1);
    expect_reducer_matches_per_tensor({bucket_bytes, true}, 3);
  }
  expect_reducer_matches_per_tensor({200, false}, 2);
  expect_reducer_matches_per_tensor({200, true}, 2, 1);  // the first step's buckets, then the rebuilt ones
}

// Fault injection: a world of one whose collectives fail when waited for.
struct FailingWork final : Work {
  void wait() override { SG2_FAIL("injected: the collective failed"); }
};

class FailingCommunicator final : public Communicator {
 public:
  FailingCommunicator() : Communicator(World{}) {}
  std::string backend() const override { return "failing"; }
  at::Device device() const override { return comm().device(); }
  std::shared_ptr<Work> allreduce_async(std::vector<at::Tensor>, ReduceOp) override {
    ++launched;
    return std::make_shared<FailingWork>();
  }
  void broadcast(std::vector<at::Tensor>, int) override {}
  at::Tensor allgather(const at::Tensor& input) override { return input.unsqueeze(0); }
  void barrier() override {}
  void abort(const std::string&) noexcept override {}
  int launched = 0;
};

TEST(Reducer, EndsWithoutThrowingWhileAFailedCollectiveIsInFlight) {
  FailingCommunicator failing;
  auto params = make_parameters();
  {
    GradientReducer reducer(failing, params, {1, true});  // a bucket per parameter, launched as it fills
    reducer.prepare_for_final_backward();
    backward_round(params, 0);
    EXPECT_GT(failing.launched, 0);
    EXPECT_THROW(reducer.finish(1), Error);  // the error reaches the step
    reducer.prepare_for_final_backward();
    backward_round(params, 0);
  }  // in flight again: its error is logged, not thrown (a throwing destructor would end the test binary)
}

TEST(Reducer, BucketsFollowTheByteLimitInReverseOrder) {
  auto params = make_parameters();
  GradientReducer reducer(comm(), params, {200, true});  // 50 floats
  // reverse order: w2 5 | b1 5 + unused 3 + w1 165 -> w1 alone? w1 has 165 > 50 so its own bucket
  EXPECT_EQ(reducer.bucket_numels(), (std::vector<int64_t>{13, 165, 33, 231}));
}

// Runs `passes` steps of one accumulation round and returns the reducer's launch fractions.
std::vector<double> launch_fractions_after(GradientReducer& reducer, NamedTensors& params, int passes) {
  for (int pass = 0; pass < passes; ++pass) {
    for (auto& [name, p] : params) p.mutable_grad() = at::Tensor();
    reducer.prepare_for_final_backward();
    backward_round(params, 0);
    reducer.finish(comm().size());
  }
  return reducer.take_launch_fractions();
}

TEST(Reducer, LaunchFractionsAreInLaunchOrderAndRestartWithEachLayout) {
  auto params = make_parameters();
  GradientReducer overlapped(comm(), params, {200, true});
  // The first pass learns the arrival order and rebuilds the buckets: its fractions are dropped.
  EXPECT_TRUE(launch_fractions_after(overlapped, params, 1).empty());
  const std::vector<double> fractions = launch_fractions_after(overlapped, params, 2);
  ASSERT_EQ(fractions.size(), overlapped.bucket_bytes().size());
  EXPECT_LT(fractions.front(), 1.0);  // launched during backward, before finish()
  for (size_t b = 0; b < fractions.size(); ++b) {
    EXPECT_GE(fractions[b], 0.0);
    EXPECT_LE(fractions[b], 1.0);
    if (b > 0) {
      EXPECT_GE(fractions[b], fractions[b - 1]) << "bucket " << b << " launched before bucket " << b - 1;
    }
  }
  // The parameter without a gradient fills its bucket only in finish().
  EXPECT_EQ(fractions.back(), 1.0);
  EXPECT_EQ(overlapped.take_launch_fractions(), std::vector<double>(fractions.size(), 0.0));  // taken: restarted

  GradientReducer after_backward(comm(), params, {200, false});
  launch_fractions_after(after_backward, params, 1);
  EXPECT_EQ(launch_fractions_after(after_backward, params, 2), std::vector<double>(fractions.size(), 1.0));
}

// run.cuda_graphs: a phase's captured backward writes its gradients into the buckets through the
// hooks, and its replays run no hook. Here the buckets are written by hand with what the hooks
// would write (each arrived parameter's local sum over the rounds; garbage where nothing arrived),
// and finish() after prepare_for_replayed_backward() must reduce exactly that.
TEST(Reducer, AReplayedBackwardReducesWhatTheCapturedHooksWrote) {
  constexpr int kRounds = 2;
  auto params = make_parameters();
  auto reference = make_parameters();
  GradientReducer reducer(comm(), params, {200, true});
  EXPECT_THROW(reducer.prepare_for_replayed_backward(std::vector<char>(params.size(), 1)), Error);  // order unknown
  launch_fractions_after(reducer, params, 1);  // learns the bucket order
  // The captured pass: its buckets launch at finish(), none during backward.
  for (auto& [name, p] : params) p.mutable_grad() = at::Tensor();
  for (int round = 0; round < kRounds; ++round) {
    if (round == kRounds - 1) reducer.prepare_for_final_backward(/*launch_in_backward=*/false);
    backward_round(params, round);
  }
  const std::vector<char> arrivals = reducer.arrivals();
  EXPECT_EQ(arrivals, (std::vector<char>{1, 1, 1, 0, 1, 1}));  // "unused" gets none
  reducer.finish(comm().size() * kRounds);
  EXPECT_EQ(reducer.take_launch_fractions(), std::vector<double>(reducer.bucket_bytes().size(), 1.0));
  std::vector<at::Tensor> bucket_views;  // .grad after finish(): each parameter's part of its bucket
  for (auto& [name, p] : params) bucket_views.push_back(p.grad());

  // A replay on other inputs: the local sums the hooks would write, garbage where none arrived.
  at::manual_seed(300);
  for (auto& [name, p] : params) p.mutable_grad() = at::Tensor();
  for (int round = 0; round < kRounds; ++round) backward_round(params, round);
  for (size_t i = 0; i < params.size(); ++i) {
    if (arrivals[i]) {
      bucket_views[i].copy_(params[i].second.grad());
    } else {
      bucket_views[i].fill_(1e9);
    }
    params[i].second.mutable_grad() = at::Tensor();  // the optimizer's zero_grad before a phase
  }
  EXPECT_THROW(reducer.prepare_for_replayed_backward(std::vector<char>(params.size() + 1, 1)), Error);
  reducer.prepare_for_replayed_backward(arrivals);
  reducer.finish(comm().size() * kRounds);

  at::manual_seed(300);
  for (int round = 0; round < kRounds; ++round) backward_round(reference, round);
  allreduce_gradients_per_tensor(comm(), reference, comm().size() * kRounds);
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_TRUE(at::allclose(params[i].second.grad(), reference[i].second.grad(), 1e-6, 1e-7)) << params[i].first;
  }
  EXPECT_TRUE(at::equal(params[3].second.grad().cpu(), at::zeros({3})));
}

}  // namespace
}  // namespace sg2::dist
