// SPDX-License-Identifier: GPL-2.0-or-later
// The real local Slurm cluster of scripts/testcluster.sh, for integration tests: one cluster per
// test program (its own state directory and ports under the build tree), started on first use and
// stopped when the program exits. Commands run as real processes with this cluster's SLURM_CONF.
#pragma once

#include <functional>
#include <string>

namespace ringtest {

struct CommandResult {
  int rc = -1;
  std::string out;  // stdout and stderr together
};

class SlurmTestCluster {
 public:
  // Brings the cluster up with or without the ringsched plugins (restarting it if the setting
  // differs). `name` picks the state directory (one per test program).
  static SlurmTestCluster& get(const std::string& name, bool plugins);

  const std::string& dir() const { return dir_; }
  std::string conf_path() const { return dir_ + "/ringsched.conf"; }
  std::string plan_path() const { return dir_ + "/plan.json"; }
  std::string slurmctld_log() const { return dir_ + "/log/slurmctld.log"; }

  CommandResult run(const std::string& command) const;
  // The ordinary users of the tests, one list so that every program agrees (and the CI machine
  // gains three accounts, not one per program). kSiteUser owns submit()'s jobs by default (made
  // with the cluster); tests that need owners apart use kOwner (the jobs under test) and kOther
  // (a second user who competes or interferes), made with ensure_user().
  static constexpr const char* kOwner = "ringtest1";
  static constexpr const char* kOther = "ringtest2";
  static constexpr const char* kSiteUser = "ringtest3";
  // sbatch --parsable -o /dev/null ... as `user`, an ordinary user, from "/": the job id, or 0
  // (and `out` holds the error) when rejected. Jobs are users' work; root only acts as the admin.
  unsigned submit(const std::string& args, std::string* out = nullptr, const char* user = kSiteUser) const;
  // One field of `scontrol show job` (e.g. "JobState", "NodeList", "AdminComment").
  std::string job_field(unsigned job, const std::string& field) const;
  bool ctld_up() const;
  void set_plugins(bool plugins);
  void restart_ctld();
  // Cancels every job and waits until none is left holding resources.
  void cancel_all();
  // Writes ringsched.conf (the given lines, with ProfileFiles/FeatureFile/PlanFile added).
  void write_ringsched_conf(const std::string& extra_lines);

  // ringsched.conf with `extra_lines`, slurmctld reconfigured, for the life of this object; then
  // the default lines and another reconfigure, also when the test fails in between (a later test
  // of the same program would otherwise run on this one's settings).
  class ConfOverride {
   public:
    ConfOverride(SlurmTestCluster& cluster, const std::string& extra_lines);
    ~ConfOverride();
    ConfOverride(const ConfOverride&) = delete;
    ConfOverride& operator=(const ConfOverride&) = delete;
    const CommandResult& reconfigured() const { return reconfigured_; }  // the first reconfigure

   private:
    SlurmTestCluster& cluster_;
    CommandResult reconfigured_;
  };

  static bool wait_for(const std::function<bool()>& cond, double seconds, double poll_s = 0.25);
  // A GPU request as this build's Slurm spells it in TresPerNode: "gres:gpu:" + spec on 22.05,
  // "gres/gpu:" + spec by 24.11 (slurm_api_compat.h).
  static std::string gpu_tres(const std::string& spec);

  // An ordinary user of this machine for the tests (ringtest1, ringtest2: useradd with a home in
  // /home), made if missing. Throws when it cannot be made.
  static void ensure_user(const std::string& name);
  // `command` run by `user` (runuser) in folder `dir`, with this cluster's environment.
  CommandResult run_as(const std::string& user, const std::string& command, const std::string& dir = "/") const;
  // sbatch --parsable ... as `user` from folder `dir`: the job id, or 0 (`out` holds the error).
  unsigned submit_as(const std::string& user, const std::string& args, const std::string& dir,
                     std::string* out = nullptr) const;
  // ringrun, ringrun-train, libringrt and the Gavel profiles copied to DIR/stage (mode 0755) by
  // scripts/stage-programs.sh, so that ordinary users can run them wherever the build tree is (a
  // checkout may sit below a folder only its owner can enter). Returns the folder; jobs need
  // `stage_env()` in their script.
  std::string stage_programs() const;
  // "export LD_LIBRARY_PATH=...": what a job script needs to run the staged programs.
  std::string stage_env() const;

 private:
  SlurmTestCluster(const std::string& name, bool plugins);
  void up(bool plugins);
  std::string dir_;
  bool plugins_ = false;
};

}  // namespace ringtest
