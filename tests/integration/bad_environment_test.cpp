// tunectl on a bad environment: an experiment whose results folder cannot be created is a
// message naming the folder and exit code 1, never an abort (it used to end with an uncaught
// std::filesystem::filesystem_error, exit 134). Run as an unprivileged user on a folder owned by
// root (as root, through setpriv; otherwise on a folder without write permission).
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include <gtest/gtest.h>

#include "tests/integration/harness.hpp"

namespace tunebus::testing {
namespace {

TEST(BadEnvironmentTest, AnUnwritableResultsFolderIsAClearErrorAndExitOne) {
  TempDir dir;
  const fs::path locked = dir.path() / "locked";
  fs::create_directories(locked);
  ASSERT_EQ(::chmod(locked.c_str(), 0555), 0);
  ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);  // the unprivileged user can reach it
  const fs::path file = dir.path() / "exp.yaml";
  WriteFile(file, "name: locked\ntrainable: {builtin: noop}\nresults_dir: " + (locked / "results").string() + "\n");
  ASSERT_EQ(::chmod(file.c_str(), 0644), 0);

  Process::Options o;
  o.name = "tunectl-locked";
  o.log_dir = dir.path() / "logs";
  const std::string tunectl = (BinDir() / "tunectl").string();
  if (::geteuid() == 0) {
    o.binary = "/usr/bin/setpriv";
    o.args = {"--reuid=65534", "--regid=65534", "--clear-groups", tunectl, "run", file.string()};
  } else {
    o.binary = tunectl;
    o.args = {"run", file.string()};
  }
  auto run = Process::Spawn(o);
  const auto code = run->Wait(Millis{30000});
  ASSERT_TRUE(code.has_value()) << run->Output();
  EXPECT_EQ(*code, 1) << run->Output();
  EXPECT_NE(run->Stderr().find("tunectl: cannot create the results folder " + (locked / "results").string()),
            std::string::npos)
      << run->Output();
  EXPECT_NE(run->Stderr().find("Permission denied"), std::string::npos) << run->Output();
  ::chmod(locked.c_str(), 0755);  // so TempDir can remove it
}

}  // namespace
}  // namespace tunebus::testing
