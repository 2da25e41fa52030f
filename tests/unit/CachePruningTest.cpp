//===- CachePruningTest.cpp - The disk cache's size cap -------------------===//
//
// Pruning keeps the least recently used files out (a disk hit counts as a
// use), waits out its interval, never touches files that are not complete
// artifacts, and races safely with writers and readers; the cap's
// environment variable takes sizes such as 512M and rejects anything else
// with one clear error.
//
//===----------------------------------------------------------------------===//
#include "compiler/CacheFile.h"
#include "compiler/CachePruner.h"
#include "compiler/KernelCache.h"
#include "tests/unit/ScopedEnv.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

using namespace fmhajit;
namespace fs = llvm::sys::fs;
using std::chrono::seconds;

namespace {

constexpr llvm::StringLiteral kPrint = "fmhajit 0.1.0|llvm 22|x86_64|znver4";

/// A kernel's bytes: \p size copies of a letter that depends on \p name.
std::string payloadFor(llvm::StringRef name, size_t size = 1000) {
  return std::string(size, char('a' + name.back() % 26));
}

/// Sets the access time of \p path to \p ago before now, and its
/// modification time a little earlier: as after a read, so that with
/// `relatime` the kernel itself will not move the access time on the next
/// read (it does when the access time is not past the modification time),
/// and only the cache's own stamping can.
void backdate(llvm::StringRef path, seconds ago) {
  llvm::Expected<fs::file_t> fd =
      fs::openNativeFileForReadWrite(path, fs::CD_OpenExisting, fs::OF_None);
  ASSERT_TRUE(bool(fd)) << llvm::toString(fd.takeError());
  auto when = std::chrono::system_clock::now() - ago;
  EXPECT_FALSE(
      fs::setLastAccessAndModificationTime(*fd, when, when - seconds(10)));
  fs::closeFile(*fd);
}

class CachePruningTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(fs::createUniqueDirectory("fmhajit-prune-test", dir));
  }
  void TearDown() override { fs::remove_directories(dir); }

  /// A cache on the test's directory with cap \p maxBytes, pruning after
  /// every write unless \p interval says otherwise.
  std::unique_ptr<KernelCache> makeCache(uint64_t maxBytes,
                                         seconds interval = seconds(0)) {
    CacheConfig config;
    config.dir = std::string(dir);
    config.maxBytes = maxBytes;
    config.pruneInterval = interval;
    config.onWarning = [this](llvm::StringRef w) {
      std::lock_guard<std::mutex> lock(warningsMutex);
      warnings.push_back(w.str());
    };
    return llvm::cantFail(KernelCache::create(std::move(config)));
  }

  /// Looks \p name up in \p cache and returns where it was found.
  ArtifactOrigin get(KernelCache &cache, llvm::StringRef name) {
    std::string bytes = payloadFor(name);
    auto a = cache.getOrCompile(name, kPrint, [&] { return bytes; });
    EXPECT_TRUE(bool(a)) << (a ? "" : llvm::toString(a.takeError()));
    EXPECT_EQ(a ? (*a)->bytes() : "", bytes);
    return a ? (*a)->origin : ArtifactOrigin::Memory;
  }

  std::string path(llvm::StringRef name) const {
    llvm::SmallString<128> p(dir);
    llvm::sys::path::append(p, cacheFileName(name, kPrint));
    return std::string(p);
  }
  bool onDisk(llvm::StringRef name) const { return fs::exists(path(name)); }

  /// The size of one file of payloadFor(): every name here is as long.
  uint64_t fileSize() const {
    return encodeCacheHeader(cacheKeyText("fmha_k0", kPrint), payloadFor("0"))
               .size() +
           payloadFor("0").size();
  }

  llvm::SmallString<128> dir;
  std::mutex warningsMutex;
  std::vector<std::string> warnings;
};

TEST_F(CachePruningTest, LeastRecentlyUsedGoFirstAndHitsCountAsUse) {
  // Real times, not backdated ones: setting a file's times also moves its
  // change time, after which a `relatime` mount would refresh the access
  // time on the next read by itself. Here the kernel refreshes it on the
  // first read only, so the second read of k0 counts only through the
  // cache's own stamping. The pauses outlast the file system's clock tick.
  auto filler = makeCache(UINT64_MAX);
  get(*filler, "fmha_k0");
  EXPECT_EQ(get(*makeCache(UINT64_MAX), "fmha_k0"), ArtifactOrigin::Disk);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  get(*filler, "fmha_k1");
  get(*filler, "fmha_k2");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(get(*makeCache(UINT64_MAX), "fmha_k0"), ArtifactOrigin::Disk);

  // Room for three and a half files: the fourth pushes out exactly one,
  // the least recently used.
  auto capped = makeCache(3 * fileSize() + fileSize() / 2);
  EXPECT_EQ(get(*capped, "fmha_k3"), ArtifactOrigin::Compiled);
  EXPECT_FALSE(onDisk("fmha_k1"));
  for (const char *name : {"fmha_k0", "fmha_k2", "fmha_k3"})
    EXPECT_TRUE(onDisk(name)) << name;
  EXPECT_EQ(capped->stats().prunedFiles, 1u);
  EXPECT_EQ(capped->diskStats()->files, 3u);

  // A pruned kernel is a plain miss in the next process: compiled again,
  // no warning.
  EXPECT_EQ(get(*makeCache(UINT64_MAX), "fmha_k1"), ArtifactOrigin::Compiled);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
}

TEST_F(CachePruningTest, StaysUnderTheCapAndKeepsTheNewest) {
  uint64_t cap = 3 * fileSize();
  auto cache = makeCache(cap);
  for (int i = 0; i < 10; ++i) {
    std::string name = "fmha_k" + std::to_string(i);
    EXPECT_EQ(get(*cache, name), ArtifactOrigin::Compiled);
    DiskStats disk = llvm::cantFail(cache->diskStats());
    EXPECT_LE(disk.bytes, cap) << "after " << name;
    EXPECT_EQ(disk.files, std::min<uint64_t>(i + 1, 3)) << "after " << name;
    EXPECT_TRUE(onDisk(name)) << "the newest kernel is kept";
  }
  EXPECT_EQ(cache->stats().prunedFiles, 7u);
  // Memory still holds every kernel this process used.
  EXPECT_EQ(get(*cache, "fmha_k0"), ArtifactOrigin::Memory);
}

TEST_F(CachePruningTest, ScansAtMostOncePerInterval) {
  auto cache = makeCache(fileSize() + fileSize() / 2, std::chrono::hours(1));
  get(*cache, "fmha_k0"); // no stamp yet: scans (and keeps the one file)
  llvm::SmallString<128> stamp(dir);
  llvm::sys::path::append(stamp, kPruneStampName);
  EXPECT_TRUE(fs::exists(stamp));
  get(*cache, "fmha_k1"); // within the hour: over the cap, not scanned
  EXPECT_EQ(cache->diskStats()->files, 2u);
  EXPECT_EQ(cache->stats().prunedFiles, 0u);

  backdate(stamp, std::chrono::hours(2)); // the hour has passed
  backdate(path("fmha_k0"), seconds(20));
  backdate(path("fmha_k1"), seconds(10));
  get(*cache, "fmha_k2");
  EXPECT_EQ(cache->stats().prunedFiles, 2u);
  fs::file_status restamped;
  ASSERT_FALSE(fs::status(stamp, restamped));
  EXPECT_GT(restamped.getLastModificationTime(),
            std::chrono::system_clock::now() - std::chrono::minutes(1))
      << "a scan restamps, so the next hour is quiet again";
  EXPECT_TRUE(onDisk("fmha_k2"));
  EXPECT_EQ(cache->diskStats()->files, 1u);
}

TEST_F(CachePruningTest, TouchesOnlyCompleteArtifacts) {
  auto cache = makeCache(UINT64_MAX);
  get(*cache, "fmha_k0");
  get(*cache, "fmha_k1");
  // A write in progress, someone else's file, LLVM's own cache name and a
  // file with an artifact's name that is a directory: all older than the
  // artifacts, none ever pruned.
  std::vector<std::string> others = {path("fmha_k2") + ".tmp-1a2b3c4d",
                                     std::string(dir) + "/notes.txt",
                                     std::string(dir) + "/llvmcache-123"};
  for (const std::string &other : others) {
    std::error_code ec;
    llvm::raw_fd_ostream(other, ec) << payloadFor("x", 5000);
    ASSERT_FALSE(ec) << ec.message();
    backdate(other, seconds(1000));
  }
  ASSERT_FALSE(fs::create_directories(path("fmha_k3") + "/x"));

  PruneResult pruned = llvm::cantFail(pruneCacheDirectory(dir, 1, seconds(0)));
  EXPECT_TRUE(pruned.scanned);
  EXPECT_EQ(pruned.removedFiles, 2u);
  EXPECT_EQ(pruned.removedBytes, 2 * fileSize());
  EXPECT_EQ(pruned.files, 0u);
  EXPECT_EQ(pruned.bytes, 0u);
  for (const std::string &other : others)
    EXPECT_TRUE(fs::exists(other)) << other;
  EXPECT_TRUE(fs::is_directory(path("fmha_k3")));
}

TEST_F(CachePruningTest, MissingDirectoryHoldsNothing) {
  llvm::SmallString<128> missing(dir);
  llvm::sys::path::append(missing, "not-yet");
  PruneResult pruned =
      llvm::cantFail(pruneCacheDirectory(missing, 1, seconds(0)));
  EXPECT_EQ(pruned.files, 0u);
  EXPECT_EQ(pruned.removedFiles, 0u);
  EXPECT_FALSE(fs::exists(missing)) << "pruning creates no directory";
}

TEST_F(CachePruningTest, DiskHitRefreshesTheAccessTimeOnly) {
  get(*makeCache(UINT64_MAX), "fmha_k0");
  fs::file_status written, firstRead, secondRead;
  ASSERT_FALSE(fs::status(path("fmha_k0"), written));
  EXPECT_EQ(get(*makeCache(UINT64_MAX), "fmha_k0"), ArtifactOrigin::Disk);
  ASSERT_FALSE(fs::status(path("fmha_k0"), firstRead));
  // Past the first read, `relatime` leaves the access time alone for a
  // day: only the cache moves it (see the test above).
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto start = std::chrono::system_clock::now();
  EXPECT_EQ(get(*makeCache(UINT64_MAX), "fmha_k0"), ArtifactOrigin::Disk);
  ASSERT_FALSE(fs::status(path("fmha_k0"), secondRead));
  EXPECT_GE(secondRead.getLastAccessedTime(), start);
  EXPECT_GT(secondRead.getLastAccessedTime(), firstRead.getLastAccessedTime());
  EXPECT_EQ(secondRead.getLastModificationTime(),
            written.getLastModificationTime())
      << "the modification time still says when the kernel was written";
}

/// Caches standing in for processes write, read and prune one directory
/// at once, under a cap of \p capFiles files (0: less than one file, so
/// every scan removes everything, including whatever a writer just
/// renamed into place).
class PruningRaceTest : public CachePruningTest,
                        public ::testing::WithParamInterface<int> {};

TEST_P(PruningRaceTest, WritersAndReadersNeverFail) {
  constexpr int kThreads = 6, kKeys = 24;
  uint64_t cap = GetParam() ? GetParam() * fileSize() : 1;
  std::atomic<uint64_t> failedWrites{0}, corrupt{0}, pruned{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 3; ++round) {
        // A new cache each round: memory would hide the disk.
        auto cache = makeCache(cap);
        for (int k = 0; k < kKeys; ++k)
          get(*cache, "fmha_k" + std::to_string((k * 7 + t) % kKeys));
        failedWrites += cache->stats().failedWrites;
        corrupt += cache->stats().corruptFiles;
        pruned += cache->stats().prunedFiles;
      }
    });
  for (std::thread &t : threads)
    t.join();
  // A deleted temporary file would fail its rename: a failed write.
  EXPECT_EQ(failedWrites, 0u);
  EXPECT_EQ(corrupt, 0u);
  EXPECT_GT(pruned, 0u);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec))
    EXPECT_NE(classifyCacheFileName(llvm::sys::path::filename(it->path())),
              CacheFileKind::Temp)
        << it->path();
}

INSTANTIATE_TEST_SUITE_P(Caps, PruningRaceTest, ::testing::Values(0, 4));

struct SizeCase {
  const char *text;
  uint64_t bytes;
};

class ParseCacheSizeTest : public ::testing::TestWithParam<SizeCase> {};

TEST_P(ParseCacheSizeTest, Accepts) {
  llvm::Expected<uint64_t> bytes = parseCacheSize(GetParam().text);
  ASSERT_TRUE(bool(bytes)) << llvm::toString(bytes.takeError());
  EXPECT_EQ(*bytes, GetParam().bytes);
}

INSTANTIATE_TEST_SUITE_P(
    Sizes, ParseCacheSizeTest,
    ::testing::Values(
        SizeCase{"1", 1}, SizeCase{"4096", 4096}, SizeCase{"100K", 100u << 10},
        SizeCase{"512M", 512u << 20}, SizeCase{"2G", uint64_t(2) << 30},
        SizeCase{"2g", uint64_t(2) << 30}, SizeCase{"2GB", uint64_t(2) << 30},
        SizeCase{"2GiB", uint64_t(2) << 30},
        SizeCase{" 3T\n", uint64_t(3) << 40}, SizeCase{"10b", 10},
        SizeCase{"18446744073709551615", UINT64_MAX},
        SizeCase{"16777215T", uint64_t(16777215) << 40}));

class BadCacheSizeTest
    : public ::testing::TestWithParam<std::pair<const char *, const char *>> {};

TEST_P(BadCacheSizeTest, IsOneClearError) {
  llvm::Expected<uint64_t> bytes = parseCacheSize(GetParam().first);
  ASSERT_FALSE(bool(bytes)) << *bytes;
  std::string message = llvm::toString(bytes.takeError());
  EXPECT_NE(message.find(GetParam().second), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(
    Sizes, BadCacheSizeTest,
    ::testing::Values(std::make_pair("", "is not a size"),
                      std::make_pair("lots", "'lots' is not a size"),
                      std::make_pair("G", "is not a size"),
                      std::make_pair("-1G", "is not a size"),
                      std::make_pair("+1G", "is not a size"),
                      std::make_pair("1.5G", "is not a size"),
                      std::make_pair("2 G", "is not a size"),
                      std::make_pair("2X", "is not a size"),
                      std::make_pair("2KM", "is not a size"),
                      std::make_pair("0x10", "is not a size"),
                      std::make_pair("0", "FMHAJIT_CACHE=off"),
                      std::make_pair("0G", "FMHAJIT_CACHE=off"),
                      std::make_pair("16777216T", "is too large"),
                      std::make_pair("18446744073709551616", "is too large")));

TEST(CacheMaxSizeEnvTest, SetsTheCapOrFailsClearly) {
  ScopedEnv env;
  env.set("FMHAJIT_CACHE_DIR", "/tmp/fmhajit-env-test");
  env.set("FMHAJIT_CACHE_MAX_SIZE", nullptr);
  EXPECT_EQ(llvm::cantFail(CacheConfig::fromEnvironment()).maxBytes,
            kDefaultCacheMaxBytes);
  env.set("FMHAJIT_CACHE_MAX_SIZE", "");
  EXPECT_EQ(llvm::cantFail(CacheConfig::fromEnvironment()).maxBytes,
            kDefaultCacheMaxBytes);
  env.set("FMHAJIT_CACHE_MAX_SIZE", "512M");
  EXPECT_EQ(llvm::cantFail(CacheConfig::fromEnvironment()).maxBytes,
            512u << 20);
  auto cache = llvm::cantFail(
      KernelCache::create(llvm::cantFail(CacheConfig::fromEnvironment())));
  EXPECT_EQ(cache->maxBytes(), 512u << 20);

  env.set("FMHAJIT_CACHE_MAX_SIZE", "half");
  llvm::Expected<CacheConfig> bad = CacheConfig::fromEnvironment();
  ASSERT_FALSE(bool(bad));
  EXPECT_EQ(llvm::toString(bad.takeError()),
            "FMHAJIT_CACHE_MAX_SIZE: 'half' is not a size: use a number of "
            "bytes, or a number with K, M, G or T (powers of 1024), such as "
            "512M or 2G");
}

} // namespace
