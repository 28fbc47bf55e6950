#include "sg2/metrics/precision_recall.h"

#include "sg2/core/error.h"

#include <functional>

namespace sg2::metrics {

namespace {

// As the reference keeps features: float16, here widened again for float32 distances.
at::Tensor as_stored(const at::Tensor& features) { return features.to(at::kHalf).to(at::kFloat); }

at::Tensor distances(const at::Tensor& rows, const at::Tensor& columns) {  // [R, D], [C, D] -> [R, C]
  return at::cdist(rows.unsqueeze(0), columns.unsqueeze(0)).squeeze(0);
}

// Calls compute(start, count) for the blocks of `num_rows` rows that this rank owns.
void for_owned_blocks(dist::Communicator& comm, int64_t num_rows, int64_t block_rows,
                      const std::function<void(int64_t start, int64_t count)>& compute) {
  for (int64_t block = comm.rank(); block * block_rows < num_rows; block += comm.size()) {
    const int64_t start = block * block_rows;
    compute(start, std::min(block_rows, num_rows - start));
  }
}

// Calls visit(start, distances [R, C]) for the manifold's blocks of columns.
void for_column_blocks(const at::Tensor& rows, const at::Tensor& manifold, int64_t block_columns,
                       const std::function<void(int64_t start, const at::Tensor& distances)>& visit) {
  const int64_t n = manifold.size(0);
  for (int64_t start = 0; start < n; start += block_columns)
    visit(start, distances(rows, manifold.narrow(0, start, std::min(block_columns, n - start))));
}

// [N]: the distance from each manifold point to its nhood-th neighbour, the (nhood + 1)-th smallest
// distance to the manifold (itself at 0 included), on every rank.
at::Tensor neighbourhood_radii(dist::Communicator& comm, const at::Tensor& manifold, int64_t nhood,
                               const PrecisionRecallBlocks& blocks) {
  at::Tensor radii = at::zeros({manifold.size(0)}, manifold.options());
  for_owned_blocks(comm, manifold.size(0), blocks.rows, [&](int64_t start, int64_t count) {
    at::Tensor nearest;  // [count, <= nhood + 1]: the smallest distances so far
    for_column_blocks(manifold.narrow(0, start, count), manifold, blocks.columns,
                      [&](int64_t, const at::Tensor& block) {
                        const at::Tensor candidates = nearest.defined() ? at::cat({nearest, block}, 1) : block;
                        const int64_t keep = std::min(nhood + 1, candidates.size(1));
                        nearest = std::get<0>(candidates.topk(keep, 1, /*largest=*/false));
                      });
    radii.narrow(0, start, count).copy_(std::get<0>(nearest.max(1)));
  });
  comm.allreduce({radii}, dist::ReduceOp::Sum);  // each row is non-zero on its owner only: exact
  return radii;
}

// The fraction of probes inside the manifold: within the radius of at least one manifold point.
double fraction_inside(dist::Communicator& comm, const at::Tensor& probes, const at::Tensor& manifold,
                       const at::Tensor& radii, const PrecisionRecallBlocks& blocks) {
  at::Tensor inside = at::zeros({probes.size(0)}, probes.options());  // [M] 1: inside
  for_owned_blocks(comm, probes.size(0), blocks.rows, [&](int64_t start, int64_t count) {
    at::Tensor hit = at::zeros({count}, probes.options().dtype(at::kBool));
    for_column_blocks(probes.narrow(0, start, count), manifold, blocks.columns,
                      [&](int64_t column, const at::Tensor& block) {
                        hit.logical_or_((block <= radii.narrow(0, column, block.size(1)).unsqueeze(0)).any(1));
                      });
    inside.narrow(0, start, count).copy_(hit);
  });
  comm.allreduce({inside}, dist::ReduceOp::Sum);
  return inside.to(at::kDouble).sum().item<double>() / static_cast<double>(probes.size(0));
}

void check_features(const at::Tensor& reals, const at::Tensor& fakes, int64_t nhood) {
  SG2_CHECK(nhood >= 1, "precision/recall needs a neighbourhood size >= 1, got {}", nhood);
  SG2_CHECK(reals.dim() == 2 && fakes.dim() == 2 && reals.size(1) == fakes.size(1),
            "precision/recall needs features [N, D] of one D, got reals {} and fakes {}", reals.sizes(), fakes.sizes());
  SG2_CHECK(reals.size(0) > nhood && fakes.size(0) > nhood,
            "precision/recall with neighbourhood {} needs more than {} features on each side, got {} reals and {} "
            "fakes",
            nhood, nhood, reals.size(0), fakes.size(0));
}

}  // namespace

PrecisionRecall precision_recall(dist::Communicator& comm, const at::Tensor& reals, const at::Tensor& fakes,
                                 int64_t nhood, PrecisionRecallBlocks blocks) {
  check_features(reals, fakes, nhood);
  SG2_CHECK(blocks.rows > 0 && blocks.columns > 0, "precision/recall blocks must be positive, got {} x {}", blocks.rows,
            blocks.columns);
  const at::Tensor real = as_stored(reals), fake = as_stored(fakes);
  PrecisionRecall result;
  result.precision = fraction_inside(comm, fake, real, neighbourhood_radii(comm, real, nhood, blocks), blocks);
  result.recall = fraction_inside(comm, real, fake, neighbourhood_radii(comm, fake, nhood, blocks), blocks);
  return result;
}

PrecisionRecall precision_recall_reference(const at::Tensor& reals, const at::Tensor& fakes, int64_t nhood) {
  check_features(reals, fakes, nhood);
  const auto fraction_inside_manifold = [nhood](const at::Tensor& manifold, const at::Tensor& probes) {
    const at::Tensor radii = std::get<0>(distances(manifold, manifold).kthvalue(nhood + 1, 1));  // [N]
    return (distances(probes, manifold) <= radii.unsqueeze(0)).any(1).to(at::kDouble).mean().item<double>();
  };
  const at::Tensor real = as_stored(reals), fake = as_stored(fakes);
  return {fraction_inside_manifold(real, fake), fraction_inside_manifold(fake, real)};
}

}  // namespace sg2::metrics
