#pragma once
// Improved precision and recall (Kynkäänniemi et al. 2019), as stylegan2-ada-pytorch's
// metrics/precision_recall.py computes them: each feature set spans a manifold, the union of balls
// around its points whose radius is the distance to the point's nhood-th nearest neighbour (the
// (nhood + 1)-th smallest distance, the point itself included). Precision is the fraction of fakes
// inside the reals' manifold, recall the fraction of reals inside the fakes'. Features are rounded to
// float16 as the reference stores them; distances are float32 (torch.cdist, as the reference, which
// runs it in float16 on the GPU).
//
// Distributed: rows are cut into blocks of `block_rows`, block b runs on rank b % world size, and each
// block streams over the manifold in blocks of `block_columns`, keeping the nhood + 1 smallest
// distances per row. Every block is the same computation on any rank, so the result does not depend
// on the world size; the per-row results meet in one all-reduce per pass.

#include "sg2/distributed/communicator.h"

#include <ATen/ATen.h>

namespace sg2::metrics {

struct PrecisionRecall {
  double precision = 0;
  double recall = 0;
};

struct PrecisionRecallBlocks {
  int64_t rows = 1024;
  int64_t columns = 8192;
};

// reals [Nr, D], fakes [Nf, D] (float, any device; the same on every rank, which all call it).
PrecisionRecall precision_recall(dist::Communicator& comm, const at::Tensor& reals, const at::Tensor& fakes,
                                 int64_t nhood, PrecisionRecallBlocks blocks = {});

// The plain reference on one process: whole distance matrices, kthvalue and any, as the reference.
PrecisionRecall precision_recall_reference(const at::Tensor& reals, const at::Tensor& fakes, int64_t nhood);

}  // namespace sg2::metrics
