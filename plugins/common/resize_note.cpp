// SPDX-License-Identifier: GPL-2.0-or-later
#include "resize_note.h"

#include <cctype>
#include <cmath>
#include <vector>

#include "bounded_int.h"

namespace ringsched {

namespace {

const std::string kPrefix = "ringsched:";

// The note's body: from after "ringsched:" to the first blank or ';'.
std::string body_at(const std::string& text, size_t at) {
  const size_t start = at + kPrefix.size();
  const size_t end = text.find_first_of(" \t\n;", start);
  return text.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t comma = s.find(',', start);
    out.push_back(s.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

// A GPU type as the notes carry it: lower-case letters, digits and ._- (as in gres names).
bool is_type(const std::string& t) {
  if (t.empty() || t.size() > 32) return false;
  for (char c : t)
    if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) ||
          c == '.' || c == '_' || c == '-'))
      return false;
  return true;
}

bool parse_epoch(const std::string& field, long long* at) {
  long v = 0;
  if (field.rfind("at=", 0) != 0 || !parse_long(field.substr(3), 0, PlannerNote::kMaxEpoch, &v)) return false;
  *at = v;
  return true;
}

// "done=N" or "gpu_s=N" into *v, once per note (a second one makes the note not ours).
bool parse_count(const std::string& field, const char* key, long long* v, bool* seen) {
  const std::string k = std::string(key) + "=";
  if (field.rfind(k, 0) != 0 || *seen) return false;
  long x = 0;
  if (!parse_long(field.substr(k.size()), 0, PlannerNote::kMaxCount, &x)) return false;
  *v = x;
  *seen = true;
  return true;
}

long long add_count(long long sum, double more) {
  if (!(more > 0) || !std::isfinite(more)) return sum;
  const double total = static_cast<double>(sum) + std::floor(more + 0.5);
  return total >= static_cast<double>(PlannerNote::kMaxCount) ? PlannerNote::kMaxCount : static_cast<long long>(total);
}

}  // namespace

PlannerNote PlannerNote::admitted() {
  PlannerNote n;
  n.kind = Kind::Admitted;
  return n;
}

PlannerNote PlannerNote::resize(int gpus, const std::string& type, long long at) {
  PlannerNote n;
  n.kind = Kind::Resize;
  n.gpus = gpus;
  n.type = type;
  n.at = at;
  return n;
}

PlannerNote PlannerNote::stop(long long at) {
  PlannerNote n;
  n.kind = Kind::Stop;
  n.at = at;
  return n;
}

PlannerNote PlannerNote::resized() const {
  PlannerNote n = *this;
  if (kind == Kind::Resize) n.kind = Kind::Resized;
  if (kind == Kind::Stop) n.kind = Kind::Stopped;
  return n;
}

PlannerNote PlannerNote::with_progress_of(const PlannerNote& earlier) const {
  PlannerNote n = *this;
  n.done = earlier.done;
  n.gpu_s = earlier.gpu_s;
  return n;
}

PlannerNote PlannerNote::with_run(double iterations, double run_gpu_s) const {
  PlannerNote n = *this;
  n.done = add_count(done, iterations);
  n.gpu_s = add_count(gpu_s, run_gpu_s);
  return n;
}

std::string PlannerNote::str() const {
  const std::string runs = (done > 0 || gpu_s > 0) ? ",done=" + std::to_string(done) + ",gpu_s=" + std::to_string(gpu_s) : "";
  switch (kind) {
    case Kind::None: return "";
    case Kind::Admitted: return kPrefix + "admitted";
    case Kind::Resize:
    case Kind::Resized:
      return kPrefix + (kind == Kind::Resize ? "resize=" : "resized=") + std::to_string(gpus) +
             (type.empty() ? "" : ",type=" + type) + ",at=" + std::to_string(at) + runs;
    case Kind::Stop:
    case Kind::Stopped:
      return kPrefix + (kind == Kind::Stop ? "stop" : "stopped") + ",at=" + std::to_string(at) + runs;
  }
  return "";
}

PlannerNote PlannerNote::parse(const std::string& admin_comment, int max_gpus) {
  PlannerNote none;
  if (admin_comment.rfind(kPrefix, 0) != 0) return none;
  const std::string body = body_at(admin_comment, 0);
  if (body == "admitted") return admitted();
  const std::vector<std::string> fields = split_commas(body);
  PlannerNote n;
  const std::string& head = fields[0];
  if (head == "stop" || head == "stopped") {
    n.kind = head == "stop" ? Kind::Stop : Kind::Stopped;
  } else if (head.rfind("resize=", 0) == 0 || head.rfind("resized=", 0) == 0) {
    const bool request = head.rfind("resize=", 0) == 0;
    n.kind = request ? Kind::Resize : Kind::Resized;
    if (!parse_int(head.substr(request ? 7 : 8), 1, max_gpus, &n.gpus)) return none;
  } else {
    return none;
  }
  const bool stop = n.kind == Kind::Stop || n.kind == Kind::Stopped;
  bool have_at = false, have_done = false, have_gpu_s = false;
  for (size_t i = 1; i < fields.size(); ++i) {
    const std::string& f = fields[i];
    if (!stop && f.rfind("type=", 0) == 0 && n.type.empty() && is_type(f.substr(5))) {
      n.type = f.substr(5);
    } else if (f.rfind("at=", 0) == 0 && !have_at) {
      if (!parse_epoch(f, &n.at)) return none;
      have_at = true;
    } else if (!parse_count(f, "done", &n.done, &have_done) && !parse_count(f, "gpu_s", &n.gpu_s, &have_gpu_s)) {
      return none;  // an unknown, repeated or out-of-range field: not a note of ours
    }
  }
  // A stop names its decision's time; a resize may leave it out (an admin's note by hand).
  if (stop && !have_at) return none;
  return n;
}

WrapperNote WrapperNote::ready(bool signal) {
  WrapperNote n;
  n.state = State::Ready;
  n.signal = signal;
  return n;
}

WrapperNote WrapperNote::requeued(long long at) {
  WrapperNote n;
  n.state = State::Requeued;
  n.at = at;
  return n;
}

std::string WrapperNote::str() const {
  switch (state) {
    case State::None: return "";
    case State::Ready: return kPrefix + "wrapper=ready" + (signal ? ",signal" : "");
    case State::Requeued: return kPrefix + "wrapper=requeued,at=" + std::to_string(at);
  }
  return "";
}

WrapperNote WrapperNote::parse(const std::string& comment) {
  WrapperNote none;
  const size_t at = comment.find(kPrefix + "wrapper=");
  if (at == std::string::npos) return none;
  const std::vector<std::string> fields = split_commas(body_at(comment, at).substr(8));
  WrapperNote n;
  if (fields[0] == "ready" && fields.size() == 1) return ready(false);
  if (fields[0] == "ready" && fields.size() == 2 && fields[1] == "signal") return ready(true);
  if (fields[0] == "requeued" && fields.size() == 2 && parse_epoch(fields[1], &n.at)) return requeued(n.at);
  return none;
}

std::string WrapperNote::merged_into(const std::string& comment) const {
  std::string rest = comment;
  const size_t at = rest.find(kPrefix + "wrapper=");
  if (at != std::string::npos) {
    const size_t end = rest.find_first_of(" \t\n;", at);
    rest.erase(at, end == std::string::npos ? std::string::npos : end - at);
  }
  // What is left of the user's own text, without the separators around our note.
  const size_t b = rest.find_first_not_of(" ;");
  const size_t e = rest.find_last_not_of(" ;");
  rest = b == std::string::npos ? "" : rest.substr(b, e - b + 1);
  const std::string note = str();
  if (rest.empty()) return note;
  return note.empty() ? rest : note + "; " + rest;
}

}  // namespace ringsched
