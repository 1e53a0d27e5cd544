// SPDX-License-Identifier: GPL-2.0-or-later
// The man pages (man/*.[1-8]) as an admin reads them: every page in the source tree is installed
// (man/Makefile.am), none holds a control character (a Python "\f" once wrote a form feed for
// groff's font escape, and `man ringsched.conf` printed "BJobRequeueR"), and groff formats each
// without a warning (-ww: every warning category).
#include <cppunit/extensions/HelperMacros.h>
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "process_util.h"
#include "test_skip.h"

using ringsched_test::run;
using ringsched_test::slurp;

namespace {

const std::string kManDir = std::string(RINGSCHED_SRCDIR) + "/man";

// The pages in the source tree: names ending in "." and a section digit.
std::vector<std::string> pages() {
  std::vector<std::string> out;
  DIR* d = opendir(kManDir.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.size() > 2 && name[name.size() - 2] == '.' && name.back() >= '1' && name.back() <= '8')
      out.push_back(name);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

class ManPagesTest : public CppUnit::TestFixture {
  CPPUNIT_TEST_SUITE(ManPagesTest);
  CPPUNIT_TEST(everyPageIsInstalled);
  CPPUNIT_TEST(noControlCharacters);
  CPPUNIT_TEST(groffFormatsWithoutWarnings);
  CPPUNIT_TEST_SUITE_END();

 public:
  void everyPageIsInstalled() {
    std::vector<std::string> found = pages();
    CPPUNIT_ASSERT_MESSAGE("no man pages in " + kManDir, found.size() >= 8);
    // The words after "dist_man_MANS =" or "+=" in man/Makefile.am.
    std::set<std::string> installed;
    std::istringstream am(slurp(kManDir + "/Makefile.am"));
    for (std::string line; std::getline(am, line);) {
      if (line.rfind("dist_man_MANS", 0) != 0) continue;
      std::istringstream words(line.substr(line.find('=') + 1));
      for (std::string w; words >> w;) installed.insert(w);
    }
    for (const std::string& p : found)
      CPPUNIT_ASSERT_MESSAGE("man/" + p + " is not in man/Makefile.am's dist_man_MANS", installed.count(p));
    for (const std::string& p : installed)
      CPPUNIT_ASSERT_MESSAGE("man/Makefile.am installs " + p + ", which man/ does not have",
                             std::find(found.begin(), found.end(), p) != found.end());
  }

  void noControlCharacters() {
    for (const std::string& p : pages()) {
      std::string text = slurp(kManDir + "/" + p);
      CPPUNIT_ASSERT_MESSAGE("man/" + p + " is empty", !text.empty());
      int line = 1;
      for (unsigned char c : text) {
        if (c == '\n') ++line;
        bool control = (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f;
        CPPUNIT_ASSERT_MESSAGE("man/" + p + ":" + std::to_string(line) + ": control character " +
                                   std::to_string(c) + " (a troff escape is a backslash)",
                               !control);
      }
    }
  }

  void groffFormatsWithoutWarnings() {
    if (access("/usr/bin/groff", X_OK) != 0) RINGSCHED_SKIP("groff is not installed");
    for (const std::string& p : pages()) {
      std::string out;
      const int status = run("/usr/bin/groff -man -ww -z '" + kManDir + "/" + p + "'", &out);
      CPPUNIT_ASSERT_MESSAGE("groff on man/" + p + " exited " + std::to_string(status) + ": " + out,
                             status == 0);
      CPPUNIT_ASSERT_MESSAGE("groff warns on man/" + p + ":\n" + out, out.empty());
    }
  }
};

CPPUNIT_TEST_SUITE_REGISTRATION(ManPagesTest);
