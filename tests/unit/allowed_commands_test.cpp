// Tests of libs/trainable/allowed_commands: resolving a command's program as execvp(3) would
// (PATH lookup, relative paths against the working directory, symlinks) and the worker's
// --allow-command list matched against it.
#include "libs/trainable/allowed_commands.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

namespace tunebus::trainable {
namespace {

namespace fs = std::filesystem;

// Sets PATH for one test and restores it after.
class ScopedPath {
 public:
  explicit ScopedPath(const std::string& value) {
    if (const char* old = ::getenv("PATH")) old_ = old;
    ::setenv("PATH", value.c_str(), 1);
  }
  ~ScopedPath() {
    if (old_) {
      ::setenv("PATH", old_->c_str(), 1);
    } else {
      ::unsetenv("PATH");
    }
  }

 private:
  std::optional<std::string> old_;
};

class ResolveProgramTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "tunebus_allowed_XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = fs::canonical(tmpl);  // $TMPDIR may itself be a symlink
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes a shell script at `path` (folders created) with `mode`.
  static void Script(const fs::path& path, mode_t mode = 0755) {
    fs::create_directories(path.parent_path());
    std::ofstream(path) << "#!/bin/sh\nexit 0\n";
    ::chmod(path.c_str(), mode);
  }

  fs::path dir_;
};

TEST_F(ResolveProgramTest, ABareNameIsTheFirstExecutableOfThatNameInPath) {
  // PATH = a:b:c; a holds a non-executable `prog`, b none, c an executable one: execvp skips
  // the first and runs c/prog, and so does the resolution.
  Script(dir_ / "a" / "prog", 0644);
  Script(dir_ / "c" / "prog");
  ScopedPath path((dir_ / "a").string() + ":" + (dir_ / "b").string() + ":" +
                  (dir_ / "c").string());
  auto r = ResolveProgram("prog", "/");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->path, (dir_ / "c" / "prog").string());
  EXPECT_EQ(r->real_path, (dir_ / "c" / "prog").string());
}

TEST_F(ResolveProgramTest, RelativePathsAndPathEntriesResolveAgainstTheWorkingDirectory) {
  // The child changes into its working directory before it execs, so "./tools/run.sh", a
  // relative PATH entry ("bin") and an empty one (".") name files there, not in the worker's
  // own working directory.
  Script(dir_ / "work" / "tools" / "run.sh");
  Script(dir_ / "work" / "bin" / "from-bin");
  Script(dir_ / "work" / "here");
  auto r = ResolveProgram("./tools/run.sh", (dir_ / "work").string());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->path, (dir_ / "work" / "tools" / "run.sh").string());
  ScopedPath path("/nonexistent-tunebus:bin:");
  r = ResolveProgram("from-bin", (dir_ / "work").string());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->path, (dir_ / "work" / "bin" / "from-bin").string());
  r = ResolveProgram("here", (dir_ / "work").string());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->path, (dir_ / "work" / "here").string());
}

TEST_F(ResolveProgramTest, ASymlinkKeepsItsNameInPathAndItsTargetInRealPath) {
  // bin/python3 -> ../real/python3.11 (as /usr/bin/python3 -> python3.11): path keeps the name
  // an operator writes in a pattern, real_path names the file that runs.
  Script(dir_ / "real" / "python3.11");
  fs::create_directories(dir_ / "bin");
  fs::create_symlink("../real/python3.11", dir_ / "bin" / "python3");
  auto r = ResolveProgram((dir_ / "bin" / "python3").string(), "");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->path, (dir_ / "bin" / "python3").string());
  EXPECT_EQ(r->real_path, (dir_ / "real" / "python3.11").string());
}

TEST_F(ResolveProgramTest, DotDotAndSymlinkedFoldersAreResolvedInPath) {
  // "allowed/../other/prog" and "link/prog" (link -> other) both name other/prog: a pattern on
  // allowed/* or link/* must not match them by their spelling.
  Script(dir_ / "other" / "prog");
  fs::create_directories(dir_ / "allowed");
  fs::create_directory_symlink(dir_ / "other", dir_ / "link");
  for (const std::string program : {"allowed/../other/prog", "link/prog", "./link/../other/prog"}) {
    SCOPED_TRACE(program);
    auto r = ResolveProgram(program, dir_.string());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->path, (dir_ / "other" / "prog").string());
    EXPECT_EQ(r->real_path, (dir_ / "other" / "prog").string());
  }
}

TEST_F(ResolveProgramTest, AProgramThatCannotRunIsAnErrorNamingIt) {
  Script(dir_ / "plain.sh", 0644);
  fs::create_directories(dir_ / "folder");
  {
    ScopedPath path((dir_ / "empty").string());
    auto r = ResolveProgram("tunebus-no-such-program", dir_.string());
    EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
    EXPECT_EQ(r.status().message(),
              "tunebus-no-such-program: not found in PATH (" + (dir_ / "empty").string() + ")");
  }
  EXPECT_EQ(ResolveProgram("./missing.sh", dir_.string()).status().message(),
            dir_.string() + "/./missing.sh (no such file)");
  EXPECT_EQ(ResolveProgram((dir_ / "plain.sh").string(), "").status().message(),
            (dir_ / "plain.sh").string() + " (not executable)");
  EXPECT_EQ(ResolveProgram((dir_ / "folder").string(), "").status().message(),
            (dir_ / "folder").string() + " (not a regular file)");
  EXPECT_EQ(ResolveProgram("", "").status().code(), StatusCode::kInvalidArgument);
}

TEST(AllowedCommandsTest, NoPatternsAllowEveryProgram) {
  const AllowedCommands all;
  EXPECT_TRUE(all.allows_every_command());
  EXPECT_EQ(all.Describe(), "every command");
  EXPECT_TRUE(all.Check({.path = "/usr/bin/curl", .real_path = "/usr/bin/curl"}).ok());
}

TEST(AllowedCommandsTest, APatternMatchesThePathOrTheRealPath) {
  // /usr/bin/python3 -> python3.11 is allowed by either name; '*' crosses '/' (no
  // FNM_PATHNAME) and matches a leading dot (no FNM_PERIOD).
  const ResolvedProgram python{.path = "/usr/bin/python3", .real_path = "/usr/bin/python3.11"};
  auto by_name = AllowedCommands::Make({"/usr/bin/python3"});
  ASSERT_TRUE(by_name.ok());
  EXPECT_TRUE(by_name->Check(python).ok());
  auto by_target = AllowedCommands::Make({"/usr/bin/python3.1?"});
  ASSERT_TRUE(by_target.ok());
  EXPECT_TRUE(by_target->Check(python).ok());
  auto tree = AllowedCommands::Make({"/opt/ml/*"});
  ASSERT_TRUE(tree.ok());
  EXPECT_TRUE(tree->Check({.path = "/opt/ml/a/b/train", .real_path = "/opt/ml/a/b/train"}).ok());
  EXPECT_TRUE(
      tree->Check({.path = "/opt/ml/.venv/bin/python", .real_path = "/usr/bin/python3.11"}).ok());
  EXPECT_FALSE(tree->Check(python).ok());
  auto any_python = AllowedCommands::Make({"*/python[0-9]*"});
  ASSERT_TRUE(any_python.ok());
  EXPECT_TRUE(any_python->Check(python).ok());
}

TEST(AllowedCommandsTest, ARefusalNamesTheProgramAndThePatternList) {
  auto allowed = AllowedCommands::Make({"/usr/bin/python3*", "/opt/ml/*"});
  ASSERT_TRUE(allowed.ok());
  EXPECT_FALSE(allowed->allows_every_command());
  EXPECT_EQ(allowed->Describe(), "/usr/bin/python3*, /opt/ml/*");
  Status s = allowed->Check({.path = "/usr/bin/curl", .real_path = "/usr/bin/curl"});
  EXPECT_EQ(s.code(), StatusCode::kForbidden);
  EXPECT_EQ(s.message(),
            "command /usr/bin/curl is not allowed on this worker (--allow-command: "
            "/usr/bin/python3*, /opt/ml/*)");
  s = allowed->Check({.path = "/usr/bin/pip", .real_path = "/usr/lib/pip/pip.sh"});
  EXPECT_EQ(s.message(),
            "command /usr/bin/pip (/usr/lib/pip/pip.sh) is not allowed on this worker "
            "(--allow-command: /usr/bin/python3*, /opt/ml/*)");
}

TEST(AllowedCommandsTest, PatternsThatCanNeverMatchAreRefused) {
  EXPECT_EQ(AllowedCommands::Make({""}).status().code(), StatusCode::kInvalidArgument);
  auto relative = AllowedCommands::Make({"/usr/bin/*", "python3"});
  EXPECT_EQ(relative.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(relative.status().message().find("'python3' can never match"), std::string::npos)
      << relative.status().message();
  EXPECT_TRUE(AllowedCommands::Make({"*/python3", "?usr/bin/x", "[/]opt/*"}).ok());
}

}  // namespace
}  // namespace tunebus::trainable
