// SPDX-License-Identifier: GPL-2.0-or-later
// ringsim traces (DESIGN 5): job_id,submit_s,model,gpus,iterations[,min_gpus,max_gpus,elastic,user,spb]
// and the importers that turn the public traces and a Slurm site's accounting into that format.
#pragma once

#include <string>
#include <vector>

#include "ringsched/model.h"
#include "ringsched/throughput.h"

namespace ringsim {

struct TraceJob {
  std::string id;
  double submit_s = 0;
  std::string model;
  int gpus = 1;            // requested size (the inelastic size; elastic jobs' initial request)
  double iterations = 0;
  int min_gpus = 1;
  int max_gpus = 1;
  bool elastic = false;    // resizable within [min_gpus, max_gpus]; see resizable()
  std::string user;
  bool spb = false;
  int line = 0;            // line in the trace file (0: generated)

  // Whether a policy may resize or move the job: the plugin's rule (RingRequest::is_elastic),
  // elastic with a range MIN < MAX, since sbatch refuses --ring-elastic without one. A row marked
  // elastic with min = max is a fixed-size job there, never stopped or moved, so here too;
  // otherwise ringsim would credit the planner with moves the product cannot make.
  bool resizable() const { return elastic && max_gpus > min_gpus; }
};

// What an importer read and what it left out, with the reason, so no row disappears silently.
struct ImportReport {
  int rows = 0;
  int jobs = 0;
  int skipped = 0;
  std::string skipped_why;  // "N rows: reason; ..." in first-seen order
  void skip(const std::string& why);
};

// Bounds of what ringsim simulates. The engine plans once per round interval (300 s by default)
// while jobs run, so a job of centuries plans for hours (1e30 iterations: without end); real
// traces stay far below (the longest of Gavel's Philly durations, philly_job_distribution.csv:
// 5,196,150 s, 60 days). It skips idle time, so submit times may be Unix times in seconds, but
// at 1e300 a round added to the clock no longer changes it (the simulation never ended); at
// 1e12 s a double still resolves 0.1 ms.
constexpr double kMaxSubmitS = 1e12;
constexpr double kMaxAloneS = 1e8;  // a job's run time alone at its fastest size: 3 years

struct Trace {
  std::string source;  // file it came from (error messages)
  std::vector<TraceJob> jobs;

  // Strict reader: header with at least the five required columns; ids unique; submit_s within
  // 0..kMaxSubmitS and non-decreasing; gpus, iterations positive; min <= gpus <= max. Every
  // error names file and line.
  static Trace load_csv(const std::string& path);
  void save_csv(const std::string& path) const;
};

// Options shared by the importers that must invent what a trace does not say.
struct ImportOptions {
  unsigned seed = 1;
  int max_gpus_cap = 32;      // elastic range written: [1, max(gpus, cap)] (power of two)
  bool elastic = true;
  double spb_fraction = 0.0;  // share of jobs marked SPB-capable (drawn with the seed)
  std::string ref_type;       // GPU type whose speed turns a duration into iterations
  std::vector<std::string> models;  // models to draw from (empty: every model known on ref_type)
  double time_scale = 1.0;    // multiplies durations (shrink a trace for quick runs)
  long limit = 0;             // keep only the first N jobs (0: all)
  double jobs_per_hour = 0;   // arrivals for traces without submit times (Poisson)
};

// gavel/philly_vc_jobs_seed0.csv: vc,job_type,total_steps,arrival_time_s,scale_factor.
// total_steps are iterations; job types map through ringsched::gavel_model_id; rows are sorted by
// arrival (the file interleaves virtual clusters).
Trace import_gavel_trace(const std::string& path, const ImportOptions& opt, ImportReport* rep);

// Duration traces: itp/clusterNN.csv (job_id,submission_time,duration,num_gpu) and
// gavel/philly_job_distribution.csv (duration_s,num_gpus; no submit times: Poisson arrivals at
// opt.jobs_per_hour). A model is drawn per job with the seed; iterations = duration *
// v(model, ref_type, gpus). Rows whose size the model cannot be profiled at are skipped (counted).
Trace import_duration_trace(const std::string& path, const ringsched::ThroughputModel& tm,
                            const ImportOptions& opt, ImportReport* rep);

// `sacct --parsable2` (pipe-separated, header line) with at least JobID, Submit, Start, End and
// AllocTRES or ReqTRES. Finished jobs with gres/gpu[:type]=N become trace rows; job steps
// (JobID with '.'), jobs without GPUs and unfinished jobs are skipped (counted). The GPU type in
// the TRES, when the profile knows it, converts the run time to iterations; otherwise ref_type.
Trace import_sacct(const std::string& path, const ringsched::ThroughputModel& tm,
                   const ImportOptions& opt, ImportReport* rep);

// Synthetic trace for scale runs: `jobs` jobs with Poisson arrivals at jobs_per_hour, models
// drawn from opt.models (or every model of the table), power-of-two sizes up to max_gpus_cap,
// run times drawn log-uniformly between min_s and max_s on ref_type.
Trace synth_trace(const ringsched::ThroughputModel& tm, long jobs, double min_s, double max_s,
                  const ImportOptions& opt);

}  // namespace ringsim
