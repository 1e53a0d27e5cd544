// SPDX-License-Identifier: GPL-2.0-or-later
#include "resize_note.h"

#include <cctype>
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

std::string PlannerNote::str() const {
  switch (kind) {
    case Kind::None: return "";
    case Kind::Admitted: return kPrefix + "admitted";
    case Kind::Resize:
    case Kind::Resized:
      return kPrefix + (kind == Kind::Resize ? "resize=" : "resized=") + std::to_string(gpus) +
             (type.empty() ? "" : ",type=" + type) + ",at=" + std::to_string(at);
    case Kind::Stop:
    case Kind::Stopped:
      return kPrefix + (kind == Kind::Stop ? "stop" : "stopped") + ",at=" + std::to_string(at);
  }
  return "";
}

PlannerNote PlannerNote::parse(const std::string& admin_comment, int max_gpus) {
  PlannerNote none;
  if (admin_comment.rfind(kPrefix, 0) != 0) return none;
  const std::string body = body_at(admin_comment, 0);
  if (body == "admitted") return admitted();
  for (const Kind k : {Kind::Stop, Kind::Stopped}) {
    const std::string word = k == Kind::Stop ? "stop," : "stopped,";
    PlannerNote n;
    if (body.rfind(word, 0) != 0 || !parse_epoch(body.substr(word.size()), &n.at)) continue;
    n.kind = k;
    return n;
  }
  const bool request = body.rfind("resize=", 0) == 0;
  if (!request && body.rfind("resized=", 0) != 0) return none;
  const std::vector<std::string> fields = split_commas(body.substr(request ? 7 : 8));
  PlannerNote n;
  n.kind = request ? Kind::Resize : Kind::Resized;
  if (!parse_int(fields[0], 1, max_gpus, &n.gpus)) return none;
  for (size_t i = 1; i < fields.size(); ++i) {
    if (fields[i].rfind("type=", 0) == 0 && n.type.empty() && is_type(fields[i].substr(5))) {
      n.type = fields[i].substr(5);
    } else if (fields[i].rfind("at=", 0) == 0 && n.at == 0) {
      if (!parse_epoch(fields[i], &n.at)) return none;
    } else {
      return none;  // an unknown or repeated field: not a note of ours
    }
  }
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
