// SPDX-License-Identifier: GPL-2.0-or-later
// A ring job's request as users state it with the SPANK options (--ring-model, --ring-gpus, ...).
// One parser serves both ends: the SPANK plugin validates each option as sbatch reads it, and
// job_submit/ringsched parses the same values again from the job's SPANK environment, because
// that environment comes from the client and is not trusted. No Slurm and no policy library here.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ringsched {

struct RingRequest {
  static constexpr int kMaxGpus = 4096;
  static constexpr int kMaxTypes = 16;

  bool present = false;        // any --ring-* option given
  std::string model;           // --ring-model
  int min_gpus = 0;            // --ring-gpus=MIN-MAX (0: not given)
  int max_gpus = 0;
  int elastic = -1;            // --ring-elastic (1) / --ring-fixed (0); -1: not given
  bool spb = false;            // --ring-spb
  long batch = 0;              // --ring-batch (global batch; 0: the profile's)
  double iterations = 0;       // --ring-iters (0: unknown)
  std::vector<std::string> types;  // --ring-types, lower case

  // Each setter validates one option's value; on error it returns false and sets `error` to a
  // sentence naming the option. `option` is the user-visible name without dashes.
  bool set(const std::string& option, const std::string& value, std::string& error);
  // Cross-option checks once all options are in (model required, elastic vs fixed, ...).
  bool validate(std::string& error) const;

  // The job's SPANK environment: names and values (without the SPANK_ prefix Slurm may add).
  std::vector<std::pair<std::string, std::string>> to_env() const;
  // Parses entries "NAME=VALUE" (optionally "SPANK_NAME=VALUE"); entries that are not ours are
  // ignored. Returns false with `error` set for a bad value.
  bool from_env(const std::vector<std::string>& entries, std::string& error);

  bool is_elastic() const { return elastic != 0 && max_gpus > min_gpus; }
};

// The option names, their environment names and help texts, in the order shown by sbatch --help.
struct RingOptionInfo {
  const char* option;    // "ring-model"
  const char* env;       // "RING_MODEL"
  const char* arginfo;   // "NAME", or nullptr for a flag
  const char* usage;
};
const std::vector<RingOptionInfo>& ring_options();

}  // namespace ringsched
