// SPDX-License-Identifier: GPL-2.0-or-later
// Importers for the public reference tables in ../shared/data (see its README for the sources and
// licences). They turn each table into the project's profile format (DESIGN 5).
#pragma once

#include <string>

#include "ringsched/model.h"

namespace ringsched {

struct ImportStats {
  int rows = 0;           // data rows read
  int points = 0;         // profile points produced
  int skipped = 0;        // cells or rows skipped (not measured: empty, nan, 0)
  std::string skipped_why;
};

// Gavel job-type names to model ids: "ResNet-18 (batch size 16)" -> "resnet18-b16",
// "A3C" -> "a3c". Throws InputError for a name it cannot read.
std::string gavel_model_id(const std::string& job_type);
// The batch in a Gavel job-type name (0 when it names none).
double gavel_batch(const std::string& job_type);

// gavel/throughputs_isolated.csv: job_type,scale_factor,worker_type,throughput_steps_per_s.
// Rows whose worker_type ends in "_unconsolidated" (workers spread over servers) and rows of zero
// throughput are skipped and counted.
ProfileTable import_gavel_throughputs(const std::string& path, ImportStats* stats = nullptr);

// elasticflow/throughputs_<TYPE>/<model>.csv: global_batch_size,1,2,4,...,64. Models become
// "<model>-b<batch>"; empty, nan and 0 cells are not measurements and are skipped (counted).
ProfileTable import_elasticflow_dir(const std::string& dir, const std::string& gpu_type,
                                    ImportStats* stats = nullptr);

}  // namespace ringsched
