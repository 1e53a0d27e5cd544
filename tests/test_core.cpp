// SPDX-License-Identifier: GPL-2.0-or-later
// The policy library's core: CSV reading, the cluster/job/profile model, the throughput model and
// the importers of the real reference tables. Bad input must name file and line.
#include <cppunit/extensions/HelperMacros.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include "ringsched/csv.h"
#include "ringsched/importers.h"
#include "ringsched/model.h"
#include "ringsched/throughput.h"
#include "test_util.h"

using namespace ringsched;

class CoreTest : public CppUnit::TestFixture {
  CPPUNIT_TEST_SUITE(CoreTest);
  CPPUNIT_TEST(csvQuotesAndComments);
  CPPUNIT_TEST(csvWrongFieldCountNamesLine);
  CPPUNIT_TEST(csvMissingFileAndColumn);
  CPPUNIT_TEST(profileRejectsBadThroughputs);
  CPPUNIT_TEST(profileRoundTrip);
  CPPUNIT_TEST(profileDuplicateRowsNameBothLines);
  CPPUNIT_TEST(clusterLoadAndErrors);
  CPPUNIT_TEST(jobValidation);
  CPPUNIT_TEST(impossibleJobs);
  CPPUNIT_TEST(measuredPointsWin);
  CPPUNIT_TEST(fitInterpolatesMonotonicSegment);
  CPPUNIT_TEST(singlePointGetsSublinearScaling);
  CPPUNIT_TEST(mixedTypesProportionalSplit);
  CPPUNIT_TEST(predictionsAndMeasurementsReplaceThem);
  CPPUNIT_TEST(gavelImporterOnRealTable);
  CPPUNIT_TEST(elasticflowImporterSkipsUnmeasured);
  CPPUNIT_TEST(gavelNames);
  CPPUNIT_TEST(typeFromConstraint);
  CPPUNIT_TEST_SUITE_END();

 public:
  void csvQuotesAndComments() {
    CsvFile f = CsvFile::parse("# comment\na,b,c\n\"x, y\",2,\"say \"\"hi\"\"\"\n\n3,4,5\n", "t.csv");
    CPPUNIT_ASSERT_EQUAL(size_t(2), f.rows().size());
    CPPUNIT_ASSERT_EQUAL(std::string("x, y"), f.str(f.rows()[0], 0));
    CPPUNIT_ASSERT_EQUAL(std::string("say \"hi\""), f.str(f.rows()[0], 2));
    CPPUNIT_ASSERT_EQUAL(3, f.rows()[0].line);
    CPPUNIT_ASSERT_EQUAL(5, f.rows()[1].line);
    CPPUNIT_ASSERT_EQUAL(2.0, f.number(f.rows()[0], 1));
  }

  void csvWrongFieldCountNamesLine() {
    std::string msg = error_of([] { CsvFile::parse("a,b\n1,2\n1,2,3\n", "bad.csv"); });
    CPPUNIT_ASSERT_MESSAGE(msg, contains(msg, "bad.csv:3:"));
    msg = error_of([] { CsvFile::parse("a,b\n\"1,2\n", "q.csv"); });
    CPPUNIT_ASSERT_MESSAGE(msg, contains(msg, "q.csv:2:") && contains(msg, "unterminated"));
    CsvFile f = CsvFile::parse("a,b\n1,x\n", "n.csv");
    msg = error_of([&] { f.number(f.rows()[0], 1); });
    CPPUNIT_ASSERT_MESSAGE(msg, contains(msg, "n.csv:2:") && contains(msg, "'b'"));
    msg = error_of([&] { CsvFile::parse("a\nnan\n", "nan.csv").number(CsvRow{2, {"nan"}}, 0); });
    CPPUNIT_ASSERT_MESSAGE(msg, contains(msg, "not a finite number"));
  }

  void csvMissingFileAndColumn() {
    std::string msg = error_of([] { CsvFile::read("/nonexistent/dir/x.csv"); });
    CPPUNIT_ASSERT_MESSAGE(msg, contains(msg, "x.csv") && contains(msg, "cannot open"));
    CsvFile f = CsvFile::parse("a,b\n", "m.csv");
    msg = error_of([&] { f.require_column("c"); });
    CPPUNIT_ASSERT_MESSAGE(msg, contains(msg, "m.csv") && contains(msg, "'c'"));
    msg = error_of([] { CsvFile::parse("# only a comment\n", "e.csv"); });
    CPPUNIT_ASSERT_MESSAGE(msg, contains(msg, "e.csv") && contains(msg, "empty"));
  }

  void profileRejectsBadThroughputs() {
    TempDir dir;
    const char* header = "model,gpu_type,num_gpus,global_batch,iters_per_s\n";
    struct Case {
      const char* row;
      const char* expect;
    } cases[] = {
        {"m,v100,1,32,-1\n", "iters_per_s"},
        {"m,v100,1,32,0\n", "iters_per_s"},
        {"m,v100,0,32,1\n", "num_gpus"},
        {"m,v100,1,32,abc\n", "not a finite number"},
        {"m,v100,1\n", "expected 5 fields"},
        {",v100,1,32,1\n", "model"},
        {"m,v100,1,32,1e300\n", "iters_per_s"},  // finite, but the fitted curve was NaN
        {"m,v100,1,1e300,1\n", "global_batch"},
        {"m,v100,1,32,0x10\n", "not a finite number"},  // strtod reads hexadecimal
    };
    for (const Case& c : cases) {
      std::string path = dir.write("p.csv", std::string(header) + "m,v100,2,32,3\n" + c.row);
      std::string msg = error_of([&] { ProfileTable::load_csv(path); });
      CPPUNIT_ASSERT_MESSAGE(c.row + std::string(" -> ") + msg,
                             contains(msg, "p.csv:3:") && contains(msg, c.expect));
    }
  }

  void profileRoundTrip() {
    TempDir dir;
    ProfileTable t;
    t.add({"m", "V100", 1, 32, 2.5});
    t.add({"m", "v100", 2, 32, 4.0});
    t.add({"m", "v100", 2, 32, 4.5});  // replaces the previous point
    std::string path = dir.path() + "/out.csv";
    t.save_csv(path);
    ProfileTable u = ProfileTable::load_csv(path);
    CPPUNIT_ASSERT_EQUAL(size_t(2), u.points().size());
    CPPUNIT_ASSERT(u.has("m", "v100"));
    CPPUNIT_ASSERT_DOUBLES_EQUAL(4.5, u.points_for("m", "v100")[1].iters_per_s, 1e-12);
  }

  // The same (model, type, GPUs, batch) twice in one file is an error naming both lines, also
  // when the rows differ only in how the type is written or with a comment between them.
  void profileDuplicateRowsNameBothLines() {
    TempDir dir;
    std::string path = dir.write("dup.csv",
                                 "model,gpu_type,num_gpus,global_batch,iters_per_s\n"
                                 "m,v100,1,32,2.5\n"
                                 "m,v100,2,32,4.0\n"
                                 "# measured again\n"
                                 "m,V100,2,32,4.5\n");
    std::string msg = error_of([&] { ProfileTable::load_csv(path); });
    CPPUNIT_ASSERT_MESSAGE(msg, contains(msg, "dup.csv:5:") && contains(msg, "duplicate") &&
                                    contains(msg, "line 3"));
    // Other batches and sizes of the same model are distinct points.
    ProfileTable t = ProfileTable::load_csv(dir.write(
        "ok.csv", "model,gpu_type,num_gpus,global_batch,iters_per_s\nm,v100,2,32,4\nm,v100,2,64,3\nm,k80,2,32,1\n"));
    CPPUNIT_ASSERT_EQUAL(size_t(3), t.points().size());
  }

  void clusterLoadAndErrors() {
    TempDir dir;
    Cluster c = Cluster::load_csv(dir.write(
        "c.csv", "node,gpu_type,gpus,intra_gbps,inter_gbps\nn1,V100,4,,\nn2,k80,8,50,10\n"));
    CPPUNIT_ASSERT_EQUAL(12, c.total_gpus());
    CPPUNIT_ASSERT_EQUAL(4, c.gpus_of_type("v100"));
    CPPUNIT_ASSERT_EQUAL(size_t(2), c.types().size());
    CPPUNIT_ASSERT_DOUBLES_EQUAL(10.0, c.find("n2")->inter_gbps, 1e-12);
    std::string msg = error_of([&] { Cluster::load_csv(dir.write("d.csv", "node,gpu_type,gpus\nn1,v100,4\nn1,v100,4\n")); });
    CPPUNIT_ASSERT_MESSAGE(msg, contains(msg, "d.csv:3:") && contains(msg, "twice"));
    msg = error_of([&] { Cluster::load_csv(dir.write("z.csv", "node,gpu_type,gpus\nn1,v100,0\n")); });
    CPPUNIT_ASSERT_MESSAGE(msg, contains(msg, "z.csv:2:") && contains(msg, "gpus"));
    msg = error_of([&] { Cluster::load_csv(dir.write("e.csv", "node,gpu_type,gpus\n")); });
    CPPUNIT_ASSERT_MESSAGE(msg, contains(msg, "e.csv") && contains(msg, "no nodes"));
    msg = error_of([] { Cluster{}.validate(); });
    CPPUNIT_ASSERT_MESSAGE(msg, contains(msg, "no nodes"));
  }

  void jobValidation() {
    Job j;
    j.id = "7";
    j.model = "m";
    j.iterations = j.remaining = 100;
    j.min_gpus = 4;
    j.max_gpus = 2;
    std::string msg = error_of([&] { j.validate(); });
    CPPUNIT_ASSERT_MESSAGE(msg, contains(msg, "job 7") && contains(msg, "4-2"));
    j.max_gpus = 8;
    j.validate();
    j.remaining = 200;
    msg = error_of([&] { j.validate(); });
    CPPUNIT_ASSERT_MESSAGE(msg, contains(msg, "remaining"));
    j.remaining = 100;
    j.iterations = -1;
    CPPUNIT_ASSERT(!error_of([&] { j.validate(); }).empty());
  }

  void impossibleJobs() {
    Cluster c;
    c.nodes = {{"a", "v100", 4}, {"b", "k80", 8}};
    Job j;
    j.id = "1";
    j.model = "m";
    j.iterations = j.remaining = 10;
    j.min_gpus = 1;
    j.max_gpus = 4;
    CPPUNIT_ASSERT_EQUAL(std::string(), why_impossible(j, c));
    j.allowed_types = {"h100"};
    CPPUNIT_ASSERT(contains(why_impossible(j, c), "'h100' is not in this cluster"));
    j.allowed_types = {"v100"};
    j.min_gpus = 8;
    j.max_gpus = 8;
    CPPUNIT_ASSERT(contains(why_impossible(j, c), "4 of the allowed types"));
  }

  // ElasticFlow's A100 resnet50 at batch 64: a real, non-monotonic curve.
  static ThroughputModel resnet_a100() {
    ProfileTable t;
    const double v[] = {6.8429775823889685, 11.838468717843664, 18.298925886403232,
                        21.265357623184627, 21.509686255706676, 22.749826545597376,
                        20.969147690424624};
    for (int i = 0; i < 7; ++i) t.add({"resnet50-b64", "a100", 1 << i, 64, v[i]});
    return ThroughputModel(t);
  }

  void measuredPointsWin() {
    ThroughputModel m = resnet_a100();
    CPPUNIT_ASSERT_DOUBLES_EQUAL(18.298925886403232, m.iters_per_s("resnet50-b64", "A100", 4), 1e-9);
    CPPUNIT_ASSERT_DOUBLES_EQUAL(20.969147690424624, m.iters_per_s("resnet50-b64", "a100", 64), 1e-9);
    CPPUNIT_ASSERT_EQUAL(0.0, m.iters_per_s("resnet50-b64", "v100", 4));
    CPPUNIT_ASSERT_EQUAL(0.0, m.iters_per_s("unknown", "a100", 4));
    CPPUNIT_ASSERT_EQUAL(0.0, m.iters_per_s("resnet50-b64", "a100", 0));
    CPPUNIT_ASSERT(m.knows("resnet50-b64", "a100"));
    CPPUNIT_ASSERT(m.fit("resnet50-b64", "a100"));
    CPPUNIT_ASSERT_EQUAL(7, m.fit("resnet50-b64", "a100")->points);
  }

  void fitInterpolatesMonotonicSegment() {
    ThroughputModel m = resnet_a100();
    double v2 = m.iters_per_s("resnet50-b64", "a100", 2);
    double v3 = m.iters_per_s("resnet50-b64", "a100", 3);
    double v4 = m.iters_per_s("resnet50-b64", "a100", 4);
    CPPUNIT_ASSERT_MESSAGE(std::to_string(v3), v3 > v2 && v3 < v4);
    RingFit f = *m.fit("resnet50-b64", "a100");
    CPPUNIT_ASSERT(f.t_comp > 0 && f.beta >= 0 && f.alpha >= 0);
    // The fit alone is within 25% of every measured point on this real curve.
    const double v[] = {6.84, 11.84, 18.30, 21.27, 21.51, 22.75, 20.97};
    for (int i = 0; i < 7; ++i) {
      double fitted = 1.0 / f.t_iter(1 << i);
      CPPUNIT_ASSERT_MESSAGE(std::to_string(1 << i) + ": " + std::to_string(fitted),
                             std::fabs(fitted - v[i]) / v[i] < 0.25);
    }
  }

  void singlePointGetsSublinearScaling() {
    ProfileTable t;
    t.add({"m", "k80", 1, 32, 2.0});
    ThroughputModel m(t);
    double v8 = m.iters_per_s("m", "k80", 8);
    CPPUNIT_ASSERT(v8 > 2.0 && v8 < 16.0);
    CPPUNIT_ASSERT_DOUBLES_EQUAL(2.0, m.iters_per_s("m", "k80", 1), 1e-12);
  }

  void mixedTypesProportionalSplit() {
    ProfileTable t;
    for (int n : {1, 2, 4, 8}) {
      t.add({"m", "v100", n, 64, 4.0 * n / (1 + 0.05 * (n - 1))});
      t.add({"m", "k80", n, 64, 1.0 * n / (1 + 0.05 * (n - 1))});
    }
    ThroughputModel m(t);
    double v4 = m.iters_per_s("m", "v100", 4);
    double k4 = m.iters_per_s("m", "k80", 4);
    double mix = m.iters_per_s_mixed("m", {{"v100", 2}, {"k80", 2}});
    CPPUNIT_ASSERT_MESSAGE(std::to_string(mix), mix > k4 && mix < v4);
    // Adding slow GPUs to fast ones never makes the batch split slower than compute alone allows.
    double v2 = m.iters_per_s("m", "v100", 2);
    CPPUNIT_ASSERT(m.iters_per_s_mixed("m", {{"v100", 2}, {"k80", 0}}) == v2);
    CPPUNIT_ASSERT_EQUAL(0.0, m.iters_per_s_mixed("m", {{"v100", 2}, {"a100", 2}}));
    CPPUNIT_ASSERT_EQUAL(0.0, m.iters_per_s_mixed("m", {}));
  }

  void predictionsAndMeasurementsReplaceThem() {
    ThroughputModel m = resnet_a100();
    m.add_prediction("newnet", "a100", "resnet50-b64", "a100", 0.5);
    CPPUNIT_ASSERT(m.knows("newnet", "a100"));
    CPPUNIT_ASSERT(m.is_predicted("newnet", "a100"));
    CPPUNIT_ASSERT_DOUBLES_EQUAL(0.5 * 18.298925886403232, m.iters_per_s("newnet", "a100", 4), 1e-9);
    // The resolved speed the planner keeps for a round gives the same values, predicted or
    // measured, with the type in any case; unknown pairs and sizes below 1 give 0.
    const ThroughputModel::Speed predicted = m.speed("newnet", "A100"), measured = m.speed("resnet50-b64", "a100");
    for (int n : {1, 2, 3, 4, 8, 64}) {
      CPPUNIT_ASSERT_EQUAL(m.iters_per_s("newnet", "a100", n), predicted(n));
      CPPUNIT_ASSERT_EQUAL(m.iters_per_s("resnet50-b64", "a100", n), measured(n));
    }
    CPPUNIT_ASSERT_EQUAL(0.0, predicted(0));
    CPPUNIT_ASSERT_EQUAL(0.0, m.speed("newnet", "t4")(4));
    CPPUNIT_ASSERT_EQUAL(0.0, ThroughputModel::Speed()(4));
    m.add_measurement({"newnet", "a100", 4, 64, 3.0});
    CPPUNIT_ASSERT(!m.is_predicted("newnet", "a100"));
    CPPUNIT_ASSERT_DOUBLES_EQUAL(3.0, m.iters_per_s("newnet", "a100", 4), 1e-12);
    std::string msg = error_of([&] { m.add_prediction("x", "a100", "resnet50-b64", "a100", -1); });
    CPPUNIT_ASSERT(contains(msg, "ratio"));
  }

  void gavelImporterOnRealTable() {
    std::string path = shared_data("gavel/throughputs_isolated.csv");
    CsvFile raw = CsvFile::read(path);
    int zero = 0;
    for (const CsvRow& r : raw.rows())
      zero += raw.number(r, 3) == 0 || contains(raw.str(r, 2), "_unconsolidated");
    ImportStats st;
    ProfileTable t = import_gavel_throughputs(path, &st);
    CPPUNIT_ASSERT_EQUAL(static_cast<int>(raw.rows().size()), st.rows);
    CPPUNIT_ASSERT_EQUAL(zero, st.skipped);
    CPPUNIT_ASSERT_EQUAL(st.rows - zero, st.points);
    CPPUNIT_ASSERT_EQUAL(size_t(3), t.types().size());
    CPPUNIT_ASSERT(t.has("resnet18-b16", "k80") && t.has("transformer-b128", "v100"));
    // The heterogeneity is not uniform (Gavel's own observation): ResNet-50 is faster on V100
    // than on K80, but Recommendation is fastest on P100, not V100.
    ThroughputModel m(t);
    CPPUNIT_ASSERT(m.iters_per_s("resnet50-b64", "v100", 1) > m.iters_per_s("resnet50-b64", "k80", 1));
    CPPUNIT_ASSERT(m.iters_per_s("recommendation-b1024", "p100", 1) >
                   m.iters_per_s("recommendation-b1024", "v100", 1));
  }

  void elasticflowImporterSkipsUnmeasured() {
    ImportStats st;
    ProfileTable t = import_elasticflow_dir(shared_data("elasticflow/throughputs_A100"), "A100", &st);
    CPPUNIT_ASSERT(st.skipped > 0);
    CPPUNIT_ASSERT(contains(st.skipped_why, "nan") || contains(st.skipped_why, "zero"));
    CPPUNIT_ASSERT(t.has("resnet50-b64", "a100"));
    CPPUNIT_ASSERT(!t.points_at_batch("resnet50cifar10-b64", "a100", 64).empty());
    for (const ProfilePoint& p : t.points()) CPPUNIT_ASSERT(p.iters_per_s > 0);
    TempDir dir;
    dir.write("bad.csv", "global_batch_size,1,2\n64,1.0,-2\n");
    std::string msg = error_of([&] { import_elasticflow_dir(dir.path(), "t4"); });
    CPPUNIT_ASSERT_MESSAGE(msg, contains(msg, "bad.csv:2:") && contains(msg, "negative"));
    msg = error_of([] { import_elasticflow_dir("/nonexistent-dir", "t4"); });
    CPPUNIT_ASSERT(contains(msg, "cannot open"));
  }

  void typeFromConstraint() {
    CPPUNIT_ASSERT_EQUAL(std::string("v100"), type_from_constraint("V100"));
    CPPUNIT_ASSERT_EQUAL(std::string("a100-80gb"), type_from_constraint("A100-80GB"));
    for (const char* not_one : {"", "v100|p100", "v100&ib", "[v100*2]", "v100,p100", "v 100"})
      CPPUNIT_ASSERT_EQUAL_MESSAGE(not_one, std::string(""), type_from_constraint(not_one));
    // The name of a set of types, one format for decision reasons and ringsim's job rows.
    CPPUNIT_ASSERT_EQUAL(std::string("k80"), type_set_name({{"k80", 4}}));
    CPPUNIT_ASSERT_EQUAL(std::string("k80+p100+v100"), type_set_name({{"v100", 1}, {"k80", 2}, {"p100", 8}}));
    CPPUNIT_ASSERT_EQUAL(std::string(""), type_set_name({}));
  }

  void gavelNames() {
    CPPUNIT_ASSERT_EQUAL(std::string("resnet18-b16"), gavel_model_id("ResNet-18 (batch size 16)"));
    CPPUNIT_ASSERT_EQUAL(std::string("a3c"), gavel_model_id("A3C"));
    CPPUNIT_ASSERT_EQUAL(16.0, gavel_batch("ResNet-18 (batch size 16)"));
    CPPUNIT_ASSERT(!error_of([] { gavel_model_id("(batch size 3)"); }).empty());
  }
};

CPPUNIT_TEST_SUITE_REGISTRATION(CoreTest);
