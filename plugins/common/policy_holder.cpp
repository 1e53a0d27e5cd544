// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy_holder.h"

#include <sys/stat.h>

#include <cstdlib>
#include <exception>

#include "slurm_compat.h"

namespace ringsched {

std::string PolicyHolder::config_path() {
  if (const char* env = std::getenv("RINGSCHED_CONF"); env && *env) return env;
  char* p = get_extra_conf_path(const_cast<char*>("ringsched.conf"));
  std::string path = p ? p : "/etc/slurm/ringsched.conf";
  xfree(p);
  return path;
}

std::shared_ptr<ConfiguredPolicy> PolicyHolder::get(bool force) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string path = config_path();
  struct stat st {};
  const bool exists = stat(path.c_str(), &st) == 0;
  const bool changed = !loaded_once_ || path != loaded_path_ || !exists ||
                       st.st_mtim.tv_sec != loaded_mtime_.tv_sec ||
                       st.st_mtim.tv_nsec != loaded_mtime_.tv_nsec;
  if (!force && !changed) return policy_;
  const bool first = !loaded_once_;
  const std::string old_error = error_;
  loaded_once_ = true;
  loaded_path_ = path;
  loaded_mtime_ = exists ? st.st_mtim : timespec{0, 0};
  try {
    auto policy = std::make_shared<ConfiguredPolicy>(RingschedConf::load(path));
    policy_ = policy;
    error_.clear();
    info("%s: loaded %s: policy %s, %zu profile points", who_.c_str(), path.c_str(),
         policy_name(policy->conf().planner.policy), policy->model().table().points().size());
  } catch (const std::exception& e) {
    policy_.reset();
    error_ = e.what();
    // Once per change, not on every call while the file stays bad.
    if (first || force || error_ != old_error || changed)
      ::error("%s: %s; running neutral (no ring scheduling) until it is fixed", who_.c_str(),
            error_.c_str());
  }
  return policy_;
}

std::string PolicyHolder::last_error() {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

}  // namespace ringsched
