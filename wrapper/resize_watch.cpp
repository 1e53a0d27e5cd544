// SPDX-License-Identifier: GPL-2.0-or-later
#include "resize_watch.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "bounded_int.h"
#include "resize_note.h"

namespace ringrun {

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path + ".tmp") << text;
  ::rename((path + ".tmp").c_str(), path.c_str());
}

}  // namespace

int read_request_file(const std::string& path, int max_gpus, std::string* complaint) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ELOOP) {
      ::unlink(path.c_str());
      *complaint = "ignoring resize request " + path + ": a symbolic link (removed)";
    }
    return 0;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 022) != 0) {
    const bool regular = S_ISREG(st.st_mode);
    ::close(fd);
    ::unlink(path.c_str());
    *complaint = "ignoring resize request " + path + ": " +
                 (!regular ? std::string("not a regular file")
                           : st.st_uid != ::geteuid() ? "owned by uid " + std::to_string(st.st_uid) + ", not by this job's user"
                                                      : "writable by other users") +
                 " (removed)";
    return 0;
  }
  std::string text;
  char buf[128];
  ssize_t n;
  while (text.size() < 128 && (n = ::read(fd, buf, sizeof buf)) != 0) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    text.append(buf, size_t(n));
  }
  ::close(fd);
  if (text.empty() || (text.back() != '\n' && text.size() < 64)) return 0;
  ::unlink(path.c_str());
  const size_t b = text.find_first_not_of(" \t\r\n"), e = text.find_last_not_of(" \t\r\n");
  const std::string v = b == std::string::npos ? "" : text.substr(b, e - b + 1);
  int gpus = 0;
  if (!ringsched::parse_int(v, 1, max_gpus, &gpus)) {
    *complaint = "ignoring resize request in " + path + ": '" + v.substr(0, 40) + "' is not a GPU count in 1.." +
                 std::to_string(max_gpus);
    return 0;
  }
  return gpus;
}

ResizeDecision ResizeWatch::poll(int world, const std::string& gpu_type, bool read_job,
                                 void (*log)(const char*, ...)) {
  ResizeDecision d;
  std::string complaint;
  const int asked = read_request_file(request_file_, max_gpus_, &complaint);
  if (!complaint.empty()) log("%s", complaint.c_str());
  const bool planner_owned =
      job_ && ringsched::PlannerNote::parse(job_->shape().admin_comment).kind != ringsched::PlannerNote::Kind::None;
  if (asked && planner_owned) {
    // The planner decides this job's size (and a user may not change it in Slurm): a request of
    // the file would be refused or undone at once.
    log("ignoring resize request %s (%d GPUs): job %u's size is decided by the ringsched planner "
        "(priority/ringsched); its range is --ring-gpus", request_file_.c_str(), asked, job_->shape().job_id);
  } else if (asked && asked != world) {
    d.gpus = asked;
    d.reason = "resize request file " + request_file_;
    return d;
  }
  if (!job_ || !read_job) return d;
  try {
    job_->refresh();
  } catch (const std::exception& e) {
    log("%s", e.what());
    return d;
  }
  const std::string& comment = job_->shape().admin_comment;
  const ringsched::PlannerNote note = ringsched::PlannerNote::parse(comment, max_gpus_);
  if (!note.is_request() || comment == read_text(handled_file_)) return d;
  if (note.is_stop()) {
    d.gpus = world;  // it comes back at this shape unless a later plan says otherwise
    d.stop = d.by_planner = true;
    d.decided_at = note.at;
    d.reason = "policy engine stops the job for now (admin comment '" + comment + "')";
    return d;
  }
  const bool new_type = !note.type.empty() && note.type != gpu_type && !gpu_type.empty();
  if (note.gpus == world && !new_type) return d;
  d.gpus = note.gpus;
  d.type = new_type ? note.type : "";
  d.by_planner = true;
  d.decided_at = note.at;
  d.reason = "policy engine (admin comment '" + comment + "')";
  return d;
}

void ResizeWatch::mark_handled(const ResizeDecision& d) {
  if (d.by_planner && job_) write_text(handled_file_, job_->shape().admin_comment);
}

}  // namespace ringrun
