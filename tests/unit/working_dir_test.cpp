// Tests for the shipped working_dir: the experiment file's `working_dir` in every form and each
// error (file:line:field), the gitignore-like exclude matcher, the size cap's message, the
// deterministic archive and its digest, and the checkpoint-store's digest check.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "libs/core/sha256.hpp"
#include "libs/spec/experiment_spec.hpp"
#include "libs/workdir/exclude_matcher.hpp"
#include "libs/workdir/working_dir_archive.hpp"
#include "services/checkpoint-store/checkpoint_blob_store.hpp"
#include "services/checkpoint-store/store_db.hpp"

namespace tunebus {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "tunebus-wd-test-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data()) != nullptr ? pattern : "";
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  void Write(const std::string& rel, const std::string& content) const {
    fs::create_directories((fs::path(path_) / rel).parent_path());
    std::ofstream(fs::path(path_) / rel, std::ios::binary) << content;
  }

 private:
  std::string path_;
};

Result<ExperimentSpec> Parse(const std::string& text) {
  return ParseExperimentYaml(text, "/srv/exp", "exp.yaml");
}

void ExpectInvalid(const std::string& text, const std::string& message) {
  Result<ExperimentSpec> spec = Parse(text);
  ASSERT_FALSE(spec.ok()) << "parsed but expected: " << message;
  EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(spec.status().message(), message);
}

TEST(WorkingDirSpecTest, AbsentShipsTheFilesFolderForACommandAndNothingForABuiltin) {
  // No working_dir: a command trainable ships the file's folder, a builtin ships nothing.
  auto command = Parse("name: e\ntrainable: {command: [python3, train.py]}\n");
  ASSERT_TRUE(command.ok()) << command.status().message();
  EXPECT_TRUE(command->working_dir.shipped);
  EXPECT_EQ(command->working_dir.path, "/srv/exp");
  EXPECT_EQ(command->working_dir.max_size_bytes, 100 << 20);
  EXPECT_TRUE(command->working_dir.excludes.empty());
  EXPECT_EQ(command->trainable.working_dir, "/srv/exp");
  EXPECT_EQ(command->base_dir, "/srv/exp");
  auto builtin = Parse("name: e\ntrainable: {builtin: mock}\n");
  ASSERT_TRUE(builtin.ok());
  EXPECT_FALSE(builtin->working_dir.shipped);
}

TEST(WorkingDirSpecTest, StringIsAFolderRelativeToTheFile) {
  // A string names the folder, relative to the file's; the command runs there when unshipped.
  auto spec = Parse("name: e\ntrainable: {command: [sh, run.sh]}\nworking_dir: ../code\n");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_TRUE(spec->working_dir.shipped);
  EXPECT_EQ(spec->working_dir.path, "/srv/code");
  EXPECT_EQ(spec->working_dir.line, 3);
  EXPECT_EQ(spec->trainable.working_dir, "/srv/code");
  EXPECT_EQ(spec->base_dir, "/srv/exp");
  EXPECT_EQ(spec->results_dir, "/srv/exp/results");  // still beside the file
}

TEST(WorkingDirSpecTest, MapGivesPathExcludesAndCap) {
  // The Python driver's form: an absolute staging folder, excludes, and a cap in MiB.
  auto spec = Parse(
      "name: e\n"
      "trainable: {command: [/usr/bin/python3, _tunebus/run_trainable.py]}\n"
      "working_dir:\n"
      "  path: /abs/staging\n"
      "  excludes: ['*.ckpt', data/, /build]\n"
      "  max_size_mb: 2.5\n");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_TRUE(spec->working_dir.shipped);
  EXPECT_EQ(spec->working_dir.path, "/abs/staging");
  EXPECT_EQ(spec->working_dir.line, 4);
  EXPECT_EQ(spec->working_dir.excludes, (std::vector<std::string>{"*.ckpt", "data/", "/build"}));
  EXPECT_EQ(spec->working_dir.max_size_bytes, int64_t(2.5 * (1 << 20)));
}

TEST(WorkingDirSpecTest, FalseRunsAtTheFilesFolderUnshipped) {
  auto spec = Parse("name: e\ntrainable: {command: [sh, run.sh]}\nworking_dir: false\n");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_FALSE(spec->working_dir.shipped);
  EXPECT_EQ(spec->trainable.working_dir, "/srv/exp");
}

TEST(WorkingDirSpecTest, EveryBadFormNamesFileLineAndField) {
  const std::string head = "name: e\ntrainable: {command: [sh, run.sh]}\n";
  ExpectInvalid(head + "working_dir: [a, b]\n",
                "exp.yaml:3: working_dir: expected a folder, a map {path, excludes, "
                "max_size_mb} or false, got a list");
  ExpectInvalid(head + "working_dir: {pth: x}\n",
                "exp.yaml:3: working_dir: unknown field 'pth'; expected one of path, excludes, "
                "max_size_mb");
  ExpectInvalid(head + "working_dir:\n  max_size_mb: 0\n",
                "exp.yaml:4: working_dir.max_size_mb: must be > 0 (MiB), got 0");
  ExpectInvalid(head + "working_dir:\n  excludes: '*.ckpt'\n",
                "exp.yaml:4: working_dir.excludes: expected a list of patterns, got '*.ckpt'");
  ExpectInvalid(head + "working_dir:\n  excludes: [ok, ../up]\n",
                "exp.yaml:4: working_dir.excludes[1]: '../up' has a '..' component; patterns "
                "are relative to the working_dir");
  ExpectInvalid(head + "working_dir:\n  excludes: ['/']\n",
                "exp.yaml:4: working_dir.excludes[0]: '/' names nothing; a pattern needs a "
                "name or a glob");
}

TEST(WorkingDirSpecTest, MissingFolderIsNamedWithItsLineWhenPacking) {
  // The folder is checked where it is packed (tunectl), with the file's line and field.
  auto spec = Parse("name: e\ntrainable: {command: [sh, run.sh]}\nworking_dir: {path: /x/y}\n");
  ASSERT_TRUE(spec.ok());
  auto packed = PackExperimentWorkingDir(spec->working_dir, spec->results_dir);
  ASSERT_FALSE(packed.ok());
  EXPECT_EQ(packed.status().message(), "exp.yaml:3: working_dir.path: no such folder /x/y");
}

TEST(ExcludeMatcherTest, GitignoreRules) {
  // Unanchored globs match at any depth, a slash anchors, a trailing slash means folders only,
  // ** spans folders and ! re-includes.
  ExcludeMatcher m;
  ASSERT_TRUE(m.Add("*.ckpt").ok());
  ASSERT_TRUE(m.Add("data/").ok());
  ASSERT_TRUE(m.Add("/build").ok());
  ASSERT_TRUE(m.Add("docs/**/draft?.md").ok());
  ASSERT_TRUE(m.Add("logs/*.txt").ok());
  ASSERT_TRUE(m.Add("!logs/keep.txt").ok());
  EXPECT_TRUE(m.Excluded("model.ckpt", false));
  EXPECT_TRUE(m.Excluded("a/b/model.ckpt", false));
  EXPECT_FALSE(m.Excluded("model.ckpt.json", false));
  EXPECT_TRUE(m.Excluded("data", true));
  EXPECT_TRUE(m.Excluded("sub/data", true));
  EXPECT_FALSE(m.Excluded("data", false));  // a file named data is not a folder
  EXPECT_TRUE(m.Excluded("build", true));
  EXPECT_TRUE(m.Excluded("build", false));
  EXPECT_FALSE(m.Excluded("src/build", true));  // anchored at the root
  EXPECT_TRUE(m.Excluded("docs/draft1.md", false));
  EXPECT_TRUE(m.Excluded("docs/a/b/draft2.md", false));
  EXPECT_FALSE(m.Excluded("docs/a/final.md", false));
  EXPECT_TRUE(m.Excluded("logs/run.txt", false));
  EXPECT_FALSE(m.Excluded("logs/keep.txt", false));
  EXPECT_FALSE(m.Excluded("x/logs/run.txt", false));  // a middle slash anchors too
  EXPECT_FALSE(m.Excluded("train.py", false));
}

TEST(ExcludeMatcherTest, IgnoreFileSkipsCommentsAndNamesTheBadLine) {
  ExcludeMatcher m;
  ASSERT_TRUE(m.AddIgnoreFile("# big files\n\n*.bin   \nlogs/\n", ".tunebusignore").ok());
  EXPECT_EQ(m.size(), 2u);
  EXPECT_TRUE(m.Excluded("w/weights.bin", false));
  EXPECT_TRUE(m.Excluded("logs", true));
  EXPECT_FALSE(m.Excluded("# big files", false));
  ExcludeMatcher bad;
  Status s = bad.AddIgnoreFile("ok\n# c\n!\n", "/w/.tunebusignore");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "/w/.tunebusignore:3: '!' names nothing; a pattern needs a name or a glob");
}

TEST(WorkingDirArchiveTest, AlwaysExcludedAndIgnoreFileAndResultsFolder) {
  // .git/, __pycache__/, the results folder inside the working_dir and .tunebusignore's
  // patterns are not shipped; everything else is, sorted.
  TempDir d;
  d.Write("train.py", "print(1)\n");
  d.Write("pkg/util.py", "x = 1\n");
  d.Write(".git/HEAD", "ref\n");
  d.Write("pkg/__pycache__/util.cpython-311.pyc", "bytecode");
  d.Write("results/exp/params.json", "{}");
  d.Write("big.bin", "0123456789");
  d.Write(".tunebusignore", "# weights\n*.bin\n");
  WorkingDirSpec spec;
  spec.path = d.path();
  auto excludes = WorkingDirExcludes(spec, d.path() + "/results");
  ASSERT_TRUE(excludes.ok()) << excludes.status().message();
  auto listing = ListWorkingDir(d.path(), *excludes);
  ASSERT_TRUE(listing.ok()) << listing.status().message();
  std::vector<std::string> paths;
  for (const WorkingDirEntry& e : listing->entries) paths.push_back(e.path);
  EXPECT_EQ(paths, (std::vector<std::string>{".tunebusignore", "pkg", "pkg/util.py", "train.py"}));
  EXPECT_EQ(listing->total_bytes, 16 + 6 + 9);
}

TEST(WorkingDirArchiveTest, SizeCapNamesSizeCapAndTheFiveLargestFiles) {
  WorkingDirListing listing;
  listing.root = "/w";
  for (int i = 1; i <= 7; ++i) {
    listing.entries.push_back({"f" + std::to_string(i), false, int64_t(i) << 20});
    listing.total_bytes += int64_t(i) << 20;
  }
  EXPECT_TRUE(CheckWorkingDirSize(listing, 28 << 20).ok());
  Status s = CheckWorkingDirSize(listing, 10 << 20);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(),
            "/w holds 28.0 MiB to ship, over the cap of 10.0 MiB (max_size_mb); the largest "
            "files: f7 (7.0 MiB), f6 (6.0 MiB), f5 (5.0 MiB), f4 (4.0 MiB), f3 (3.0 MiB); exclude "
            "them (working_dir.excludes or .tunebusignore) or raise working_dir.max_size_mb");
}

TEST(WorkingDirArchiveTest, OverTheCapIsRefusedWithTheFilesLine) {
  TempDir d;
  d.Write("train.py", std::string(3000, 'x'));
  WorkingDirSpec spec;
  spec.path = d.path();
  spec.max_size_bytes = 1000;
  spec.source_name = "exp.yaml";
  spec.line = 4;
  auto packed = PackExperimentWorkingDir(spec, "");
  ASSERT_FALSE(packed.ok());
  EXPECT_EQ(packed.status().code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(packed.status().message().starts_with("exp.yaml:4: working_dir: " + d.path() +
                                                    " holds 2.9 KiB to ship, over the cap of "
                                                    "1000 B"))
      << packed.status().message();
}

TEST(WorkingDirArchiveTest, SameFolderSameDigestAndAChangedFileAnother) {
  // Two folders with the same content made at different times pack to the same bytes; changing
  // one byte changes the digest.
  TempDir a, b;
  for (const TempDir* d : {&a, &b}) {
    d->Write("train.py", "import tunebus\n");
    d->Write("pkg/z.py", "z\n");
    d->Write("pkg/a-b.py", "ab\n");
    ::usleep(20000);
  }
  ExcludeMatcher none;
  auto la = ListWorkingDir(a.path(), none);
  auto lb = ListWorkingDir(b.path(), none);
  ASSERT_TRUE(la.ok() && lb.ok());
  auto pa = PackWorkingDir(*la);
  auto pb = PackWorkingDir(*lb);
  ASSERT_TRUE(pa.ok()) << pa.status().message();
  ASSERT_TRUE(pb.ok()) << pb.status().message();
  EXPECT_EQ(pa->digest, pb->digest);
  EXPECT_EQ(pa->data, pb->data);
  EXPECT_EQ(pa->digest, Sha256Hex(pa->data));
  EXPECT_EQ(pa->files, 3);
  b.Write("pkg/z.py", "Z\n");
  auto pb2 = PackWorkingDir(*ListWorkingDir(b.path(), none));
  ASSERT_TRUE(pb2.ok());
  EXPECT_NE(pb2->digest, pa->digest);
}

TEST(WorkingDirArchiveTest, SymbolicLinksShipTheirTargetsAndALoopIsAnError) {
  // A staging folder of links (the Python driver's) ships the linked content; a link to a
  // folder that holds it is a loop.
  TempDir user, staging;
  user.Write("train.py", "print('hi')\n");
  user.Write("lib/m.py", "m = 1\n");
  fs::create_symlink(user.path() + "/train.py", staging.path() + "/train.py");
  fs::create_directory_symlink(user.path() + "/lib", staging.path() + "/lib");
  staging.Write("_tunebus/run_trainable.py", "run\n");
  ExcludeMatcher none;
  auto listing = ListWorkingDir(staging.path(), none);
  ASSERT_TRUE(listing.ok()) << listing.status().message();
  std::vector<std::string> paths;
  for (const WorkingDirEntry& e : listing->entries) paths.push_back(e.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"_tunebus", "_tunebus/run_trainable.py", "lib",
                                             "lib/m.py", "train.py"}));
  auto packed = PackWorkingDir(*listing);
  ASSERT_TRUE(packed.ok()) << packed.status().message();
  EXPECT_NE(packed->data.find("print('hi')"), std::string::npos);  // content, not a link

  fs::create_directory_symlink(staging.path(), staging.path() + "/lib/loop");  // into user/lib
  auto looped = ListWorkingDir(staging.path(), none);
  ASSERT_FALSE(looped.ok());
  EXPECT_EQ(looped.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(looped.status().message(), "symbolic link loop: lib/loop leads back to " +
                                           staging.path() + ", a folder that contains it");
}

TEST(Sha256Test, KnownVectors) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Sha256 h;
  h.Update("a");
  h.Update("bc");
  EXPECT_EQ(h.HexDigest(), Sha256Hex("abc"));
  EXPECT_TRUE(IsSha256Hex(Sha256Hex("")));
  EXPECT_FALSE(IsSha256Hex("ABC"));
}

TEST(CheckpointBlobStoreDigestTest, CommitsOnlyWhatHasTheNamedDigest) {
  // A working_dir archive is committed only when its chunks' SHA-256 is the one named on the
  // last chunk; a mismatch drops the upload.
  TempDir d;
  auto db = store::StoreDb::Open(d.path(), /*sync=*/false);
  ASSERT_TRUE(db.ok()) << db.status().message();
  store::CheckpointBlobStore blobs(**db);
  const std::vector<char> c0 = {'a', 'b'}, c1 = {'c'};
  const std::string good = Sha256Hex("abc");
  ASSERT_TRUE(blobs.Put("working_dirs/x", 0, c0, false, "").ok());
  Status bad = blobs.Put("working_dirs/x", 1, c1, true, "", Sha256Hex("abd"));
  EXPECT_EQ(bad.code(), StatusCode::kCorruption);
  EXPECT_NE(bad.message().find(good), std::string::npos) << bad.message();
  EXPECT_EQ(blobs.Get("working_dirs/x", 0).status().code(), StatusCode::kNotFound);
  Status orphan = blobs.Put("working_dirs/x", 1, c1, true, "", good);
  EXPECT_EQ(orphan.code(), StatusCode::kFailedPrecondition);  // the upload was dropped
  ASSERT_TRUE(blobs.Put("working_dirs/x", 0, c0, false, "").ok());
  ASSERT_TRUE(blobs.Put("working_dirs/x", 1, c1, true, "", good).ok());
  auto chunk = blobs.Get("working_dirs/x", 1);
  ASSERT_TRUE(chunk.ok());
  EXPECT_EQ(chunk->data, "c");
}

}  // namespace
}  // namespace tunebus
