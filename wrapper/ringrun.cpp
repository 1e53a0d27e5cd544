// SPDX-License-Identifier: GPL-2.0-or-later
// ringrun: the job wrapper of ringsched. Inside an sbatch script (or locally with --gpus), it
// launches one worker per GPU with the ring runtime's settings, watches them, and handles three
// events the same way -- a resize request, Slurm's timeout/preemption signal (USR1) and SIGTERM:
// the workers checkpoint at the next iteration boundary, ringrun verifies the checkpoint, then
// restarts the job at the new size (under Slurm: requeue with hold, update, release; locally:
// relaunch the workers). See ringrun(1).
#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint.h"
#include "cli.h"
#include "loopback.h"
#include "profile_report.h"
#include "resize_note.h"
#include "resize_watch.h"
#include "ringsched/model.h"
#include "slurm_job.h"
#include "wrapper_env.h"

extern char** environ;

using ringrun::parse_int;

namespace {

constexpr int kExitStopped = 75;  // the workers' "stopped at a checkpoint on request"
// How often the watch loop reads the job's notes from slurmctld without a SIGUSR2.
constexpr std::chrono::seconds kJobReadEvery(3);

volatile sig_atomic_t g_signal = 0;
void on_signal(int sig) { g_signal = sig; }

void log(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void log(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::fputs("ringrun: ", stdout);
  std::vprintf(fmt, ap);
  std::fputc('\n', stdout);
  std::fflush(stdout);
  va_end(ap);
}

struct Options {
  int gpus = 0;                 // workers (0: from the Slurm allocation)
  int max_gpus = 1024;          // bound for resize requests
  std::string ckpt_dir;
  std::string model;            // the job's model, for emulation and reports
  std::string gpu_type;
  std::string profiles;
  std::string report;           // profile CSV that receives validated measurements
  double report_factor = 3.0;
  std::string resize_file;
  int port = 0;
  int grace_s = 60;             // how long workers get to checkpoint before SIGKILL
  int peer_timeout_ms = 30000;  // RINGRT_TIMEOUT_MS for the workers
  int node_workers = 0;         // internal: launcher of this node's share of a multi-node job
  bool no_requeue = false;
  std::vector<std::string> cmd;
};

void usage(FILE* f) {
  std::fputs(
      "usage: ringrun [options] -- CMD [ARGS...]\n"
      "Runs one worker of CMD per GPU with RINGRT_* set; on a resize request, SIGUSR1 (Slurm's\n"
      "--signal=B:USR1@T) or SIGTERM, the workers checkpoint and the job restarts at the new size.\n"
      "  --gpus=N            workers to run (default: the GPUs Slurm allocated; required outside Slurm)\n"
      "  --ckpt-dir=DIR      checkpoints, secret, events, private to you (default: $SLURM_SUBMIT_DIR/\n"
      "                      ringrun-JOBID if only you can write there, else ~/.ringrun/ringrun-JOBID)\n"
      "  --model=M           the job's model (exported as RINGRUN_MODEL; bounds reports)\n"
      "  --gpu-type=T        GPU type (default: from the job's gres request)\n"
      "  --profiles=CSV      throughput profiles (exported as RINGRUN_PROFILES)\n"
      "  --report=CSV        append validated measured iterations/s to this profile CSV\n"
      "  --report-factor=F   accept a measurement within F x the prediction (default 3)\n"
      "  --resize-file=FILE  resize requests: a GPU count in this file (default DIR/resize-request);\n"
      "                      ignored for jobs whose size the ringsched planner decides\n"
      "  --max-gpus=N        largest size a request may ask for (default 1024)\n"
      "  --port=P            ring master port (default: libringrt's, from the job id; any free\n"
      "                      port outside a job)\n"
      "  --grace=S           seconds workers get to checkpoint (default 60)\n"
      "  --peer-timeout=MS   ring peer deadline, RINGRT_TIMEOUT_MS (default 30000; the environment's wins)\n"
      "  --no-requeue        on a stop event only checkpoint and exit 75 (no Slurm requeue)\n"
      "Exit: the workers' status when they finish; 75 stopped at a checkpoint; 1 a worker failed.\n",
      f);
}

int parse(int argc, char** argv, Options* o) {
  enum { GPUS = 1, CKPT, MODEL, TYPE, PROF, REPORT, FACTOR, RFILE, MAXG, PORT, GRACE, NOREQ, PTIME, NODEW, HELP };
  static const option opts[] = {{"gpus", 1, nullptr, GPUS},          {"ckpt-dir", 1, nullptr, CKPT},
                                {"model", 1, nullptr, MODEL},        {"gpu-type", 1, nullptr, TYPE},
                                {"profiles", 1, nullptr, PROF},      {"report", 1, nullptr, REPORT},
                                {"report-factor", 1, nullptr, FACTOR}, {"resize-file", 1, nullptr, RFILE},
                                {"max-gpus", 1, nullptr, MAXG},      {"port", 1, nullptr, PORT},
                                {"grace", 1, nullptr, GRACE},        {"no-requeue", 0, nullptr, NOREQ},
                                {"peer-timeout", 1, nullptr, PTIME}, {"node-workers", 1, nullptr, NODEW},
                                {"help", 0, nullptr, HELP},          {nullptr, 0, nullptr, 0}};
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "+", opts, nullptr)) != -1) {
    const char* bad = nullptr;
    switch (c) {
      case GPUS: if (!parse_int(optarg, 1, 4096, &o->gpus)) bad = "--gpus (1..4096)"; break;
      case CKPT: o->ckpt_dir = optarg; break;
      case MODEL: o->model = optarg; break;
      case TYPE: o->gpu_type = ringsched::normalize_type(optarg); break;
      case PROF: o->profiles = optarg; break;
      case REPORT: o->report = optarg; break;
      case FACTOR: {
        char* e = nullptr;
        o->report_factor = std::strtod(optarg, &e);
        if (!e || *e || !(o->report_factor > 1 && o->report_factor <= 100)) bad = "--report-factor (1..100]";
        break;
      }
      case RFILE: o->resize_file = optarg; break;
      case MAXG: if (!parse_int(optarg, 1, 4096, &o->max_gpus)) bad = "--max-gpus (1..4096)"; break;
      case PORT: if (!parse_int(optarg, 1024, 65535, &o->port)) bad = "--port (1024..65535)"; break;
      case GRACE: if (!parse_int(optarg, 1, 3600, &o->grace_s)) bad = "--grace (1..3600)"; break;
      case NOREQ: o->no_requeue = true; break;
      case NODEW: if (!parse_int(optarg, 1, 4096, &o->node_workers)) bad = "--node-workers (1..4096)"; break;
      case PTIME: if (!parse_int(optarg, 100, 3600000, &o->peer_timeout_ms)) bad = "--peer-timeout (100..3600000 ms)"; break;
      case HELP: usage(stdout); std::exit(0);
      default:
        std::fprintf(stderr, "ringrun: unknown option or missing value: %s (see --help)\n", argv[optind - 1]);
        return 2;
    }
    if (bad) {
      std::fprintf(stderr, "ringrun: bad value '%s' for %s\n", optarg, bad);
      return 2;
    }
  }
  for (int i = optind; i < argc; ++i) o->cmd.push_back(argv[i]);
  if (o->cmd.empty()) {
    std::fprintf(stderr, "ringrun: no command given (ringrun [options] -- CMD ARGS...)\n");
    return 2;
  }
  return 0;
}

// --- workers --------------------------------------------------------------------------------------

struct WorkerExit {
  int rank;
  pid_t pid;
  int status;  // as from waitpid
};

std::string describe(const WorkerExit& e) {
  char b[128];
  if (WIFEXITED(e.status))
    std::snprintf(b, sizeof b, "rank %d (pid %d) exited with code %d", e.rank, int(e.pid), WEXITSTATUS(e.status));
  else
    std::snprintf(b, sizeof b, "rank %d (pid %d) killed by signal %d (%s)", e.rank, int(e.pid), WTERMSIG(e.status),
                  strsignal(WTERMSIG(e.status)));
  return b;
}

std::string self_path() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, size_t(n)) : "ringrun";
}

// Sets NAME=value in an environment list, replacing any NAME already there: getenv() returns the
// first match, so an appended copy would lose to the inherited one (Slurm's CUDA_VISIBLE_DEVICES
// of the whole job, say, over the worker's own GPU).
void set_var(std::vector<std::string>& env, const std::string& assignment) {
  const std::string prefix = assignment.substr(0, assignment.find('=') + 1);
  env.erase(std::remove_if(env.begin(), env.end(),
                           [&](const std::string& v) { return v.compare(0, prefix.size(), prefix) == 0; }),
            env.end());
  env.push_back(assignment);
}

// torchrun's environment (torch.distributed's env:// rendezvous), so that an unmodified
// torch.distributed script runs under ringrun: per worker, rank `rank` of `world`, the
// `local_rank`-th of the `local_world` workers its launcher (one per node) starts; per job, the
// master address, a MASTER_PORT for torch's own store and the restart count. MASTER_PORT is never
// libringrt's rendezvous port, since a script may use gloo and "ringrt" at once: in a job it is
// 20000 + (id + 6000) mod 12000, the half of libringrt's job-id range (20000 + id mod 12000)
// opposite this job's ring port; outside a job, a free port of this host other than the ring's.
// See ringrun(1), PYTORCH.
std::vector<std::string> torch_rank_env(int rank, int local_rank, int local_world, int world) {
  const int group = (rank - local_rank) / std::max(1, local_world);
  return {"RANK=" + std::to_string(rank), "LOCAL_RANK=" + std::to_string(local_rank),
          "WORLD_SIZE=" + std::to_string(world), "LOCAL_WORLD_SIZE=" + std::to_string(local_world),
          "GROUP_RANK=" + std::to_string(group), "GROUP_WORLD_SIZE=" + std::to_string(world / std::max(1, local_world)),
          "ROLE_RANK=" + std::to_string(rank), "ROLE_WORLD_SIZE=" + std::to_string(world), "ROLE_NAME=default"};
}
std::vector<std::string> torch_job_env(const std::string& master, uint32_t job_id, int ring_port, int generation) {
  int port = job_id ? 20000 + int((job_id + 6000) % 12000) : 0;
  if (port == ring_port) port = job_id ? 20000 + int((job_id + 6001) % 12000) : 0;
  for (int tries = 0; tries < 8 && (port == 0 || port == ring_port); ++tries) port = ringrt_local::free_port();
  // A requeued job starts again under Slurm; its restarts count with ringrun's own.
  const int restarts = generation + ringrun::env::slurm_restart_count();
  return {"MASTER_ADDR=" + master, "MASTER_PORT=" + std::to_string(port),
          "TORCHELASTIC_RESTART_COUNT=" + std::to_string(restarts),
          "TORCHELASTIC_RUN_ID=" + (job_id ? std::to_string(job_id) : std::string("local"))};
}

// The workers of one run: started together, signalled together, reaped one by one.
class WorkerGroup {
 public:
  // Starts `world` workers of cmd (argv) on this host; `env` is added to ringrun's environment,
  // per-rank settings on top. When srun_launch is set, one srun starts all ranks across the
  // allocation and each rank reads its own SLURM_PROCID.
  // first_rank/count: the ranks started here (a node launcher starts its node's share).
  void launch(const std::vector<std::string>& cmd, int world, const std::vector<std::string>& env,
              const std::vector<std::string>& gpu_ids, bool srun_launch, int nodes, int first_rank = 0,
              int count = -1) {
    pids_.clear();
    alive_ = 0;
    int procs = srun_launch ? 1 : count < 0 ? world : count;
    for (int i = 0; i < procs; ++i) {
      const int r = first_rank + i;
      std::vector<std::string> e;
      for (char** p = environ; *p; ++p) e.push_back(*p);
      for (auto& s : env) set_var(e, s);
      std::vector<std::string> argv;
      if (srun_launch) {
        // One launcher per node (a job holds one CPU per node at least, not one per GPU): each
        // is this program with --node-workers, starting its node's ranks.
        argv = {"srun", "--overlap", "--kill-on-bad-exit=0", "-N", std::to_string(nodes), "-n", std::to_string(nodes),
                "--ntasks-per-node=1", self_path(), "--node-workers=" + std::to_string(world / nodes), "--"};
      } else {
        set_var(e, "RINGRT_RANK=" + std::to_string(r));
        for (auto& v : torch_rank_env(r, i, procs, world)) set_var(e, v);
        if (!gpu_ids.empty()) set_var(e, "CUDA_VISIBLE_DEVICES=" + gpu_ids[size_t(i) % gpu_ids.size()]);
      }
      argv.insert(argv.end(), cmd.begin(), cmd.end());
      // Signals stay blocked across fork until the child has its default handlers back, so a
      // stop request cannot land in the inherited handler and be lost.
      sigset_t all, old;
      sigfillset(&all);
      sigprocmask(SIG_BLOCK, &all, &old);
      pid_t pid = ::fork();
      if (pid < 0) {
        sigprocmask(SIG_SETMASK, &old, nullptr);
        throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
      }
      if (pid == 0) {
        // Each worker leads its own process group: signals reach whatever it starts, too.
        setpgid(0, 0);
        for (int sig : {SIGUSR1, SIGTERM, SIGINT}) signal(sig, SIG_DFL);
        // SIGUSR2 is the planner's nudge to ringrun; should Slurm ever deliver it to the whole job
        // (scancel -s USR2 without -b), a worker must not die of it. SIG_IGN survives exec.
        signal(SIGUSR2, SIG_IGN);
        // SIGUSR1 stays blocked through exec: a worker unblocks it once its handler is in place,
        // so a stop request that comes early waits instead of killing it.
        sigset_t usr1 = old;
        sigaddset(&usr1, SIGUSR1);
        sigprocmask(SIG_SETMASK, &usr1, nullptr);
        std::vector<char*> av, ev;
        for (auto& s : argv) av.push_back(const_cast<char*>(s.c_str()));
        av.push_back(nullptr);
        for (auto& s : e) ev.push_back(const_cast<char*>(s.c_str()));
        ev.push_back(nullptr);
        ::execvpe(av[0], av.data(), ev.data());
        std::fprintf(stderr, "ringrun: cannot run %s: %s\n", av[0], std::strerror(errno));
        ::_exit(127);
      }
      setpgid(pid, pid);  // also here: no window in which a signal misses the group
      sigprocmask(SIG_SETMASK, &old, nullptr);
      pids_.push_back(pid);
      alive_++;
    }
  }
  int size() const { return int(pids_.size()); }
  void signal_all(int sig) {
    for (pid_t p : pids_)
      if (p > 0) ::kill(-p, sig);
  }
  // Reaps what has exited; returns true once every worker has.
  bool reap(std::vector<WorkerExit>* exits) {
    for (size_t r = 0; r < pids_.size(); ++r) {
      if (pids_[r] <= 0) continue;
      int st;
      pid_t got = ::waitpid(pids_[r], &st, WNOHANG);
      if (got == pids_[r]) {
        exits->push_back({int(r), got, st});
        pids_[r] = -1;
        alive_--;
      }
    }
    return alive_ == 0;
  }

 private:
  std::vector<pid_t> pids_;
  int alive_ = 0;
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string x;
  while (std::getline(ss, x, sep))
    if (!x.empty()) out.push_back(x);
  return out;
}

// Reads the worker's timing line and forwards it, validated, to the report CSV.
void forward_timing(const Options& o, const std::string& timing_file, int world) {
  std::ifstream in(timing_file);
  std::string line;
  if (!in || !std::getline(in, line)) return;
  ::unlink(timing_file.c_str());
  auto f = split(line, ',');
  int w = 0, batch = 0;
  double steps = 0, secs = 0;
  if (f.size() != 4 || !parse_int(f[0].c_str(), 1, 4096, &w) || !parse_int(f[1].c_str(), 1, 1 << 20, &batch) ||
      !(steps = std::atof(f[2].c_str()), steps >= 1) || !(secs = std::atof(f[3].c_str()), secs > 0)) {
    log("ignoring malformed timing report '%s' in %s", line.c_str(), timing_file.c_str());
    return;
  }
  double ips = steps / secs;
  log("measured %.4g iterations/s on %d x %s over %.0f steps", ips, w, o.gpu_type.empty() ? "?" : o.gpu_type.c_str(),
      steps);
  if (o.report.empty() || o.model.empty() || o.profiles.empty() || o.gpu_type.empty()) return;
  try {
    ringrun::ProfileReporter rep(o.profiles, o.report_factor);
    ringsched::ProfilePoint p;
    p.model = o.model;
    p.gpu_type = o.gpu_type;
    p.num_gpus = w;
    // The point is recorded at the profile's batch for the model (the batch its speeds mean).
    auto table = ringsched::ProfileTable::load_csv(o.profiles);
    auto pts = table.points_for(o.model, o.gpu_type);
    p.global_batch = pts.empty() ? batch : pts[0].global_batch;
    p.iters_per_s = ips;
    auto v = rep.report(o.report, o.model, o.gpu_type, world, p);
    log("profile report %s: %s", v.accepted ? "accepted" : "refused", v.reason.c_str());
  } catch (const std::exception& e) {
    log("profile report refused: %s", e.what());
  }
}

}  // namespace

// Under Slurm: tells the planner that ringrun runs the job (the job's Comment, which its owner
// may write), and whether SIGUSR2 reaches it. Slurm sends the planner's SIGUSR2 to the batch
// shell's process alone, which is ringrun only when the script exec'ed it; a shell that waits for
// ringrun would die of SIGUSR2, so then the planner sends none and ringrun reads its notes every
// few seconds instead (ringsched(8), RESIZES).
void announce_ready(ringrun::SlurmJob& job) {
  const bool signal_reaches_us = ::getpgrp() == ::getpid();
  const ringsched::WrapperNote note = ringsched::WrapperNote::ready(signal_reaches_us);
  const std::string err = job.set_comment(note.merged_into(job.shape().comment));
  if (!err.empty()) log("cannot note in the job's Comment that ringrun is ready: %s", err.c_str());
}

// The planner's resize or stop: the job's owner only checkpoints and requeues its job with a
// hold, noting which decision it requeued for; priority/ringsched (as SlurmUser) applies the shape
// it recorded and releases the job (a stopped job then waits, pending, for a plan that starts it).
// Returns true once the job is requeued.
bool hand_over(ringrun::SlurmJob& job, const ringrun::ResizeDecision& d, const std::string& ckpt_dir) {
  const uint32_t id = job.shape().job_id;
  const std::string what = d.stop ? std::string("stop") : "resize to " + std::to_string(d.gpus) + " GPUs";
  const std::string note = ringsched::WrapperNote::requeued(d.decided_at).merged_into(job.shape().comment);
  std::string err = job.set_comment(note);
  if (err.empty()) err = job.requeue_held();
  if (!err.empty()) {
    log("handing job %u over to the planner for its %s failed: %s", id, what.c_str(), err.c_str());
    ringrun::env::event(ckpt_dir, "requeue_failed " + err);
    return false;
  }
  ringrun::env::event(ckpt_dir, d.stop ? std::string("requeued_for_planner_stop")
                                      : "requeued_for_planner " + std::to_string(d.gpus));
  log("job %u requeued (held) for the planner's %s%s%s; priority/ringsched %s and releases the job", id,
      what.c_str(), d.type.empty() ? "" : " of type ", d.type.c_str(),
      d.stop ? "keeps its shape" : "applies it");
  return true;
}

// A resize the owner asked for (the request file, or a stop that keeps the size) of a job the
// planner does not own: requeue with hold, update, release, as the owner. Returns true once the
// job is requeued (even when the update failed and the old shape was put back).
bool requeue_resized(ringrun::SlurmJob& job, int gpus, const std::string& type, const std::string& ckpt_dir) {
  const uint32_t id = job.shape().job_id;
  double rq = 0, up = 0;
  bool requeued = false;
  const std::string err = job.requeue_resized(gpus, type, &rq, &up, &requeued);
  if (!err.empty()) {
    log("requeue of job %u at %d GPUs failed: %s", id, gpus, err.c_str());
    ringrun::env::event(ckpt_dir, "requeue_failed " + err);
    return requeued;
  }
  ringrun::env::event(ckpt_dir, "released " + std::to_string(gpus));
  log("job %u requeued at %d GPUs%s%s (requeue %.2f s, update+release %.2f s)", id, gpus,
      type.empty() ? "" : " of type ", type.c_str(), rq, up);
  return true;
}

// The per-node launcher of a multi-node job (srun starts one per node): starts this node's
// ranks, passes stop signals on, and exits like a single worker would (0, 75, or the failure).
int run_node_share(const Options& o) {
  int node = 0;
  const char* id = std::getenv("SLURM_NODEID");
  if (!id || !parse_int(id, 0, 65535, &node)) {
    std::fprintf(stderr, "ringrun: --node-workers needs SLURM_NODEID (it is started by srun)\n");
    return 2;
  }
  std::vector<std::string> gpu_ids;
  if (const char* c = std::getenv("CUDA_VISIBLE_DEVICES")) gpu_ids = split(c, ',');
  const char* w = std::getenv("RINGRT_WORLD_SIZE");
  int world = 0;
  if (!w || !parse_int(w, 1, 4096, &world)) {
    std::fprintf(stderr, "ringrun: --node-workers needs RINGRT_WORLD_SIZE\n");
    return 2;
  }
  WorkerGroup g;
  g.launch(o.cmd, world, {}, gpu_ids, false, 1, node * o.node_workers, o.node_workers);
  std::vector<WorkerExit> exits;
  int rc = 0;
  while (!g.reap(&exits)) {
    if (int sig = g_signal; sig && (g_signal = 0, sig != SIGUSR2)) g.signal_all(sig);  // USR2 is ringrun's alone
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (auto& e : exits) {
    int code = WIFEXITED(e.status) ? WEXITSTATUS(e.status) : 128 + WTERMSIG(e.status);
    if (code != 0 && code != kExitStopped) {
      log("worker failed on node %d: %s", node, describe(e).c_str());
      rc = 1;
    } else if (rc == 0) {
      rc = code;
    }
  }
  return rc;
}

// Stop and resize signals are recorded from the first instruction on: a resize request (SIGUSR2)
// or a stop that arrives while ringrun is still starting is acted on once the workers run, never
// fatal (SIGUSR2's default action would end the job).
void catch_signals_early() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGUSR1, SIGUSR2, SIGTERM, SIGINT}) sigaction(sig, &sa, nullptr);
}

// The default checkpoint folder: DIR/ringrun-JOBID where DIR is the submit folder when only the
// user can write it, else ~/.ringrun (made 0700). In a folder others may write (a shared scratch
// space), another user could create the predictable name first (ringrun(1), CHECKPOINT FOLDER).
std::string default_ckpt_dir(uint32_t job_id) {
  const std::string name = "ringrun-" + (job_id ? std::to_string(job_id) : std::string("local"));
  const char* sub = std::getenv("SLURM_SUBMIT_DIR");
  const std::string submit = sub && *sub ? sub : ".";
  struct stat st;
  if (::stat(submit.c_str(), &st) == 0 && st.st_uid == ::geteuid() && (st.st_mode & 022) == 0)
    return submit + "/" + name;
  const char* home = std::getenv("HOME");
  if (home && *home && ::stat(home, &st) == 0 && st.st_uid == ::geteuid() && (st.st_mode & 022) == 0) {
    const std::string dir = std::string(home) + "/.ringrun";
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return submit + "/" + name;
    log("the submit folder %s can be written by other users: checkpoints go to %s/%s", submit.c_str(), dir.c_str(),
        name.c_str());
    return dir + "/" + name;
  }
  return submit + "/" + name;  // refused by CheckpointStore when others may write there, with why
}

// Slurm gives a job id again once its controller starts from a fresh state (a new cluster, a
// lost StateSaveLocation) or the ids wrap at MaxJobId, and the default folder is named by the id
// alone: on a job's first run (Slurm has not requeued it), a default folder in which ringrun
// already ran belongs to an earlier job of that id. Its checkpoints would be restored (a finished
// one ends the new job at once, untrained) and its request file obeyed: it is moved aside to
// DIR.earlier-EPOCH, kept for the user. A folder given with --ckpt-dir is always resumed from.
// Returns false (having said why) when the folder could not be moved.
bool set_aside_earlier_job(const std::string& dir, uint32_t job_id) {
  struct stat st;
  if (ringrun::env::slurm_restart_count() > 0 || ::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
      st.st_uid != ::geteuid())
    return true;  // a restart of this job, nothing there, or not ours (CheckpointStore refuses it, saying why)
  bool ran_here = ::access((dir + "/events").c_str(), F_OK) == 0;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d))
      if (std::strncmp(e->d_name, "ckpt-", 5) == 0) ran_here = true;
    ::closedir(d);
  }
  if (!ran_here) return true;
  const std::string aside = dir + ".earlier-" + std::to_string(::time(nullptr));
  if (::rename(dir.c_str(), aside.c_str()) != 0) {
    std::fprintf(stderr, "ringrun: %s holds the checkpoints of an earlier job %u and cannot be moved aside (%s): "
                 "remove it, or give --ckpt-dir\n", dir.c_str(), job_id, std::strerror(errno));
    return false;
  }
  log("%s holds the checkpoints of an earlier job %u (Slurm gave the id again; this job has not been requeued): "
      "moved to %s; starting from scratch", dir.c_str(), job_id, aside.c_str());
  return true;
}

int main(int argc, char** argv) {
  catch_signals_early();
  Options o;
  if (int rc = parse(argc, argv, &o)) return rc;
  if (o.node_workers > 0) return run_node_share(o);
  const char* job_env = std::getenv("SLURM_JOB_ID");
  uint32_t job_id = 0;
  if (job_env && *job_env) {
    int v;
    if (!parse_int(job_env, 1, 0x7fffffff, &v)) {
      std::fprintf(stderr, "ringrun: SLURM_JOB_ID '%s' is not a job id\n", job_env);
      return 2;
    }
    job_id = uint32_t(v);
  }
  const bool under_slurm = job_id != 0 && o.gpus == 0;

  // --- the job's shape ---
  std::unique_ptr<ringrun::SlurmJob> job;
  int world = o.gpus, nodes = 1;
  std::string master = "127.0.0.1";
  std::vector<std::string> gpu_ids;
  if (const char* c = std::getenv("CUDA_VISIBLE_DEVICES")) gpu_ids = split(c, ',');
  if (gpu_ids.empty())
    if (const char* c = std::getenv("SLURM_JOB_GPUS")) gpu_ids = split(c, ',');
  if (under_slurm) {
    try {
      job = std::make_unique<ringrun::SlurmJob>(job_id);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ringrun: %s\n", e.what());
      return 1;
    }
    const auto& s = job->shape();
    nodes = std::max(1, s.nodes);
    world = s.total_gpus();
    if (world <= 0) {
      std::fprintf(stderr, "ringrun: job %u has no GPUs in its request (sbatch --gres=gpu:TYPE:N); use --gpus=N\n",
                   job_id);
      return 2;
    }
    if (o.gpu_type.empty()) o.gpu_type = s.gpu_type;
    if (o.gpu_type.empty()) o.gpu_type = s.node_gpu_type;  // untyped request: what the node has
    if (nodes > 1 && !s.first_node_addr.empty()) master = s.first_node_addr;
  } else if (world == 0) {
    std::fprintf(stderr, "ringrun: not inside a Slurm job: give --gpus=N\n");
    return 2;
  }
  if (o.gpu_type.empty()) o.gpu_type = ringrun::env::gpu_type();
  if (o.profiles.empty()) o.profiles = ringrun::env::profiles();
  if (o.ckpt_dir.empty()) {
    o.ckpt_dir = default_ckpt_dir(job_id);
    if (job_id && !set_aside_earlier_job(o.ckpt_dir, job_id)) return 1;
  }
  if (o.resize_file.empty()) o.resize_file = o.ckpt_dir + "/resize-request";
  // In a job, libringrt derives the master port from SLURM_JOB_ID (see libringrt(3)), so that
  // the workers of every node agree on it without us; alone on this host, any free port does.
  if (o.port == 0 && !job_id) o.port = ringrt_local::free_port();
  // A port exported from the submitting shell would put every job of that shell on one port.
  if (const char* inherited = std::getenv("RINGRT_MASTER_PORT"); o.port == 0 && inherited) {
    log("ignoring RINGRT_MASTER_PORT=%s from the environment (give --port=P to choose the port)", inherited);
    unsetenv("RINGRT_MASTER_PORT");
  }

  // The folder is private to the user, and its secret (made once, kept across restarts) both
  // authenticates the ring's peers and keys the checkpoints' MACs.
  std::unique_ptr<ringrun::CheckpointStore> store;
  std::string secret;
  try {
    store = std::make_unique<ringrun::CheckpointStore>(o.ckpt_dir);
    secret = store->secret_file();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ringrun: %s\n", e.what());
    return 1;
  }

  const std::string timing_file = o.ckpt_dir + "/timing";
  ringrun::ResizeWatch watch(o.resize_file, o.ckpt_dir + "/handled-request", o.max_gpus, job.get());
  if (job) announce_ready(*job);
  for (int generation = 0;; ++generation) {
    std::vector<std::string> env = {
        "RINGRT_WORLD_SIZE=" + std::to_string(world), "RINGRT_MASTER_ADDR=" + master,
        "RINGRT_SECRET_FILE=" + secret, "RINGRUN_CKPT_DIR=" + o.ckpt_dir, "RINGRUN_TIMING_FILE=" + timing_file};
    if (o.port) env.push_back("RINGRT_MASTER_PORT=" + std::to_string(o.port));
    for (auto& v : torch_job_env(master, job_id, o.port, generation)) env.push_back(v);
    // Shared, loaded machines stall a healthy rank for seconds: the default deadline is generous.
    if (!std::getenv("RINGRT_TIMEOUT_MS")) env.push_back("RINGRT_TIMEOUT_MS=" + std::to_string(o.peer_timeout_ms));
    if (!o.gpu_type.empty()) env.push_back("RINGRUN_GPU_TYPE=" + o.gpu_type);
    if (!o.profiles.empty()) env.push_back("RINGRUN_PROFILES=" + o.profiles);
    if (!o.model.empty()) env.push_back("RINGRUN_MODEL=" + o.model);
    WorkerGroup workers;
    try {
      workers.launch(o.cmd, world, env, gpu_ids, under_slurm && nodes > 1, nodes);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ringrun: %s\n", e.what());
      return 1;
    }
    ringrun::env::event(o.ckpt_dir, "workers_started " + std::to_string(world) + (job_id ? " job " + std::to_string(job_id) : ""));
    log("started %d worker%s of %s (%s%s, master %s:%s, checkpoints in %s)", world, world == 1 ? "" : "s",
        o.cmd[0].c_str(), o.gpu_type.empty() ? "untyped" : o.gpu_type.c_str(),
        job_id ? (", job " + std::to_string(job_id)).c_str() : ", local", master.c_str(),
        o.port ? std::to_string(o.port).c_str() : "port from the job id", o.ckpt_dir.c_str());

    // --- watch: the first event decides; everything then takes the checkpoint path ---
    int target = 0;         // size to restart at (0: none decided)
    std::string target_type;  // GPU type to restart on ("" keeps the current one)
    bool slurm_owns_restart = false;
    std::string reason;
    bool stopping = false, failed = false;
    std::chrono::steady_clock::time_point stop_sent;
    auto last_file_look = std::chrono::steady_clock::now() - kJobReadEvery;
    auto last_job_read = last_file_look;
    ringrun::ResizeDecision decision;
    std::vector<WorkerExit> exits;
    int ok = 0, stopped = 0;
    while (true) {
      std::vector<WorkerExit> now;
      bool all_done = workers.reap(&now);
      for (auto& e : now) {
        exits.push_back(e);
        if (WIFEXITED(e.status) && WEXITSTATUS(e.status) == 0) ok++;
        else if (WIFEXITED(e.status) && WEXITSTATUS(e.status) == kExitStopped) stopped++;
        else if (!failed) {
          failed = true;
          // A crash is the job's failure, not a resize: report it and take the rest down.
          log("worker failed: %s", describe(e).c_str());
          ringrun::env::event(o.ckpt_dir, "worker_failed " + describe(e));
          workers.signal_all(SIGTERM);
          stop_sent = std::chrono::steady_clock::now();
          stopping = true;
        } else {
          log("then: %s", describe(e).c_str());
        }
      }
      if (all_done) break;

      if (!stopping) {
        int sig = g_signal;
        if (sig) {
          g_signal = 0;
          if (sig == SIGUSR2) {
            last_job_read = last_file_look = std::chrono::steady_clock::now() - kJobReadEvery;  // look now
          } else {
            target = world;
            reason = sig == SIGUSR1 ? "SIGUSR1 (time limit or preemption)" : std::string(strsignal(sig));
            // SIGTERM/SIGINT come from scancel, or from Slurm's own requeue or preemption: Slurm
            // decides what happens to the job, so we checkpoint but do not requeue it ourselves
            // (that would bring a cancelled job back).
            if (sig != SIGUSR1) slurm_owns_restart = true;
          }
        }
        // The file is cheap to look at; the job's notes cost slurmctld a request, so they are read
        // every few seconds, and at once when SIGUSR2 says the planner has written one.
        auto t = std::chrono::steady_clock::now();
        if (!target && t - last_file_look >= std::chrono::milliseconds(500)) {
          last_file_look = t;
          const bool read_job = t - last_job_read >= kJobReadEvery;
          if (read_job) last_job_read = t;
          decision = watch.poll(world, o.gpu_type, read_job, log);
          if (decision.gpus) {
            target = decision.gpus, target_type = decision.type, reason = decision.reason;
            watch.mark_handled(decision);
            if (decision.decided_at > 0)
              ringrun::env::event(o.ckpt_dir, "engine_decided_at " + std::to_string(decision.decided_at));
          }
        }
        if (target) {
          stopping = true;
          stop_sent = std::chrono::steady_clock::now();
          log("%s: checkpointing to restart at %d GPU%s", reason.c_str(), target, target == 1 ? "" : "s");
          ringrun::env::event(o.ckpt_dir, "decision " + std::to_string(world) + "->" + std::to_string(target));
          workers.signal_all(SIGUSR1);
        }
      } else if (std::chrono::steady_clock::now() - stop_sent > std::chrono::seconds(failed ? std::min(o.grace_s, 5) : o.grace_s)) {
        // After a crash the ring is broken and nobody checkpoints: a short grace is enough.
        log("workers did not stop within %d s; killing them", o.grace_s);
        workers.signal_all(SIGKILL);
        stop_sent = std::chrono::steady_clock::now() + std::chrono::hours(1);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }

    forward_timing(o, timing_file, world);
    if (failed) {
      log("job failed: %d of %d worker processes did not finish; last checkpoint kept in %s",
          int(exits.size()) - ok - stopped, workers.size(), o.ckpt_dir.c_str());
      return 1;
    }
    const int procs = workers.size();  // one srun stands for all ranks in a multi-node job
    if (stopped == 0 && ok == procs) {
      log("all %d workers finished", world);
      ringrun::env::event(o.ckpt_dir, "finished");
      return 0;
    }
    if (stopped != procs) {
      log("workers disagree (%d finished, %d stopped): treating the run as failed", ok, stopped);
      return 1;
    }
    // Everyone stopped at a checkpoint: verify it before anything restarts from it.
    ringrun::Checkpoint ck;
    std::vector<std::string> warnings;
    bool good = store->load_latest(&ck, &warnings);
    for (auto& w : warnings) log("%s", w.c_str());
    if (!good) {
      log("no usable checkpoint in %s after the stop: not restarting", o.ckpt_dir.c_str());
      return 1;
    }
    double ck_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - stop_sent).count();
    log("checkpoint at step %llu verified (%s), %.2f s after the request", (unsigned long long)ck.step,
        ck.file.c_str(), ck_s);
    ringrun::env::event(o.ckpt_dir, "checkpointed step " + std::to_string(ck.step));
    if (!target) target = world;

    if (job && !o.no_requeue && !slurm_owns_restart) {
      // From here on Slurm's own SIGTERM (our requeue) must not interrupt the sequence.
      signal(SIGTERM, SIG_IGN);
      const bool requeued = decision.by_planner ? hand_over(*job, decision, o.ckpt_dir)
                                                : requeue_resized(*job, target, target_type, o.ckpt_dir);
      if (requeued) return 0;
      // The job still runs here: carry on at the current size from the checkpoint rather than
      // lose the allocation over a failed resize.
      catch_signals_early();
      log("job %u continues at %d GPUs from step %llu", job_id, world, (unsigned long long)ck.step);
      ringrun::env::event(o.ckpt_dir, "continues " + std::to_string(world));
      continue;
    }
    if (job || reason.rfind("resize", 0) != 0) {
      // No one to restart us (or asked to stop): leave it at the checkpoint.
      log("stopped at step %llu (%s)", (unsigned long long)ck.step, reason.c_str());
      return kExitStopped;
    }
    // Locally, a resize restarts the workers at once, through the same checkpoint.
    log("restarting locally at %d GPUs", target);
    world = target;
  }
}
