// SPDX-License-Identifier: GPL-2.0-or-later
// ringsched as a real cluster runs it (issue 14): jobs submitted by ordinary users (ringtest1,
// made by the harness), and a second ordinary user (ringtest2) who attacks them. On the real local
// Slurm cluster with the plugins, with ringrun and ringrun-train staged where those users can run
// them:
//  - the planner resizes an ordinary user's elastic job (the user only checkpoints and requeues;
//    the planner applies the shape it decided), and the job's request file cannot resize it;
//  - a user cannot change the GPUs, node count or type of their ring job, nor touch another's job;
//  - a resize signal that arrives as the job starts is deferred, never fatal;
//  - pre-created checkpoint folders, forged checkpoints, planted requests and a rendezvous port
//    flooded with idle and garbage connections leave a job unaffected;
//  - a job whose id Slurm gives again (a fresh controller state) does not resume from the
//    checkpoints an earlier job of that id left in the default folder.
#include <cppunit/extensions/HelperMacros.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "slurm_test_cluster.h"
#include "test_util.h"

using ringtest::SlurmTestCluster;

namespace {

constexpr const char* kOwner = SlurmTestCluster::kOwner;
constexpr const char* kOther = SlurmTestCluster::kOther;

SlurmTestCluster& cluster() {
  static SlurmTestCluster& c = [] () -> SlurmTestCluster& {
    SlurmTestCluster::ensure_user(kOwner);
    SlurmTestCluster::ensure_user(kOther);
    SlurmTestCluster& cl = SlurmTestCluster::get("test_slurm_users", true);
    cl.stage_programs();
    return cl;
  }();
  return c;
}

// A folder in /tmp owned by `user` with `mode`, removed at the end of the test.
class UserDir {
 public:
  UserDir(const std::string& user, const char* mode) {
    char tmpl[] = "/tmp/ringsched-users-XXXXXX";
    path_ = mkdtemp(tmpl);
    cluster().run("chown " + user + ": '" + path_ + "' && chmod " + mode + " '" + path_ + "'");
  }
  ~UserDir() { cluster().run("rm -rf '" + path_ + "'"); }
  const std::string& path() const { return path_; }
  // A file written as root and given to `user` (mode 0755 for scripts).
  std::string write(const std::string& user, const std::string& name, const std::string& text) const {
    const std::string p = path_ + "/" + name;
    std::ofstream(p) << text;
    cluster().run("chown " + user + ": '" + p + "' && chmod 755 '" + p + "'");
    return p;
  }

 private:
  std::string path_;
};

// The job script of a ringrun-train job: `exec ringrun` unless `exec_ringrun` is false; each
// worker runs `worker_prefix` followed by ringrun-train's command line.
std::string train_script(const std::string& model, int steps, const std::string& loss, bool exec_ringrun = true,
                         const std::string& ringrun_options = "", const std::string& worker_prefix = "") {
  const std::string stage = cluster().dir() + "/stage";
  return "#!/bin/sh\n" + cluster().stage_env() + "\n" + (exec_ringrun ? "exec " : "") + stage +
         "/ringrun --model=" + model + " --profiles=" + stage + "/gavel.csv " + ringrun_options + " -- " +
         worker_prefix + stage + "/ringrun-train --steps=" + std::to_string(steps) +
         " --log-every=100000 --emulate-model=" + model + " --loss-log=" + loss + "\n";
}

bool wait_state(unsigned job, const std::string& state, double seconds) {
  return SlurmTestCluster::wait_for([&] { return cluster().job_field(job, "JobState") == state; }, seconds);
}

std::string text_of(const std::string& path) { return cluster().run("cat '" + path + "' 2>&1").out; }

// Removes what a job of the owner left in ~/.ringrun (its default checkpoint folder when it was
// submitted from a folder others may write), so that a later cluster that gives the id again
// meets a clean home.
class OwnerRingrunDir {
 public:
  explicit OwnerRingrunDir(unsigned job) : glob_("~" + std::string(kOwner) + "/.ringrun/ringrun-" + std::to_string(job)) {}
  ~OwnerRingrunDir() { cluster().run("rm -rf " + glob_ + " " + glob_ + ".earlier-*"); }

 private:
  std::string glob_;
};

// What a job said, for messages.
std::string story(unsigned job, const std::string& out) {
  return "\n--- scontrol:\n" + cluster().run("scontrol show job " + std::to_string(job)).out + "--- job output:\n" +
         cluster().run("tail -n 30 '" + out + "'").out;
}

}  // namespace

class SlurmUsersTest : public CppUnit::TestFixture {
  CPPUNIT_TEST_SUITE(SlurmUsersTest);
  CPPUNIT_TEST(testPlannerResizesOrdinaryUsersJob);
  CPPUNIT_TEST(testUsersCannotChangeShapesOrOthersJobs);
  CPPUNIT_TEST(testHandoverTakesLatestDecision);
  CPPUNIT_TEST(testEarlyResizeSignalIsDeferred);
  CPPUNIT_TEST(testAttacksLeaveJobUnaffected);
  CPPUNIT_TEST(testReusedJobIdStartsAfresh);
  CPPUNIT_TEST_SUITE_END();

 public:
  void setUp() override { cluster(); }
  void tearDown() override { cluster().cancel_all(); }

  void testPlannerResizesOrdinaryUsersJob() {
    // v100-2 and half of v100-1 held: the elastic job of ringtest1 starts on the 2 free v100s.
    const unsigned far = cluster().submit("--gres=gpu:v100:4 -w v100-2 --wrap 'sleep 300'");
    const unsigned near = cluster().submit("--gres=gpu:v100:2 -w v100-1 --wrap 'sleep 300'");
    CPPUNIT_ASSERT(wait_state(far, "RUNNING", 20) && wait_state(near, "RUNNING", 20));
    UserDir w(kOwner, "755");
    const std::string loss = w.path() + "/loss", out = w.path() + "/job.out";
    const std::string script = w.write(kOwner, "job.sh", train_script("transformer-b128", 900, loss));
    std::string msg;
    const unsigned job = cluster().submit_as(kOwner,
                                             "--requeue --open-mode=append -o " + out +
                                                 " --ring-model=transformer-b128 --ring-types=v100 --ring-gpus=1-4 " +
                                                 script,
                                             w.path(), &msg);
    CPPUNIT_ASSERT_MESSAGE(msg, job > 0);
    CPPUNIT_ASSERT_MESSAGE(story(job, out), wait_state(job, "RUNNING", 30));
    CPPUNIT_ASSERT_EQUAL(SlurmTestCluster::gpu_tres("2"), cluster().job_field(job, "TresPerNode"));
    CPPUNIT_ASSERT_MESSAGE(story(job, out), SlurmTestCluster::wait_for([&] { return read_loss(loss).size() >= 30; }, 60));
    // The rest of v100-1 frees up: the planner grows the job, ringrun checkpoints and requeues it
    // as its owner, the planner applies 4 GPUs and releases it.
    cluster().run("scancel " + std::to_string(near));
    CPPUNIT_ASSERT_MESSAGE(story(job, out), SlurmTestCluster::wait_for([&] {
                             auto m = read_loss(loss);
                             return !m.empty() && m.rbegin()->second.second == 4;
                           }, 120));
    CPPUNIT_ASSERT_EQUAL(SlurmTestCluster::gpu_tres("4"), cluster().job_field(job, "TresPerNode"));
    CPPUNIT_ASSERT_EQUAL(std::string("v100"), cluster().job_field(job, "Features"));
    CPPUNIT_ASSERT_MESSAGE(story(job, out),
                           cluster().job_field(job, "AdminComment").rfind("ringsched:resized=4,type=v100", 0) == 0);
    CPPUNIT_ASSERT_EQUAL_MESSAGE(story(job, out), std::string("1"), cluster().job_field(job, "Restarts"));
    // A resize through the request file is the planner's to decide: refused, the job goes on.
    const std::string request = w.path() + "/ringrun-" + std::to_string(job) + "/resize-request";
    const auto planted = cluster().run_as(kOwner, "echo 1 > " + request + ".tmp && mv " + request + ".tmp " + request);
    CPPUNIT_ASSERT_EQUAL_MESSAGE(planted.out, 0, planted.rc);
    CPPUNIT_ASSERT_MESSAGE(story(job, out), SlurmTestCluster::wait_for([&] {
                             return contains(text_of(out), "size is decided by the ringsched planner");
                           }, 10));
    CPPUNIT_ASSERT_MESSAGE(story(job, out), wait_state(job, "COMPLETED", 180));
    CPPUNIT_ASSERT_EQUAL_MESSAGE(story(job, out), std::string("1"), cluster().job_field(job, "Restarts"));
    const auto steps = read_loss(loss);
    CPPUNIT_ASSERT_EQUAL_MESSAGE(story(job, out), size_t(900), steps.size());
    CPPUNIT_ASSERT(!contains(text_of(out), "denied"));
  }

  void testUsersCannotChangeShapesOrOthersJobs() {
    UserDir w(kOwner, "755");
    std::string msg;
    const unsigned job = cluster().submit_as(kOwner, "--hold -o /dev/null --ring-model=resnet50-b64 --ring-gpus=1-4 --wrap true",
                                             w.path(), &msg);
    CPPUNIT_ASSERT_MESSAGE(msg, job > 0);
    const std::string id = std::to_string(job);
    const std::string tres = cluster().job_field(job, "TresPerNode"), features = cluster().job_field(job, "Features"),
                      nodes = cluster().job_field(job, "NumNodes");
    CPPUNIT_ASSERT_EQUAL(std::string("ringsched:admitted"), cluster().job_field(job, "AdminComment"));
    // The owner may not change what the planner owns, nor write the planner's notes.
    for (const std::string& change : {"TresPerNode=" + SlurmTestCluster::gpu_tres("8"), std::string("Features=k80"),
                                      std::string("NumNodes=2-2"), std::string("AdminComment=ringsched:resize=8")}) {
      const auto r = cluster().run_as(kOwner, "scontrol update JobId=" + id + " " + change);
      CPPUNIT_ASSERT_MESSAGE(change + " was allowed: " + r.out, r.rc != 0);
    }
    // The other user may do nothing to the job at all.
    for (const std::string& action : {"scontrol update JobId=" + id + " TimeLimit=5", "scancel " + id,
                                      "scontrol requeue " + id, "scontrol release " + id,
                                      "scontrol update JobId=" + id + " Comment=ringsched:wrapper=requeued,at=0"}) {
      const auto r = cluster().run_as(kOther, action);
      const bool refused = r.rc != 0 || contains(r.out, "denied") || contains(r.out, "not permitted");
      CPPUNIT_ASSERT_MESSAGE(action + " by " + kOther + " was allowed: " + r.out, refused);
    }
    CPPUNIT_ASSERT_EQUAL(tres, cluster().job_field(job, "TresPerNode"));
    CPPUNIT_ASSERT_EQUAL(features, cluster().job_field(job, "Features"));
    CPPUNIT_ASSERT_EQUAL(nodes, cluster().job_field(job, "NumNodes"));
    CPPUNIT_ASSERT_EQUAL(std::string("PENDING"), cluster().job_field(job, "JobState"));
    CPPUNIT_ASSERT_EQUAL(std::string("ringsched:admitted"), cluster().job_field(job, "AdminComment"));
    // What is the owner's stays allowed.
    const auto ok = cluster().run_as(kOwner, "scontrol update JobId=" + id + " TimeLimit=10");
    CPPUNIT_ASSERT_EQUAL_MESSAGE(ok.out, 0, ok.rc);
  }

  void testHandoverTakesLatestDecision() {
    // ringrun requeued its job (held) for the planner's decision at 100; the planner has decided
    // again since (at 200): the planner applies its latest decision and releases the job. A
    // Comment naming a later decision than the planner's (forged) applies nothing.
    UserDir w(kOwner, "755");
    std::string msg;
    const unsigned job = cluster().submit_as(kOwner, "--hold -o /dev/null --constraint=v100 --gres=gpu:1 --wrap 'sleep 1'",
                                             w.path(), &msg);
    const unsigned forged = cluster().submit_as(kOwner, "--hold -o /dev/null --constraint=v100 --gres=gpu:1 --wrap 'sleep 1'",
                                                w.path(), &msg);
    CPPUNIT_ASSERT_MESSAGE(msg, job > 0 && forged > 0);
    for (const auto& [id, at] : {std::pair<unsigned, int>{job, 100}, {forged, 300}}) {
      auto r = cluster().run("scontrol update JobId=" + std::to_string(id) + " AdminComment=ringsched:resize=2,type=v100,at=200");
      CPPUNIT_ASSERT_EQUAL_MESSAGE(r.out, 0, r.rc);
      r = cluster().run_as(kOwner, "scontrol update JobId=" + std::to_string(id) +
                                       " Comment=ringsched:wrapper=requeued,at=" + std::to_string(at));
      CPPUNIT_ASSERT_EQUAL_MESSAGE(r.out, 0, r.rc);
    }
    CPPUNIT_ASSERT_MESSAGE(cluster().run("scontrol show job " + std::to_string(job)).out, SlurmTestCluster::wait_for([&] {
                             return cluster().job_field(job, "AdminComment") == "ringsched:resized=2,type=v100,at=200";
                           }, 20));
    CPPUNIT_ASSERT_EQUAL(SlurmTestCluster::gpu_tres("2"), cluster().job_field(job, "TresPerNode"));
    CPPUNIT_ASSERT(SlurmTestCluster::wait_for([&] { return cluster().job_field(job, "JobState") != "PENDING"; }, 30));
    CPPUNIT_ASSERT_EQUAL(std::string("ringsched:resize=2,type=v100,at=200"), cluster().job_field(forged, "AdminComment"));
    CPPUNIT_ASSERT_EQUAL(SlurmTestCluster::gpu_tres("1"), cluster().job_field(forged, "TresPerNode"));
    CPPUNIT_ASSERT_EQUAL(std::string("PENDING"), cluster().job_field(forged, "JobState"));
  }

  void testEarlyResizeSignalIsDeferred() {
    // 1. The planner's resize right as a job starts, with a batch script that runs ringrun
    //    without exec (the shell would die of SIGUSR2): the planner sends no signal before
    //    ringrun says it receives it; ringrun reads the note and the job is resized, not killed.
    const unsigned near = cluster().submit("--gres=gpu:v100:2 -w v100-1 --wrap 'sleep 300'");
    const unsigned far = cluster().submit("--gres=gpu:v100:4 -w v100-2 --wrap 'sleep 300'");
    CPPUNIT_ASSERT(wait_state(far, "RUNNING", 20) && wait_state(near, "RUNNING", 20));
    UserDir w(kOwner, "755");
    const std::string loss = w.path() + "/loss", out = w.path() + "/job.out";
    const std::string script = w.write(kOwner, "job.sh", train_script("transformer-b128", 300, loss, false));
    std::string msg;
    const unsigned job = cluster().submit_as(
        kOwner, "--requeue --open-mode=append -o " + out + " --ring-model=transformer-b128 --ring-types=v100 --ring-gpus=1-4 " + script,
        w.path(), &msg);
    CPPUNIT_ASSERT_MESSAGE(msg, job > 0);
    const std::string id = std::to_string(job);
    cluster().run("for i in $(seq 600); do s=$(squeue -h -j " + id + " -o %T); [ \"$s\" = RUNNING ] && break; sleep 0.05; done; "
                  "scancel " + std::to_string(near));
    CPPUNIT_ASSERT_MESSAGE(story(job, out), SlurmTestCluster::wait_for([&] {
                             const std::string s = cluster().job_field(job, "JobState");
                             return s == "COMPLETED" || s == "FAILED" || s == "CANCELLED";
                           }, 180));
    CPPUNIT_ASSERT_EQUAL_MESSAGE(story(job, out), std::string("COMPLETED"), cluster().job_field(job, "JobState"));
    CPPUNIT_ASSERT_EQUAL_MESSAGE(story(job, out), SlurmTestCluster::gpu_tres("4"), cluster().job_field(job, "TresPerNode"));
    CPPUNIT_ASSERT_EQUAL_MESSAGE(story(job, out), size_t(300), read_loss(loss).size());
    cluster().cancel_all();

    // 2. SIGUSR2 straight to a running ringrun (the batch shell's own process after exec), 50
    //    times 20 ms apart: each is only "look at the notes now", never fatal.
    const std::string loss2 = w.path() + "/loss2", out2 = w.path() + "/job2.out";
    const std::string script2 = w.write(kOwner, "job2.sh", train_script("resnet50-b64", 200, loss2));
    const unsigned job2 = cluster().submit_as(kOwner, "-o " + out2 + " --ring-model=resnet50-b64 --ring-gpus=1 --ring-fixed " + script2,
                                              w.path(), &msg);
    CPPUNIT_ASSERT_MESSAGE(msg, job2 > 0);
    CPPUNIT_ASSERT_MESSAGE(story(job2, out2), SlurmTestCluster::wait_for([&] {
                             return contains(cluster().job_field(job2, "Comment"), "ringsched:wrapper=ready,signal");
                           }, 60));
    cluster().run("for i in $(seq 50); do scancel -b -s USR2 " + std::to_string(job2) + "; sleep 0.02; done");
    CPPUNIT_ASSERT_MESSAGE(story(job2, out2), SlurmTestCluster::wait_for([&] {
                             const std::string s = cluster().job_field(job2, "JobState");
                             return s == "COMPLETED" || s == "FAILED" || s == "CANCELLED";
                           }, 120));
    CPPUNIT_ASSERT_EQUAL_MESSAGE(story(job2, out2), std::string("COMPLETED"), cluster().job_field(job2, "JobState"));
    CPPUNIT_ASSERT_EQUAL_MESSAGE(story(job2, out2), size_t(200), read_loss(loss2).size());
  }

  void testAttacksLeaveJobUnaffected() {
    // ringtest1 submits from a shared scratch folder (1777) where ringtest2 can create the
    // predictable checkpoint folder name before the job starts.
    UserDir scratch("root", "1777");
    UserDir w(kOwner, "755");
    const std::string loss = w.path() + "/loss", out = w.path() + "/job.out";
    // Rank 1 starts 3 s late: libringrt's rendezvous port is open only until every rank has
    // joined (a few ms when both start at once), so without the delay the flood below could miss
    // it altogether ('connections made: 0') and prove nothing; with it rank 0 waits for rank 1
    // with the port flooded, which is the attack.
    const std::string late_rank1 = "/bin/sh -c '[ \"$RINGRT_RANK\" != 1 ] || sleep 3; exec \"$0\" \"$@\"' ";
    const std::string script = w.write(kOwner, "job.sh", train_script("resnet50-b64", 400, loss, true, "", late_rank1));
    std::string msg;
    const unsigned job = cluster().submit_as(kOwner,
                                             "--hold -o " + out + " --ring-model=resnet50-b64 --ring-gpus=2 --ring-fixed " + script,
                                             scratch.path(), &msg);
    CPPUNIT_ASSERT_MESSAGE(msg, job > 0);
    const OwnerRingrunDir own_folder(job);
    const std::string id = std::to_string(job);
    const std::string trap = scratch.path() + "/ringrun-" + id;
    // The attacker's folder: a forged checkpoint far ahead, a planted resize request, a secret.
    const auto planted = cluster().run_as(kOther, "mkdir -m 777 " + trap + " && head -c 4096 /dev/urandom > " + trap +
                                                      "/ckpt-999999.rck && echo 1 > " + trap + "/resize-request && "
                                                      "echo 0123456789abcdef0123456789abcdef > " + trap + "/secret");
    CPPUNIT_ASSERT_EQUAL_MESSAGE(planted.out, 0, planted.rc);
    // What the attacker may not do to the job itself.
    for (const std::string& action : {"scontrol update JobId=" + id + " TresPerNode=" + SlurmTestCluster::gpu_tres("1"), "scancel " + id,
                                      "scontrol requeue " + id}) {
      const auto r = cluster().run_as(kOther, action);
      CPPUNIT_ASSERT_MESSAGE(action + " was allowed: " + r.out, r.rc != 0 || contains(r.out, "denied"));
    }
    // Idle and garbage connections to the job's rendezvous port (libringrt's default from the
    // job id), 100 at a time, renewed while the job runs.
    const int port = 20000 + static_cast<int>(job % 12000);
    UserDir attacker(kOther, "755");
    const std::string flood = attacker.write(kOther, "flood.py",
        "import socket, time, sys\n"
        "port, stop = int(sys.argv[1]), sys.argv[2]\n"
        "import os\n"
        "held, made = [], 0\n"
        "while not os.path.exists(stop):\n"
        "    held = [s for s in held if s.fileno() >= 0]\n"
        "    while len(held) < 100:\n"
        "        s = socket.socket()\n"
        "        s.settimeout(0.2)\n"
        "        try:\n"
        "            s.connect(('127.0.0.1', port))\n"
        "            if len(held) % 2: s.sendall(os.urandom(64))\n"
        "            held.append(s); made += 1\n"
        "        except OSError:\n"
        "            s.close(); break\n"
        "    time.sleep(0.05)\n"
        "    for s in held[:10]: s.close()\n"
        "    held = held[10:]\n"
        "    open(sys.argv[3], 'w').write(str(made))\n");
    const std::string stop = w.path() + "/stop-flood";
    cluster().run("(runuser -u " + std::string(kOther) + " -- /usr/bin/python3 " + flood + " " + std::to_string(port) +
                  " " + stop + " " + attacker.path() + "/connections >" + attacker.path() + "/flood.log 2>&1 &)");
    const auto released = cluster().run_as(kOwner, "scontrol release " + id);
    CPPUNIT_ASSERT_EQUAL_MESSAGE(released.out, 0, released.rc);
    const bool ended = SlurmTestCluster::wait_for([&] {
      const std::string s = cluster().job_field(job, "JobState");
      return s == "COMPLETED" || s == "FAILED" || s == "CANCELLED" || s == "TIMEOUT";
    }, 240, 1.0);
    cluster().run("touch " + stop);
    CPPUNIT_ASSERT_MESSAGE(story(job, out), ended);
    const std::string said = text_of(out);
    CPPUNIT_ASSERT_EQUAL_MESSAGE(story(job, out), std::string("COMPLETED"), cluster().job_field(job, "JobState"));
    CPPUNIT_ASSERT_EQUAL_MESSAGE(story(job, out), std::string("0"), cluster().job_field(job, "Restarts"));
    CPPUNIT_ASSERT_MESSAGE(said, contains(said, "/.ringrun/ringrun-" + id));
    CPPUNIT_ASSERT_MESSAGE(said, !contains(said, "999999"));
    // Every step trained once, from step 1 (nothing restored from the forged checkpoint).
    const auto steps = read_loss(loss);
    CPPUNIT_ASSERT_EQUAL_MESSAGE(said, size_t(400), steps.size());
    CPPUNIT_ASSERT_EQUAL(0L, steps.begin()->first);
    // The flood did reach the port (else this test proved nothing about the rendezvous).
    const std::string flooded = text_of(attacker.path() + "/connections") + text_of(attacker.path() + "/flood.log");
    CPPUNIT_ASSERT_MESSAGE("connections made: " + flooded, std::atol(flooded.c_str()) >= 100);
    // The attacker's folder was never used, and the job's own folder is private.
    CPPUNIT_ASSERT_EQUAL(std::string("ckpt-999999.rck\nresize-request\nsecret\n"), cluster().run("ls " + trap).out);
    const auto mode = cluster().run("stat -c %a ~" + std::string(kOwner) + "/.ringrun/ringrun-" + id);
    CPPUNIT_ASSERT_EQUAL_MESSAGE(mode.out, std::string("700\n"), mode.out);
  }

  void testReusedJobIdStartsAfresh() {
    // Slurm gives an id again after its controller starts from a fresh state (as every test
    // cluster does): an earlier job of the same id, same user and same submit folder finished
    // there and left its final checkpoint in the default folder. The new job trains every step
    // from the start; the earlier folder is kept aside. (ringrun restored the earlier job's
    // final checkpoint and ended the new job at once, untrained.)
    UserDir w(kOwner, "755");
    const std::string loss = w.path() + "/loss", out = w.path() + "/job.out";
    const std::string script = w.write(kOwner, "job.sh", train_script("resnet50-b64", 40, loss));
    std::string msg;
    const unsigned job = cluster().submit_as(
        kOwner, "--hold -o " + out + " --ring-model=resnet50-b64 --ring-gpus=1 --ring-fixed " + script, w.path(), &msg);
    CPPUNIT_ASSERT_MESSAGE(msg, job > 0);
    const std::string id = std::to_string(job), folder = w.path() + "/ringrun-" + id;
    // The earlier job: ringrun as a batch job of that id runs it (its default folder), to the end.
    const std::string stage = cluster().dir() + "/stage";
    const auto earlier = cluster().run_as(kOwner, cluster().stage_env() + " && SLURM_JOB_ID=" + id + " SLURM_SUBMIT_DIR=" +
                                                      w.path() + " " + stage + "/ringrun --gpus=1 -- " + stage +
                                                      "/ringrun-train --steps=40 --log-every=100000", w.path());
    CPPUNIT_ASSERT_EQUAL_MESSAGE(earlier.out, 0, earlier.rc);
    CPPUNIT_ASSERT_EQUAL_MESSAGE(earlier.out, std::string("ckpt-40.rck\n"), cluster().run("ls " + folder + " | grep ckpt").out);
    const auto released = cluster().run_as(kOwner, "scontrol release " + id);
    CPPUNIT_ASSERT_EQUAL_MESSAGE(released.out, 0, released.rc);
    CPPUNIT_ASSERT_MESSAGE(story(job, out), SlurmTestCluster::wait_for([&] {
                             const std::string s = cluster().job_field(job, "JobState");
                             return s == "COMPLETED" || s == "FAILED" || s == "CANCELLED" || s == "TIMEOUT";
                           }, 120, 1.0));
    const std::string said = text_of(out);
    CPPUNIT_ASSERT_EQUAL_MESSAGE(story(job, out), std::string("COMPLETED"), cluster().job_field(job, "JobState"));
    const auto steps = read_loss(loss);
    CPPUNIT_ASSERT_EQUAL_MESSAGE(said, size_t(40), steps.size());
    CPPUNIT_ASSERT_EQUAL_MESSAGE(said, 0L, steps.begin()->first);
    CPPUNIT_ASSERT_MESSAGE(said, contains(said, "earlier job " + id) && !contains(said, "restored step"));
    // The earlier job's folder is kept, whole, beside the new one.
    const auto aside = cluster().run("ls -d " + folder + ".earlier-* && ls " + folder + ".earlier-*/ | grep ckpt");
    CPPUNIT_ASSERT_MESSAGE(aside.out, aside.rc == 0 && contains(aside.out, "ckpt-40.rck"));
  }
};

CPPUNIT_TEST_SUITE_REGISTRATION(SlurmUsersTest);
