// SPDX-License-Identifier: GPL-2.0-or-later
// ringrun's defences against other users on the same machine (issue 14): the checkpoint folder is
// private (pre-created, foreign-owned, group/world-writable or linked folders are refused), the
// job's secret is kept across restarts and refused when it is not private, checkpoints carry an
// HMAC keyed by that secret (a forged or altered one is refused and the previous one used), and
// a resize request file another user planted is refused. Real files, real modes and owners (the
// tests run as root and give files to nobody).
#include <cppunit/extensions/HelperMacros.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "checkpoint.h"
#include "resize_watch.h"
#include "test_util.h"

namespace {

constexpr uid_t kNobody = 65534;

std::vector<uint8_t> bytes(size_t n, uint8_t v) { return std::vector<uint8_t>(n, v); }

}  // namespace

class WrapperSecurityTest : public CppUnit::TestFixture {
  CPPUNIT_TEST_SUITE(WrapperSecurityTest);
  CPPUNIT_TEST(folder_is_private);
  CPPUNIT_TEST(foreign_or_open_folders_are_refused);
  CPPUNIT_TEST(secret_is_kept_and_must_be_private);
  CPPUNIT_TEST(forged_checkpoint_is_refused);
  CPPUNIT_TEST(planted_resize_request_is_refused);
  CPPUNIT_TEST_SUITE_END();

 public:
  void folder_is_private() {
    TempDir d;
    const std::string ck = d.path() + "/ck";
    ringrun::CheckpointStore store(ck);
    struct stat st;
    CPPUNIT_ASSERT_EQUAL(0, stat(ck.c_str(), &st));
    CPPUNIT_ASSERT_EQUAL(0700u, unsigned(st.st_mode & 07777));
    CPPUNIT_ASSERT_EQUAL(0, stat(store.secret_file().c_str(), &st));
    CPPUNIT_ASSERT_EQUAL(0600u, unsigned(st.st_mode & 07777));
    // One of the user's own, readable by others: made private, not refused.
    const std::string mine = d.path() + "/mine";
    CPPUNIT_ASSERT_EQUAL(0, mkdir(mine.c_str(), 0755));
    chmod(mine.c_str(), 0755);
    ringrun::CheckpointStore again(mine);
    CPPUNIT_ASSERT_EQUAL(0, stat(mine.c_str(), &st));
    CPPUNIT_ASSERT_EQUAL(0700u, unsigned(st.st_mode & 07777));
  }

  void foreign_or_open_folders_are_refused() {
    TempDir d;
    // Pre-created by another user (as in a shared scratch folder).
    const std::string theirs = d.path() + "/ringrun-479";
    CPPUNIT_ASSERT_EQUAL(0, mkdir(theirs.c_str(), 0777));
    CPPUNIT_ASSERT_EQUAL(0, chown(theirs.c_str(), kNobody, kNobody));
    std::string err = error_of([&] { ringrun::CheckpointStore s(theirs); });
    CPPUNIT_ASSERT_MESSAGE(err, contains(err, theirs) && contains(err, "belongs to uid 65534"));
    // The user's own, but writable by the group or everyone.
    const std::string open = d.path() + "/open";
    CPPUNIT_ASSERT_EQUAL(0, mkdir(open.c_str(), 0700));
    chmod(open.c_str(), 0770);
    err = error_of([&] { ringrun::CheckpointStore s(open); });
    CPPUNIT_ASSERT_MESSAGE(err, contains(err, open) && contains(err, "mode 0770") && contains(err, "refused"));
    // A symbolic link to a folder of the user's.
    const std::string target = d.path() + "/target", link = d.path() + "/link";
    CPPUNIT_ASSERT_EQUAL(0, mkdir(target.c_str(), 0700));
    CPPUNIT_ASSERT_EQUAL(0, symlink(target.c_str(), link.c_str()));
    err = error_of([&] { ringrun::CheckpointStore s(link); });
    CPPUNIT_ASSERT_MESSAGE(err, contains(err, "symbolic link"));
    // Inside a folder others may rename entries of (world-writable, not sticky, not ours).
    const std::string shared = d.path() + "/shared";
    CPPUNIT_ASSERT_EQUAL(0, mkdir(shared.c_str(), 0777));
    chmod(shared.c_str(), 0777);
    CPPUNIT_ASSERT_EQUAL(0, chown(shared.c_str(), kNobody, kNobody));
    err = error_of([&] { ringrun::CheckpointStore s(shared + "/ck"); });
    CPPUNIT_ASSERT_MESSAGE(err, contains(err, "lets other users replace it"));
    // Sticky (like /tmp): fine.
    chmod(shared.c_str(), 01777);
    CPPUNIT_ASSERT_EQUAL(std::string(), error_of([&] { ringrun::CheckpointStore s(shared + "/ck"); }));
  }

  void secret_is_kept_and_must_be_private() {
    TempDir d;
    const std::string ck = d.path() + "/ck";
    std::string first;
    {
      ringrun::CheckpointStore a(ck);
      std::ifstream in(a.secret_file());
      in >> first;
      a.write(10, bytes(100, 1));
    }
    CPPUNIT_ASSERT_EQUAL(size_t(64), first.size());
    // A later store of the job (a restart) keeps the secret and reads the checkpoint.
    ringrun::CheckpointStore b(ck);
    std::string second;
    std::ifstream(b.secret_file()) >> second;
    CPPUNIT_ASSERT_EQUAL(first, second);
    ringrun::Checkpoint c;
    CPPUNIT_ASSERT(b.load_latest(&c, nullptr));
    CPPUNIT_ASSERT_EQUAL(uint64_t(10), c.step);
    // A secret others can read is refused, naming it.
    chmod(b.secret_file().c_str(), 0644);
    const std::string err = error_of([&] { ringrun::CheckpointStore s(ck); });
    CPPUNIT_ASSERT_MESSAGE(err, contains(err, b.secret_file()) && contains(err, "mode 0644"));
  }

  void forged_checkpoint_is_refused() {
    TempDir d;
    ringrun::CheckpointStore store(d.path() + "/job");
    const auto good = bytes(1000, 1);
    store.write(10, good);
    // A well-formed checkpoint made with another secret (what another user can write), far ahead.
    ringrun::CheckpointStore forger(d.path() + "/forger");
    const std::string forged = forger.write(2990, bytes(1000, 9));
    const std::string planted = store.dir() + "/ckpt-2990.rck";
    CPPUNIT_ASSERT_EQUAL(0, rename(forged.c_str(), planted.c_str()));
    std::string err = error_of([&] { store.read_file(planted); });
    CPPUNIT_ASSERT_MESSAGE(err, contains(err, planted) && contains(err, "not written by this job"));
    ringrun::Checkpoint c;
    std::vector<std::string> warn;
    CPPUNIT_ASSERT(store.load_latest(&c, &warn));
    CPPUNIT_ASSERT_EQUAL(uint64_t(10), c.step);
    CPPUNIT_ASSERT(c.payload == good);
    CPPUNIT_ASSERT_EQUAL(size_t(1), warn.size());
    // Our own file with its step altered in the header: refused as well.
    const std::string own = store.write(20, good);
    {
      std::fstream f(own, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(16);
      f.put(char(0x55));
    }
    err = error_of([&] { store.read_file(own); });
    CPPUNIT_ASSERT_MESSAGE(err, contains(err, "checksum mismatch"));
  }

  void planted_resize_request_is_refused() {
    TempDir d;
    const std::string req = d.path() + "/resize-request";
    std::string complaint;
    // The user's own request.
    std::ofstream(req) << "4\n";
    chmod(req.c_str(), 0600);
    CPPUNIT_ASSERT_EQUAL(4, ringrun::read_request_file(req, 16, &complaint));
    CPPUNIT_ASSERT(complaint.empty());
    CPPUNIT_ASSERT(access(req.c_str(), F_OK) != 0);  // consumed
    // Planted by another user: refused and removed.
    std::ofstream(req) << "1\n";
    CPPUNIT_ASSERT_EQUAL(0, chown(req.c_str(), kNobody, kNobody));
    CPPUNIT_ASSERT_EQUAL(0, ringrun::read_request_file(req, 16, &complaint));
    CPPUNIT_ASSERT_MESSAGE(complaint, contains(complaint, "owned by uid 65534"));
    CPPUNIT_ASSERT(access(req.c_str(), F_OK) != 0);
    // Ours but writable by others; a symbolic link.
    std::ofstream(req) << "2\n";
    chmod(req.c_str(), 0666);
    complaint.clear();
    CPPUNIT_ASSERT_EQUAL(0, ringrun::read_request_file(req, 16, &complaint));
    CPPUNIT_ASSERT_MESSAGE(complaint, contains(complaint, "writable by other users"));
    const std::string target = d.write("elsewhere", "2\n");
    CPPUNIT_ASSERT_EQUAL(0, symlink(target.c_str(), req.c_str()));
    complaint.clear();
    CPPUNIT_ASSERT_EQUAL(0, ringrun::read_request_file(req, 16, &complaint));
    CPPUNIT_ASSERT_MESSAGE(complaint, contains(complaint, "symbolic link"));
  }
};

CPPUNIT_TEST_SUITE_REGISTRATION(WrapperSecurityTest);
