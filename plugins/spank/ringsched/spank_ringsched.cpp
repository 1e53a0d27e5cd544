// SPDX-License-Identifier: GPL-2.0-or-later
// spank/ringsched: the user-facing options of ring jobs (--ring-model, --ring-gpus, ...).
// Each option is validated as sbatch/srun/salloc reads it (a bad value stops the submission with
// a message naming the option), then the whole request is checked and handed to
// job_submit/ringsched through the job's SPANK environment (RING_MODEL=..., RING_GPUS=..., ...),
// which job_submit validates again. Public <slurm/spank.h> only: this plugin is loaded by every
// client command and every slurmstepd, so it stays small and never links the policy library.
#include <string>
#include <vector>

extern "C" {
#include <slurm/spank.h>
}

#include "ring_request.h"

// The loader looks these symbols up by name: C linkage and external linkage (a namespace-scope
// const has internal linkage in C++ unless declared extern first).
extern "C" {
extern const char plugin_name[];
extern const char plugin_type[];
extern const unsigned int plugin_version;
extern const unsigned int spank_plugin_version;
const char plugin_name[] = "ringsched";
const char plugin_type[] = "spank";
const unsigned int plugin_version = SLURM_VERSION_NUMBER;
const unsigned int spank_plugin_version = 1;

int slurm_spank_init(spank_t sp, int ac, char** av);
int slurm_spank_init_post_opt(spank_t sp, int ac, char** av);
}

namespace {

ringsched::RingRequest g_request;

// Option callbacks get the option's index in ring_options() as `val`.
int on_option(int val, const char* optarg, int /*remote*/) {
  try {
    const auto& options = ringsched::ring_options();
    if (val < 0 || static_cast<size_t>(val) >= options.size()) return -1;
    std::string error;
    if (!g_request.set(options[val].option, optarg ? optarg : "", error)) {
      slurm_error("%s", error.c_str());
      return -1;
    }
    return 0;
  } catch (...) {
    slurm_error("ringsched: out of memory while reading --%s", ringsched::ring_options()[val].option);
    return -1;
  }
}

}  // namespace

extern "C" int slurm_spank_init(spank_t sp, int /*ac*/, char** /*av*/) {
  // Options matter where users type them (local: srun, allocator: sbatch/salloc) and in the job
  // step (remote), where Slurm replays them so that the job's own plugins see the same values.
  const spank_context_t ctx = spank_context();
  if (ctx != S_CTX_LOCAL && ctx != S_CTX_ALLOCATOR && ctx != S_CTX_REMOTE) return 0;
  const auto& options = ringsched::ring_options();
  for (size_t i = 0; i < options.size(); ++i) {
    struct spank_option opt = {};
    opt.name = const_cast<char*>(options[i].option);
    opt.arginfo = const_cast<char*>(options[i].arginfo);
    opt.usage = const_cast<char*>(options[i].usage);
    opt.has_arg = options[i].arginfo ? 1 : 0;
    opt.val = static_cast<int>(i);
    opt.cb = on_option;
    if (spank_option_register(sp, &opt) != ESPANK_SUCCESS) {
      slurm_error("ringsched: cannot register option --%s", options[i].option);
      return -1;
    }
  }
  return 0;
}

extern "C" int slurm_spank_init_post_opt(spank_t sp, int /*ac*/, char** /*av*/) {
  const spank_context_t ctx = spank_context();
  if (ctx != S_CTX_LOCAL && ctx != S_CTX_ALLOCATOR) return 0;
  if (!g_request.present) return 0;
  try {
    // The request goes to the job even when it is invalid: with the plugin "optional" in
    // plugstack.conf, sbatch ignores our -1 and submits, and job_submit/ringsched must then see a
    // ring request to refuse (with this same message), not an ordinary job.
    for (const auto& [name, value] : g_request.to_env()) {
      const spank_err_t rc = spank_job_control_setenv(sp, name.c_str(), value.c_str(), 1);
      if (rc != ESPANK_SUCCESS) {
        slurm_error("ringsched: cannot pass %s to the job: %s", name.c_str(), spank_strerror(rc));
        return -1;
      }
    }
    std::string error;
    if (!g_request.validate(error)) {
      slurm_error("%s", error.c_str());
      return -1;
    }
    return 0;
  } catch (...) {
    slurm_error("ringsched: out of memory while preparing the ring options");
    return -1;
  }
}
