// SPDX-License-Identifier: GPL-2.0-or-later
#include "slurm_test_cluster.h"

#include "config.h"
#include "process_util.h"
#include "slurm_api_compat.h"

#include <sys/stat.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <stdexcept>
#include <thread>

namespace ringtest {

namespace {

std::string harness() { return std::string(RINGSCHED_SRCDIR) + "/scripts/testcluster.sh"; }

// A command to its end, bounded like every command of the tests (process_util.h): a Slurm
// command that hangs on a stuck daemon fails its test after 300 s, with what was running.
CommandResult shell(const std::string& command) {
  CommandResult r;
  r.rc = ringsched_test::run(command, &r.out);
  return r;
}

std::unique_ptr<SlurmTestCluster> g_cluster;

void stop_at_exit() {
  if (!g_cluster) return;
  const CommandResult r = shell(harness() + " down");
  std::printf("%s", r.out.c_str());
}

}  // namespace

SlurmTestCluster& SlurmTestCluster::get(const std::string& name, bool plugins) {
  if (!g_cluster) {
    g_cluster.reset(new SlurmTestCluster(name, plugins));
    std::atexit(stop_at_exit);
  } else if (g_cluster->plugins_ != plugins) {
    g_cluster->set_plugins(plugins);
  }
  return *g_cluster;
}

SlurmTestCluster::SlurmTestCluster(const std::string& name, bool plugins) {
  // In the temporary folder, not the build folder: tests also submit as an ordinary user, who
  // must reach slurm.conf, the plugins and the munge socket, and a checkout may sit below a
  // folder only its owner can enter (/root). One folder per build tree and test program.
  char tag[32];
  std::snprintf(tag, sizeof tag, "%016zx", std::hash<std::string>()(RINGSCHED_BUILDDIR));
  dir_ = std::filesystem::temp_directory_path().string() + "/ringsched-cluster-" + tag + "-" + name;
  mkdir(dir_.c_str(), 0755);
  chmod(dir_.c_str(), 0755);
  setenv("RINGSCHED_CLUSTER_DIR", dir_.c_str(), 1);
  // scripts/test.sh stops a program that runs past its deadline with a signal, and atexit() does
  // not run then: it reads this note and takes the cluster down itself.
  if (const char* note = std::getenv("RINGSCHED_TEST_CLUSTER_NOTE")) std::ofstream(note) << dir_ << "\n";
  // The commands of the Slurm this build is configured for (scripts/testcluster.sh starts its
  // daemons), before any other on PATH.
  if (*RINGSCHED_SLURM_BINDIR) {
    const char* path = std::getenv("PATH");
    setenv("PATH", (std::string(RINGSCHED_SLURM_BINDIR) + ":" + RINGSCHED_SLURM_SBINDIR + ":" + (path ? path : "")).c_str(), 1);
  }
  setenv("SLURM_CONF", (dir_ + "/slurm.conf").c_str(), 1);
  setenv("RINGSCHED_CONF", conf_path().c_str(), 1);
  write_ringsched_conf("");
  up(plugins);
  // Ordinary users must run these very commands: where they cannot (a prefix below /root),
  // their shell would find another Slurm's sbatch on PATH, or none, and every test of theirs
  // would fail with no hint why.
  if (*RINGSCHED_SLURM_BINDIR) {
    const std::string sbatch = std::string(RINGSCHED_SLURM_BINDIR) + "/sbatch";
    const CommandResult r = shell("cd / && runuser -u nobody -- '" + sbatch + "' --version");
    if (r.rc != 0)
      throw std::runtime_error("ordinary users cannot run " + sbatch + " (" + r.out +
                               "): build that Slurm where every user can read it (scripts/build-slurm.sh "
                               "uses /var/cache/ringsched as root, RINGSCHED_SLURM_CACHE)");
  }
  ensure_user(kSiteUser);  // submit()'s user, made once here rather than checked per job
}

void SlurmTestCluster::up(bool plugins) {
  const std::string cmd = harness() + " up" + (plugins ? " --plugins" : "") +
                          " --builddir=" + RINGSCHED_BUILDDIR;
  const CommandResult r = shell(cmd);
  std::printf("%s", r.out.c_str());
  if (r.rc != 0) throw std::runtime_error("test cluster did not come up: " + r.out);
  plugins_ = plugins;
}

void SlurmTestCluster::set_plugins(bool plugins) {
  if (plugins != plugins_) up(plugins);
}

void SlurmTestCluster::write_ringsched_conf(const std::string& extra_lines) {
  const std::string src = RINGSCHED_SRCDIR;
  std::ofstream out(conf_path() + ".tmp");
  out << "# written by the ringsched tests\n"
      << "ProfileFiles=" << src << "/data/profiles/gavel.csv\n"
      << "FeatureFile=" << src << "/data/model_features.csv\n"
      << "PlanFile=" << plan_path() << "\n"
      << "MaxGpusPerJob=16\n"
      << "ReplanInterval=2\nRestartCost=5\nMinGainMultiple=0\nMinResizeInterval=0\n"
      << extra_lines;
  out.close();
  std::rename((conf_path() + ".tmp").c_str(), conf_path().c_str());
}

SlurmTestCluster::ConfOverride::ConfOverride(SlurmTestCluster& cluster, const std::string& extra_lines)
    : cluster_(cluster) {
  cluster_.write_ringsched_conf(extra_lines);
  reconfigured_ = cluster_.run("scontrol reconfigure");
}

SlurmTestCluster::ConfOverride::~ConfOverride() {
  cluster_.write_ringsched_conf("");
  cluster_.run("scontrol reconfigure");
}

CommandResult SlurmTestCluster::run(const std::string& command) const { return shell(command); }

unsigned SlurmTestCluster::submit(const std::string& args, std::string* out, const char* user) const {
  return submit_as(user, "-o /dev/null " + args, "/", out);
}

std::string SlurmTestCluster::job_field(unsigned job, const std::string& field) const {
  const CommandResult r = shell("scontrol show job " + std::to_string(job));
  const std::string key = " " + field + "=";
  size_t at = r.out.find(key);
  if (at == std::string::npos) {
    if (r.out.compare(0, field.size() + 1, field + "=") != 0) return "";
    at = 0;
  } else {
    at += 1;
  }
  at += field.size() + 1;
  size_t end = r.out.find_first_of(" \n", at);
  // AdminComment and Comment run to the end of the line.
  if (field == "AdminComment" || field == "Comment") end = r.out.find('\n', at);
  std::string value = r.out.substr(at, end == std::string::npos ? std::string::npos : end - at);
  while (!value.empty() && value.back() == ' ') value.pop_back();  // scontrol pads the line
  return value;
}

bool SlurmTestCluster::ctld_up() const { return shell("scontrol ping").out.find("is UP") != std::string::npos; }

void SlurmTestCluster::restart_ctld() {
  const CommandResult r = shell(harness() + " restart-ctld");
  if (r.rc != 0) throw std::runtime_error("restart-ctld failed: " + r.out);
}

void SlurmTestCluster::cancel_all() {
  shell("ids=$(squeue -h -o %i); [ -z \"$ids\" ] || scancel $ids");  // every user's: tests submit as ordinary users
  wait_for([this] { return shell("squeue -h -t all -o %i | wc -l").out == "0\n" ||
                           shell("squeue -h -t R,PD,CG,S -o %i | wc -l").out == "0\n"; },
           30);
}

void SlurmTestCluster::ensure_user(const std::string& name) {
  if (shell("id -u " + name).rc == 0) return;
  const CommandResult r = shell("useradd -m -s /bin/sh " + name);
  if (r.rc != 0 && shell("id -u " + name).rc != 0)
    throw std::runtime_error("cannot create the test user " + name + ": " + r.out);
}

CommandResult SlurmTestCluster::run_as(const std::string& user, const std::string& command,
                                       const std::string& dir) const {
  // runuser keeps the environment (SLURM_CONF of this cluster); HOME and USER are the user's.
  std::string quoted;
  for (char c : "cd '" + dir + "' && " + command) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return shell("HOME=~" + user + " USER=" + user + " runuser -u " + user + " -- sh -c '" + quoted + "'");
}

unsigned SlurmTestCluster::submit_as(const std::string& user, const std::string& args, const std::string& dir,
                                     std::string* out) const {
  const CommandResult r = run_as(user, "sbatch --parsable " + args, dir);
  if (out) *out = r.out;
  if (r.rc != 0) return 0;
  return static_cast<unsigned>(std::strtoul(r.out.c_str(), nullptr, 10));
}

std::string SlurmTestCluster::stage_programs() const {
  const std::string stage = dir_ + "/stage";
  const CommandResult r = shell(std::string("'") + RINGSCHED_SRCDIR + "/scripts/stage-programs.sh' '" +
                                RINGSCHED_BUILDDIR + "' '" + stage + "'");
  if (r.rc != 0) throw std::runtime_error("cannot stage the programs: " + r.out);
  return stage;
}

std::string SlurmTestCluster::stage_env() const { return "export LD_LIBRARY_PATH=" + dir_ + "/stage/lib"; }

std::string SlurmTestCluster::gpu_tres(const std::string& spec) {
  return std::string(ringsched::kGpuTres) + ":" + spec;
}

bool SlurmTestCluster::wait_for(const std::function<bool()>& cond, double seconds, double poll_s) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (;;) {
    if (cond()) return true;
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::duration<double>(poll_s));
  }
}

}  // namespace ringtest
