// SPDX-License-Identifier: GPL-2.0-or-later
// The plugins' ConfiguredPolicy, loaded from ringsched.conf and reloaded when the file changes or
// when slurmctld reconfigures. A bad configuration is logged once per change with file:line and leaves
// the holder empty: the plugin then runs neutral (changes nothing) and slurmctld keeps running.
#pragma once

#include <ctime>
#include <memory>
#include <mutex>
#include <string>

#include "configured_policy.h"

namespace ringsched {

class PolicyHolder {
 public:
  // `who` prefixes log lines ("job_submit/ringsched").
  explicit PolicyHolder(std::string who) : who_(std::move(who)) {}

  // Path of ringsched.conf: $RINGSCHED_CONF, else next to slurm.conf.
  static std::string config_path();

  // The policy for the current file contents (reloaded if the file changed or `force`); null
  // when the configuration is bad. Thread-safe; the policy stays valid while the pointer is held.
  std::shared_ptr<ConfiguredPolicy> get(bool force = false);
  // The last load error ("" when the policy is good).
  std::string last_error();

 private:
  std::string who_;
  std::mutex mu_;
  std::shared_ptr<ConfiguredPolicy> policy_;
  std::string error_;
  std::string loaded_path_;
  struct timespec loaded_mtime_ = {0, 0};
  bool loaded_once_ = false;
};

}  // namespace ringsched
