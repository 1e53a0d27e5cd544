// SPDX-License-Identifier: GPL-2.0-or-later
// ringrun-train: the demo trainer of ringsched. A two-layer perceptron on a fixed-seed synthetic
// classification task, trained data-parallel with libringrt: the fixed global batch is split over
// the world (shard boundaries depend only on the step, the batch and the world size), gradients
// are summed with a ring allreduce and divided by the global batch, so every world size computes
// the same update. With --spb each worker back-propagates through a rotating depth and the
// buckets are averaged over the workers that computed them. With --emulate-model each iteration
// is stretched to the time the throughput profile gives for the GPU type and count it runs on.
//
// See ringrun-train(1) in ringrun(1) for the options; --help prints them.
#include <getopt.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint.h"
#include "cli.h"
#include "ringrt.h"
#include "ringsched/throughput.h"
#include "wrapper_env.h"

using ringrun::parse_int;
using ringrun::parse_long;

namespace {

// Exit codes the wrapper understands (ringrun(1)).
constexpr int kExitDone = 0;
constexpr int kExitUsage = 2;
constexpr int kExitFailed = 1;
constexpr int kExitStopped = 75;  // stopped at a checkpoint on request: run me again to resume

// One checking macro for libringrt calls: a failed collective ends the worker with the rank
// blamed and the runtime's own detail.
#define RINGRT_CHECK(call)                                                                        \
  do {                                                                                            \
    ringrt_result_t rc_ = (call);                                                                 \
    if (rc_ != RINGRT_OK) {                                                                       \
      int failed_ = -1;                                                                           \
      ringrt_failed_rank(&failed_);                                                               \
      std::fprintf(stderr, "ringrun-train[%s]: %s failed: %s (%s)%s\n", rank_name().c_str(), #call, \
                   ringrt_error_string(rc_), ringrt_error_detail(),                               \
                   failed_ >= 0 ? (" [peer rank " + std::to_string(failed_) + "]").c_str() : ""); \
      std::exit(kExitFailed);                                                                     \
    }                                                                                             \
  } while (0)

int g_rank = -1;  // -1 until known
std::string rank_name() { return g_rank >= 0 ? "rank " + std::to_string(g_rank) : std::string("rank not known yet"); }
volatile sig_atomic_t g_stop_requested = 0;
void on_stop_signal(int) { g_stop_requested = 1; }

struct Options {
  long steps = 300;
  int global_batch = 64;
  int hidden = 32;
  double lr = 0.05;
  double momentum = 0.9;
  uint64_t seed = 1;
  long ckpt_every = 500;  // periodic checkpoints: what a damaged newest one falls back to
  long log_every = 20;
  bool spb = false;
  std::string ckpt_dir;
  std::string loss_log;
  std::string emulate_model;
  std::string profiles;
  std::string gpu_type;
};

void usage(FILE* f) {
  std::fprintf(f,
               "usage: ringrun-train [options]\n"
               "Demo data-parallel trainer (2-layer MLP, synthetic 4-class task) over libringrt.\n"
               "  --steps=N           training steps in all (default 300)\n"
               "  --global-batch=B    global batch, split over the world (default 64, 1..65536)\n"
               "  --hidden=H          hidden units (default 32, 1..4096)\n"
               "  --lr=X              learning rate (default 0.05)\n"
               "  --momentum=X        SGD momentum (default 0.9)\n"
               "  --seed=S            data and initialisation seed (default 1)\n"
               "  --ckpt-dir=DIR      checkpoint folder (default $RINGRUN_CKPT_DIR)\n"
               "  --ckpt-every=K      also checkpoint every K steps, K >= 1 (default 500): the checkpoint a\n"
               "                      damaged newest one falls back to\n"
               "  --log-every=N       print the loss every N steps (default 20)\n"
               "  --loss-log=FILE     rank 0 appends 'step loss world' lines to FILE\n"
               "  --spb               structured partial backprop: rotating per-worker depth\n"
               "  --emulate-model=M   stretch each iteration to 1/iters_per_s(M, type, world)\n"
               "  --profiles=CSV      profile table for emulation (default $RINGRUN_PROFILES)\n"
               "  --gpu-type=T        GPU type for emulation (default $RINGRUN_GPU_TYPE)\n"
               "SIGUSR1 or SIGTERM: checkpoint at the next step boundary and exit %d.\n"
               "Ring settings come from RINGRT_* (see libringrt(3)); ringrun(1) sets them.\n",
               kExitStopped);
}

bool parse_double(const char* s, double lo, double hi, double* out) {
  char* end = nullptr;
  double v = std::strtod(s, &end);
  if (!end || *end || end == s || !std::isfinite(v) || v < lo || v > hi) return false;
  *out = v;
  return true;
}

int parse_options(int argc, char** argv, Options* o) {
  enum { STEPS = 1, BATCH, HIDDEN, LR, MOM, SEED, CKDIR, CKEVERY, LOGEVERY, LOSSLOG, SPB, EMU, PROF, TYPE, HELP };
  static const option longopts[] = {
      {"steps", required_argument, nullptr, STEPS},       {"global-batch", required_argument, nullptr, BATCH},
      {"hidden", required_argument, nullptr, HIDDEN},     {"lr", required_argument, nullptr, LR},
      {"momentum", required_argument, nullptr, MOM},      {"seed", required_argument, nullptr, SEED},
      {"ckpt-dir", required_argument, nullptr, CKDIR},    {"ckpt-every", required_argument, nullptr, CKEVERY},
      {"log-every", required_argument, nullptr, LOGEVERY}, {"loss-log", required_argument, nullptr, LOSSLOG},
      {"spb", no_argument, nullptr, SPB},                 {"emulate-model", required_argument, nullptr, EMU},
      {"profiles", required_argument, nullptr, PROF},     {"gpu-type", required_argument, nullptr, TYPE},
      {"help", no_argument, nullptr, HELP},               {nullptr, 0, nullptr, 0}};
  o->ckpt_dir = ringrun::env::ckpt_dir();
  o->profiles = ringrun::env::profiles();
  o->gpu_type = ringrun::env::gpu_type();
  int c;
  long v;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "", longopts, nullptr)) != -1) {
    const char* bad = nullptr;
    switch (c) {
      case STEPS: if (!parse_long(optarg, 1, 100000000, &o->steps)) bad = "--steps (1..1e8)"; break;
      case BATCH: if (parse_long(optarg, 1, 65536, &v)) o->global_batch = int(v); else bad = "--global-batch (1..65536)"; break;
      case HIDDEN: if (parse_long(optarg, 1, 4096, &v)) o->hidden = int(v); else bad = "--hidden (1..4096)"; break;
      case LR: if (!parse_double(optarg, 1e-9, 10, &o->lr)) bad = "--lr (0..10]"; break;
      case MOM: if (!parse_double(optarg, 0, 0.999, &o->momentum)) bad = "--momentum (0..0.999)"; break;
      case SEED: if (parse_long(optarg, 0, 0x7fffffff, &v)) o->seed = uint64_t(v); else bad = "--seed (0..2^31-1)"; break;
      case CKDIR: o->ckpt_dir = optarg; break;
      case CKEVERY:
        if (!parse_long(optarg, 1, 100000000, &o->ckpt_every))
          bad = "--ckpt-every (1..1e8; without periodic checkpoints a damaged one has nothing to fall back to)";
        break;
      case LOGEVERY: if (!parse_long(optarg, 1, 100000000, &o->log_every)) bad = "--log-every (1..1e8)"; break;
      case LOSSLOG: o->loss_log = optarg; break;
      case SPB: o->spb = true; break;
      case EMU: o->emulate_model = optarg; break;
      case PROF: o->profiles = optarg; break;
      case TYPE: o->gpu_type = optarg; break;
      case HELP: usage(stdout); std::exit(0);
      default:
        std::fprintf(stderr, "ringrun-train: unknown option or missing value: %s (see --help)\n", argv[optind - 1]);
        return kExitUsage;
    }
    if (bad) {
      std::fprintf(stderr, "ringrun-train: bad value '%s' for %s\n", optarg, bad);
      return kExitUsage;
    }
  }
  if (optind < argc) {
    std::fprintf(stderr, "ringrun-train: unexpected argument '%s' (see --help)\n", argv[optind]);
    return kExitUsage;
  }
  if (o->ckpt_dir.empty()) {
    std::fprintf(stderr, "ringrun-train: no checkpoint folder: give --ckpt-dir or set RINGRUN_CKPT_DIR\n");
    return kExitUsage;
  }
  return 0;
}

// --- the task: a fixed-seed synthetic classification data set ---------------------------------

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
// Uniform in [-1, 1), a pure function of its arguments.
double uniform(uint64_t seed, uint64_t a, uint64_t b) {
  uint64_t h = splitmix64(splitmix64(splitmix64(seed) ^ a) ^ (b * 0x2545f4914f6cdd1dull));
  return double(h >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

// Inputs are uniform in the cube; labels come from a fixed random "teacher" with a nonlinearity,
// so the task is learnable but not linearly trivial.
class SyntheticTask {
 public:
  static constexpr int kInputs = 16;
  static constexpr int kClasses = 4;
  static constexpr uint64_t kSamples = 8192;

  explicit SyntheticTask(uint64_t seed) : seed_(seed) {
    for (int c = 0; c < kClasses; ++c)
      for (int i = 0; i < kInputs; ++i) teacher_[c][i] = uniform(seed_ ^ 0x7ea, c, i);
  }
  // Sample index k (taken modulo the data set size).
  int sample(uint64_t k, double* x) const {
    k %= kSamples;
    for (int i = 0; i < kInputs; ++i) x[i] = uniform(seed_, k, i);
    int best = 0;
    double best_v = -1e300;
    for (int c = 0; c < kClasses; ++c) {
      double v = 0;
      for (int i = 0; i < kInputs; ++i) v += teacher_[c][i] * std::tanh(2.0 * x[i]);
      if (v > best_v) best_v = v, best = c;
    }
    return best;
  }

 private:
  uint64_t seed_;
  double teacher_[kClasses][kInputs];
};

// --- the model: inputs -> hidden (tanh) -> classes (softmax, cross-entropy) --------------------

class Mlp {
 public:
  static constexpr int D = SyntheticTask::kInputs, C = SyntheticTask::kClasses;
  explicit Mlp(int hidden) : H(hidden) {}
  const int H;

  // Parameters in backprop order, one SPB bucket each: bucket 0 = output layer (W2, b2),
  // bucket 1 = hidden layer (W1, b1).
  size_t out_size() const { return size_t(C) * H + C; }
  size_t hid_size() const { return size_t(H) * D + H; }
  size_t size() const { return out_size() + hid_size(); }

  void init(std::vector<double>* p, uint64_t seed) const {
    p->assign(size(), 0.0);
    double s2 = 1.0 / std::sqrt(double(H)), s1 = 1.0 / std::sqrt(double(D));
    for (int c = 0; c < C; ++c)
      for (int h = 0; h < H; ++h) (*p)[size_t(c) * H + h] = s2 * uniform(seed ^ 0x1a7e2, c, h);
    double* w1 = p->data() + out_size();
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < D; ++i) w1[size_t(h) * D + i] = s1 * uniform(seed ^ 0x1a7e1, h, i);
  }

  // Adds the gradient of the summed loss over samples [first, last) of the step's batch to g
  // (bucket 1 only when depth >= 2) and returns the summed loss.
  double accumulate(const std::vector<double>& p, const SyntheticTask& task, uint64_t first_sample,
                    int count, int depth, std::vector<double>* g) const {
    const double* w2 = p.data();
    const double* b2 = w2 + size_t(C) * H;
    const double* w1 = p.data() + out_size();
    const double* b1 = w1 + size_t(H) * D;
    double* gw2 = g->data();
    double* gb2 = gw2 + size_t(C) * H;
    double* gw1 = g->data() + out_size();
    double* gb1 = gw1 + size_t(H) * D;
    std::vector<double> hid(H), dhid(H);
    double x[D], z[C], loss = 0;
    for (int s = 0; s < count; ++s) {
      int y = task.sample(first_sample + s, x);
      for (int h = 0; h < H; ++h) {
        double a = b1[h];
        for (int i = 0; i < D; ++i) a += w1[size_t(h) * D + i] * x[i];
        hid[h] = std::tanh(a);
      }
      double zmax = -1e300;
      for (int c = 0; c < C; ++c) {
        double a = b2[c];
        for (int h = 0; h < H; ++h) a += w2[size_t(c) * H + h] * hid[h];
        z[c] = a;
        if (a > zmax) zmax = a;
      }
      double sum = 0;
      for (int c = 0; c < C; ++c) sum += std::exp(z[c] - zmax);
      loss += std::log(sum) + zmax - z[y];
      for (int h = 0; h < H; ++h) dhid[h] = 0;
      for (int c = 0; c < C; ++c) {
        double dz = std::exp(z[c] - zmax) / sum - (c == y ? 1.0 : 0.0);
        gb2[c] += dz;
        for (int h = 0; h < H; ++h) {
          gw2[size_t(c) * H + h] += dz * hid[h];
          dhid[h] += dz * w2[size_t(c) * H + h];
        }
      }
      if (depth < 2) continue;  // SPB: this worker stops back-propagating at the output layer
      for (int h = 0; h < H; ++h) {
        double da = dhid[h] * (1.0 - hid[h] * hid[h]);
        gb1[h] += da;
        for (int i = 0; i < D; ++i) gw1[size_t(h) * D + i] += da * x[i];
      }
    }
    return loss;
  }
};

// The state a checkpoint holds. The fingerprint refuses a checkpoint of a different run.
struct TrainState {
  uint64_t step = 0;
  std::vector<double> params, velocity;
};

std::string fingerprint(const Options& o) {
  char b[256];
  std::snprintf(b, sizeof b, "ringrun-train v1 hidden=%d batch=%d lr=%.17g mom=%.17g seed=%llu spb=%d",
                o.hidden, o.global_batch, o.lr, o.momentum, (unsigned long long)o.seed, int(o.spb));
  return b;
}

std::vector<uint8_t> encode(const TrainState& s, const Options& o) {
  ringrun::PayloadWriter w;
  w.str(fingerprint(o));
  w.u64(s.step);
  w.f64s(s.params);
  w.f64s(s.velocity);
  return std::move(w.bytes());
}

TrainState decode(const ringrun::Checkpoint& c, const Options& o, size_t nparams) {
  ringrun::PayloadReader r(c.payload, c.file);
  std::string fp = r.str(1024);
  if (fp != fingerprint(o))
    throw ringrun::CheckpointError(c.file, "belongs to another run ('" + fp + "'), this run is '" + fingerprint(o) + "'");
  TrainState s;
  s.step = r.u64();
  if (s.step != c.step) throw ringrun::CheckpointError(c.file, "step in payload differs from header");
  s.params = r.f64s(nparams);
  s.velocity = r.f64s(nparams);
  if (s.params.size() != nparams || s.velocity.size() != nparams || !r.at_end())
    throw ringrun::CheckpointError(c.file, "parameter count does not match the model");
  for (double v : s.params)
    if (!std::isfinite(v)) throw ringrun::CheckpointError(c.file, "non-finite parameter");
  return s;
}

// Iteration time the profile gives for the emulated model on this type and world size.
double emulated_iteration_s(const Options& o, int world) {
  if (o.emulate_model.empty()) return 0;
  if (o.profiles.empty()) throw std::runtime_error("--emulate-model needs --profiles or RINGRUN_PROFILES");
  if (o.gpu_type.empty()) throw std::runtime_error("--emulate-model needs --gpu-type or RINGRUN_GPU_TYPE");
  ringsched::ThroughputModel tm(ringsched::ProfileTable::load_csv(o.profiles));
  double ips = tm.iters_per_s(o.emulate_model, ringsched::normalize_type(o.gpu_type), world);
  if (!(ips > 0))
    throw std::runtime_error("no profile for model '" + o.emulate_model + "' on GPU type '" + o.gpu_type +
                             "' in " + o.profiles);
  return 1.0 / ips;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (int rc = parse_options(argc, argv, &o)) return rc;

  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  // ringrun starts workers with SIGUSR1 blocked (ringrun(1)); a request that came early is
  // delivered now, to the handler.
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  sigprocmask(SIG_UNBLOCK, &usr1, nullptr);

  // Until the runtime knows the rank, messages name the one the launcher gave (ringrun's
  // RINGRT_RANK), not a placeholder.
  if (!parse_int(std::getenv("RINGRT_RANK"), 0, 1 << 20, &g_rank)) g_rank = -1;
  RINGRT_CHECK(ringrt_init());
  int world = 0;
  RINGRT_CHECK(ringrt_rank(&g_rank));
  RINGRT_CHECK(ringrt_world_size(&world));
  if (world > o.global_batch) {
    std::fprintf(stderr, "ringrun-train: world size %d exceeds the global batch %d\n", world, o.global_batch);
    return kExitUsage;
  }

  double target_iter_s = 0;
  try {
    target_iter_s = emulated_iteration_s(o, world);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ringrun-train[%s]: %s\n", rank_name().c_str(), e.what());
    return kExitUsage;
  }

  const SyntheticTask task(o.seed);
  const Mlp mlp(o.hidden);
  TrainState st;
  std::unique_ptr<ringrun::CheckpointStore> store;
  try {
    store = std::make_unique<ringrun::CheckpointStore>(o.ckpt_dir);
    ringrun::Checkpoint c;
    std::vector<std::string> warnings;
    bool found = store->load_latest(&c, &warnings);
    for (auto& w : warnings) std::fprintf(stderr, "ringrun-train[%s]: %s\n", rank_name().c_str(), w.c_str());
    if (found) {
      st = decode(c, o, mlp.size());
      if (g_rank == 0) ringrun::env::event(o.ckpt_dir, "restored step " + std::to_string(st.step));
      if (g_rank == 0)
        std::printf("ringrun-train: restored step %llu from %s; world size %d\n", (unsigned long long)st.step,
                    c.file.c_str(), world);
    } else if (!store->files().empty()) {
      std::fprintf(stderr, "ringrun-train[rank %d]: every checkpoint in %s is unusable; refusing to start over\n",
                   g_rank, o.ckpt_dir.c_str());
      return kExitFailed;
    }
  } catch (const ringrun::CheckpointError& e) {
    std::fprintf(stderr, "ringrun-train[%s]: %s\n", rank_name().c_str(), e.what());
    return kExitFailed;
  }
  if (st.params.empty()) {
    mlp.init(&st.params, o.seed);
    st.velocity.assign(mlp.size(), 0.0);
  }
  // Every rank restored the same file, but make the state bitwise that of rank 0 regardless.
  RINGRT_CHECK(ringrt_broadcast(st.params.data(), st.params.size(), RINGRT_FLOAT64, 0));
  RINGRT_CHECK(ringrt_broadcast(st.velocity.data(), st.velocity.size(), RINGRT_FLOAT64, 0));

  FILE* loss_log = nullptr;
  if (g_rank == 0 && !o.loss_log.empty()) {
    loss_log = std::fopen(o.loss_log.c_str(), "a");
    if (!loss_log) {
      std::fprintf(stderr, "ringrun-train: cannot open --loss-log %s: %s\n", o.loss_log.c_str(), std::strerror(errno));
      return kExitUsage;
    }
  }
  if (g_rank == 0)
    std::printf("ringrun-train: world %d, global batch %d, steps %llu..%ld%s%s\n", world, o.global_batch,
                (unsigned long long)st.step, o.steps, o.spb ? ", SPB" : "",
                target_iter_s > 0 ? (", emulating " + o.emulate_model + " on " + o.gpu_type + " (" +
                                     std::to_string(target_iter_s) + " s/iteration)").c_str() : "");
  std::fflush(stdout);

  auto checkpoint = [&](uint64_t step) {
    if (g_rank == 0) {
      st.step = step;
      std::string f = store->write(step, encode(st, o));
      std::printf("ringrun-train: checkpoint step %llu -> %s\n", (unsigned long long)step, f.c_str());
      std::fflush(stdout);
    }
    RINGRT_CHECK(ringrt_barrier());  // nobody leaves before the file is complete
  };

  std::vector<double> grad(mlp.size());
  std::vector<int> depth(world);
  const int first = g_rank * o.global_batch / world, last = (g_rank + 1) * o.global_batch / world;
  uint64_t measured_steps = 0, iterations_this_run = 0;
  double measured_s = 0;
  using clock = std::chrono::steady_clock;

  while (st.step < uint64_t(o.steps)) {
    auto t0 = clock::now();
    const uint64_t step = st.step;
    std::fill(grad.begin(), grad.end(), 0.0);
    // SPB pattern: ranks alternate between full depth (2) and output layer only (1), rotating
    // with the step so that every worker trains every layer every other step.
    for (int r = 0; r < world; ++r) depth[r] = o.spb ? ((r + int(step % 2)) % 2 == 0 ? 2 : 1) : 2;
    double ctl[2] = {mlp.accumulate(st.params, task, step * uint64_t(o.global_batch) + uint64_t(first),
                                    last - first, depth[g_rank], &grad),
                     g_stop_requested ? 1.0 : 0.0};
    if (o.spb) {
      // Buckets are averaged over contributors: a worker's share of the summed gradient, scaled
      // by world / batch, averages to the batch mean when everybody contributes.
      double scale = double(world) / o.global_batch;
      for (double& v : grad) v *= scale;
      ringrt_bucket_t b[2] = {{grad.data(), mlp.out_size(), nullptr, 0},
                              {grad.data() + mlp.out_size(), mlp.hid_size(), nullptr, 0}};
      RINGRT_CHECK(ringrt_allreduce_spb_depth(b, 2, RINGRT_FLOAT64, depth.data()));
    } else {
      RINGRT_CHECK(ringrt_allreduce(nullptr, grad.data(), grad.size(), RINGRT_FLOAT64, RINGRT_SUM));
      for (double& v : grad) v /= o.global_batch;
    }
    // Loss and the stop request travel together, so every rank stops after the same step.
    RINGRT_CHECK(ringrt_allreduce(nullptr, ctl, 2, RINGRT_FLOAT64, RINGRT_SUM));
    for (size_t i = 0; i < st.params.size(); ++i) {
      st.velocity[i] = o.momentum * st.velocity[i] + grad[i];
      st.params[i] -= o.lr * st.velocity[i];
    }
    st.step = step + 1;
    const double loss = ctl[0] / o.global_batch;
    if (g_rank == 0) {
      if (loss_log) std::fprintf(loss_log, "%llu %.17g %d\n", (unsigned long long)step, loss, world), std::fflush(loss_log);
      if (step % uint64_t(o.log_every) == 0 || st.step == uint64_t(o.steps))
        std::printf("ringrun-train: step %llu loss %.6f world %d\n", (unsigned long long)step, loss, world),
            std::fflush(stdout);
    }
    if (target_iter_s > 0) {
      double spent = std::chrono::duration<double>(clock::now() - t0).count();
      if (spent < target_iter_s) std::this_thread::sleep_for(std::chrono::duration<double>(target_iter_s - spent));
    }
    double iter_s = std::chrono::duration<double>(clock::now() - t0).count();
    if (iterations_this_run == 0 && g_rank == 0)
      ringrun::env::event(o.ckpt_dir, "first_step " + std::to_string(step) + " world " + std::to_string(world));
    // The first iteration of a run includes connection set-up: not a steady-state sample.
    if (iterations_this_run++ > 0) measured_steps++, measured_s += iter_s;
    if (ctl[1] > 0) {
      checkpoint(st.step);
      if (g_rank == 0) ringrun::env::write_timing(world, o.global_batch, measured_steps, measured_s);
      RINGRT_CHECK(ringrt_finalize());
      if (g_rank == 0) std::printf("ringrun-train: stopped at step %llu on request\n", (unsigned long long)st.step);
      return kExitStopped;
    }
    if (o.ckpt_every > 0 && st.step % uint64_t(o.ckpt_every) == 0 && st.step < uint64_t(o.steps)) checkpoint(st.step);
  }
  checkpoint(st.step);
  if (g_rank == 0) {
    ringrun::env::write_timing(world, o.global_batch, measured_steps, measured_s);
    std::printf("ringrun-train: done, %ld steps\n", o.steps);
  }
  RINGRT_CHECK(ringrt_finalize());
  if (loss_log) std::fclose(loss_log);
  return kExitDone;
}
