//===- KernelCacheTest.cpp - The compiled-artifact cache ------------------===//
//
// Memory and disk hits, corrupt files, failed writes, compile errors, and
// concurrency: threads sharing one cache, and several caches sharing one
// directory (threads standing in for processes).
//
//===----------------------------------------------------------------------===//
#include "compiler/KernelCache.h"
#include "compiler/CacheFile.h"
#include "specs/Errors.h"
#include "tests/unit/ScopedEnv.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <optional>
#include <thread>

using namespace fmhajit;

namespace {

constexpr llvm::StringLiteral kName = "fmha_fwd_bf16_d128_causal_host";
constexpr llvm::StringLiteral kPrint =
    "fmhajit 0.1.0|llvm 22|x86_64|znver4|+avx512bf16";

/// A compile function that counts its calls and returns fixed bytes.
struct FakeCompiler {
  std::string bytes = std::string("\177ELF object\0with nul", 20);
  std::chrono::milliseconds delay{0};
  std::atomic<int> calls{0};

  llvm::Expected<std::string> operator()() {
    ++calls;
    std::this_thread::sleep_for(delay);
    return bytes;
  }
};

std::string readAll(llvm::StringRef path) {
  auto buf = llvm::MemoryBuffer::getFile(path, false, false);
  return buf ? (*buf)->getBuffer().str() : std::string();
}

void writeAll(llvm::StringRef path, llvm::StringRef bytes) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  ASSERT_FALSE(ec) << ec.message();
  os << bytes;
}

/// The names of the entries of \p dir.
std::vector<std::string> listDir(llvm::StringRef dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec))
    names.push_back(llvm::sys::path::filename(it->path()).str());
  std::sort(names.begin(), names.end());
  return names;
}

class KernelCacheTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(
        llvm::sys::fs::createUniqueDirectory("fmhajit-cache-test", dir));
  }
  void TearDown() override { llvm::sys::fs::remove_directories(dir); }

  /// A cache on \p where (default: the test's directory) whose warnings go
  /// to `warnings`.
  std::unique_ptr<KernelCache> makeCache(bool disk = true,
                                         std::string where = "") {
    CacheConfig config;
    config.dir = where.empty() ? std::string(dir) : where;
    config.disk = disk;
    config.onWarning = [this](llvm::StringRef w) {
      std::lock_guard<std::mutex> lock(warningsMutex);
      warnings.push_back(w.str());
    };
    return llvm::cantFail(KernelCache::create(std::move(config)));
  }

  std::shared_ptr<const Artifact> get(KernelCache &cache, FakeCompiler &c,
                                      llvm::StringRef name = kName,
                                      llvm::StringRef print = kPrint) {
    auto a = cache.getOrCompile(name, print, [&] { return c(); });
    EXPECT_TRUE(bool(a)) << (a ? "" : llvm::toString(a.takeError()));
    return a ? *a : nullptr;
  }

  std::string filePath(llvm::StringRef name = kName,
                       llvm::StringRef print = kPrint) {
    llvm::SmallString<128> p(dir);
    llvm::sys::path::append(p, cacheFileName(name, print));
    return std::string(p);
  }

  llvm::SmallString<128> dir;
  std::mutex warningsMutex;
  std::vector<std::string> warnings;
};

TEST_F(KernelCacheTest, MissCompilesThenHitsMemory) {
  auto cache = makeCache();
  FakeCompiler c;
  auto first = get(*cache, c);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->origin, ArtifactOrigin::Compiled);
  EXPECT_EQ(first->bytes(), c.bytes);
  auto second = get(*cache, c);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->origin, ArtifactOrigin::Memory);
  EXPECT_EQ(second->storage, first->storage) << "a hit must not copy bytes";
  EXPECT_EQ(c.calls, 1);
  CacheStats s = cache->stats();
  EXPECT_EQ(s.compiles, 1u);
  EXPECT_EQ(s.memoryHits, 1u);
  EXPECT_EQ(s.diskHits, 0u);
  EXPECT_TRUE(llvm::sys::fs::exists(filePath()));
  EXPECT_TRUE(warnings.empty());
}

TEST_F(KernelCacheTest, FreshInstanceHitsDisk) {
  FakeCompiler c;
  get(*makeCache(), c);
  auto fresh = makeCache(); // a new process, as far as the cache can tell
  auto a = get(*fresh, c);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->origin, ArtifactOrigin::Disk);
  EXPECT_EQ(a->bytes(), c.bytes);
  EXPECT_EQ(c.calls, 1);
  EXPECT_EQ(fresh->stats().diskHits, 1u);
  EXPECT_EQ(get(*fresh, c)->origin, ArtifactOrigin::Memory);
}

TEST_F(KernelCacheTest, FingerprintIsPartOfTheKey) {
  auto cache = makeCache();
  FakeCompiler c;
  get(*cache, c, kName, "llvm 22|znver4");
  get(*cache, c, kName, "llvm 22|znver5");
  EXPECT_EQ(c.calls, 2);
  EXPECT_EQ(cache->diskStats()->files, 2u);
}

TEST_F(KernelCacheTest, CompileErrorPropagatesAndCachesNothing) {
  auto cache = makeCache();
  int calls = 0;
  auto failing = [&]() -> llvm::Expected<std::string> {
    ++calls;
    return makeError(ErrorKind::Jit, "codegen failed: boom");
  };
  for (int i = 0; i < 2; ++i) {
    auto a = cache->getOrCompile(kName, kPrint, failing);
    ASSERT_FALSE(bool(a));
    EXPECT_EQ(llvm::toString(a.takeError()), "codegen failed: boom");
  }
  EXPECT_EQ(calls, 2) << "errors must not be cached";
  EXPECT_TRUE(listDir(dir).empty());
  EXPECT_EQ(cache->stats().compiles, 0u);
  FakeCompiler c;
  EXPECT_EQ(get(*cache, c)->origin, ArtifactOrigin::Compiled);
}

TEST_F(KernelCacheTest, DiskDisabledKeepsMemoryOnly) {
  FakeCompiler c;
  auto cache = makeCache(/*disk=*/false);
  get(*cache, c);
  EXPECT_EQ(get(*cache, c)->origin, ArtifactOrigin::Memory);
  EXPECT_TRUE(listDir(dir).empty());
  EXPECT_EQ(get(*makeCache(/*disk=*/false), c)->origin,
            ArtifactOrigin::Compiled);
  EXPECT_EQ(c.calls, 2);
}

TEST_F(KernelCacheTest, UnwritableDirectoryWarnsOnceAndStillReturns) {
  // Tests run as root, who can write anywhere: a directory under a regular
  // file cannot exist for anyone.
  llvm::SmallString<128> file(dir);
  llvm::sys::path::append(file, "a-file");
  writeAll(file, "x");
  auto cache = makeCache(true, (llvm::Twine(file) + "/cache").str());
  FakeCompiler c;
  auto a = get(*cache, c);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->origin, ArtifactOrigin::Compiled);
  EXPECT_EQ(a->bytes(), c.bytes);
  get(*cache, c, "fmha_other_kernel");
  EXPECT_EQ(cache->stats().failedWrites, 2u);
  ASSERT_EQ(warnings.size(), 1u) << "a write failure is reported once";
  EXPECT_NE(warnings[0].find("cannot store " + kName.str()), std::string::npos)
      << warnings[0];
  EXPECT_EQ(get(*cache, c)->origin, ArtifactOrigin::Memory);
}

TEST_F(KernelCacheTest, FailedRenameLeavesNoTemporaryFile) {
  // The final name is taken by a non-empty directory: reading it fails and
  // renaming over it fails, after the temporary file was written.
  ASSERT_FALSE(llvm::sys::fs::create_directories(filePath() + "/occupied"));
  auto cache = makeCache();
  FakeCompiler c;
  auto a = get(*cache, c);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->bytes(), c.bytes);
  EXPECT_EQ(cache->stats().failedWrites, 1u);
  EXPECT_EQ(warnings.size(), 2u); // cannot read, cannot store
  EXPECT_EQ(listDir(dir),
            std::vector<std::string>{cacheFileName(kName, kPrint)});
}

/// One way to damage a cache file, and the words its warning must contain.
struct Damage {
  const char *label;
  std::function<std::string(std::string)> apply;
  const char *reason;
};

class CorruptFileTest : public KernelCacheTest,
                        public ::testing::WithParamInterface<Damage> {};

TEST_P(CorruptFileTest, WarnsRecompilesAndRewrites) {
  FakeCompiler c;
  get(*makeCache(), c);
  writeAll(filePath(), GetParam().apply(readAll(filePath())));

  auto cache = makeCache();
  auto a = get(*cache, c);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->origin, ArtifactOrigin::Compiled);
  EXPECT_EQ(a->bytes(), c.bytes);
  EXPECT_EQ(c.calls, 2);
  EXPECT_EQ(cache->stats().corruptFiles, 1u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find(filePath()), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find(GetParam().reason), std::string::npos)
      << warnings[0];

  warnings.clear();
  EXPECT_EQ(get(*makeCache(), c)->origin, ArtifactOrigin::Disk)
      << "the file was rewritten";
  EXPECT_TRUE(warnings.empty());
}

/// Flips bits of the byte at \p at (counted from the end when negative).
std::function<std::string(std::string)> flipByte(int at, char bits = 0x40) {
  return [=](std::string s) {
    s[at < 0 ? s.size() + at : size_t(at)] ^= bits;
    return s;
  };
}

INSTANTIATE_TEST_SUITE_P(
    Damages, CorruptFileTest,
    ::testing::Values(
        Damage{"FlippedPayloadByte", flipByte(-3), "hash mismatch"},
        Damage{"Truncated",
               [](std::string s) { return s.substr(0, s.size() - 5); },
               "size mismatch"},
        Damage{"ShorterThanHeader",
               [](std::string s) { return s.substr(0, 10); }, "truncated"},
        Damage{"Empty", [](std::string) { return std::string(); }, "truncated"},
        Damage{"WrongMagic",
               [](std::string s) { return "NOTMAGIC" + s.substr(8); },
               "bad magic"},
        Damage{"FlippedVersion", flipByte(8, 1), "format version"},
        // The top byte of the payload size: a size near 2^62 must not wrap.
        Damage{"HugePayloadSize", flipByte(23), "size mismatch"},
        // The key is not hashed, so only the comparison can catch this.
        Damage{"FlippedKeyByte", flipByte(33, 0x20), "key mismatch"},
        Damage{"Appended", [](std::string s) { return s + "junk"; },
               "size mismatch"}),
    [](const ::testing::TestParamInfo<Damage> &info) {
      return std::string(info.param.label);
    });

TEST_F(KernelCacheTest, ThreadsAskingForOneKeyCompileOnce) {
  auto cache = makeCache();
  FakeCompiler c;
  c.delay = std::chrono::milliseconds(50);
  std::vector<std::shared_ptr<const Artifact>> results(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      auto a = cache->getOrCompile(kName, kPrint, [&] { return c(); });
      ASSERT_TRUE(bool(a)) << llvm::toString(a.takeError());
      results[t] = *a;
    });
  for (std::thread &t : threads)
    t.join();
  EXPECT_EQ(c.calls, 1);
  for (const auto &r : results)
    EXPECT_EQ(r->storage, results[0]->storage);
  CacheStats s = cache->stats();
  EXPECT_EQ(s.compiles, 1u);
  EXPECT_EQ(s.memoryHits, 7u);
}

TEST_F(KernelCacheTest, ThreadsOnDifferentKeysCompileInParallel) {
  auto cache = makeCache();
  std::vector<FakeCompiler> compilers(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      compilers[t].bytes = "kernel " + std::to_string(t);
      compilers[t].delay = std::chrono::milliseconds(20);
      std::string name = "fmha_k" + std::to_string(t);
      for (int round = 0; round < 3; ++round) {
        auto a =
            cache->getOrCompile(name, kPrint, [&] { return compilers[t](); });
        ASSERT_TRUE(bool(a));
        EXPECT_EQ((*a)->bytes(), compilers[t].bytes);
      }
    });
  for (std::thread &t : threads)
    t.join();
  for (FakeCompiler &c : compilers)
    EXPECT_EQ(c.calls, 1);
  EXPECT_EQ(cache->diskStats()->files, 8u);
}

TEST_F(KernelCacheTest, CachesSharingADirectoryRace) {
  // Eight caches stand in for eight processes: each writes and reads the
  // same files at once. No reader may see a partial file (no warnings), and
  // no temporary file may be left behind.
  constexpr int kKeys = 40;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  std::atomic<uint64_t> compiles{0}, diskHits{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      auto cache = makeCache();
      for (int k = 0; k < kKeys; ++k) {
        std::string name = "fmha_k" + std::to_string(k);
        // Large enough that writes and reads of one file overlap in time.
        std::string bytes((256 << 10) + k, char('a' + k % 26));
        auto a = cache->getOrCompile(name, kPrint, [&] { return bytes; });
        if (!a || (*a)->bytes() != bytes)
          ++failures;
        if (!a)
          llvm::consumeError(a.takeError());
      }
      compiles += cache->stats().compiles;
      diskHits += cache->stats().diskHits;
    });
  for (std::thread &t : threads)
    t.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(compiles + diskHits, 8u * kKeys);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  // The artifacts and the prune stamp: no stray temporary files.
  EXPECT_EQ(listDir(dir).size(), size_t(kKeys) + 1) << "stray temporary files";
  EXPECT_EQ(makeCache()->diskStats()->files, uint64_t(kKeys));
  FakeCompiler c;
  EXPECT_EQ(get(*makeCache(), c, "fmha_k7")->origin, ArtifactOrigin::Disk);
}

TEST_F(KernelCacheTest, ClearRemovesOnlyOurFiles) {
  auto cache = makeCache();
  FakeCompiler c;
  get(*cache, c, "fmha_a");
  get(*cache, c, "fmha_b");
  llvm::SmallString<128> foreign(dir), badHash(dir), temp(dir);
  llvm::sys::path::append(foreign, "notes.txt");
  llvm::sys::path::append(badHash, "fmha_a-1234.bin");
  llvm::sys::path::append(temp,
                          cacheFileName("fmha_c", kPrint) + ".tmp-1a2b3c4d");
  for (llvm::StringRef p : {foreign.str(), badHash.str(), temp.str()})
    writeAll(p, "keep?");
  ASSERT_EQ(listDir(dir).size(), 6u) << "two kernels, three others, a stamp";

  DiskStats before = llvm::cantFail(cache->diskStats());
  EXPECT_EQ(before.files, 2u);
  EXPECT_EQ(before.bytes, 2 * readAll(filePath("fmha_a")).size());

  ASSERT_FALSE(bool(cache->clear()));
  EXPECT_EQ(listDir(dir),
            (std::vector<std::string>{"fmha_a-1234.bin", "notes.txt"}));
  EXPECT_EQ(llvm::cantFail(cache->diskStats()).files, 0u);
  EXPECT_EQ(get(*cache, c, "fmha_a")->origin, ArtifactOrigin::Compiled);
}

TEST_F(KernelCacheTest, MissingDirectoryIsEmpty) {
  auto cache = makeCache(true, (llvm::Twine(dir) + "/not-yet").str());
  EXPECT_EQ(llvm::cantFail(cache->diskStats()).files, 0u);
  EXPECT_FALSE(bool(cache->clear()));
}

TEST(CacheFileNameTest, NamesAndClassifies) {
  std::string name = cacheFileName(kName, kPrint);
  EXPECT_TRUE(llvm::StringRef(name).starts_with(kName.str() + "-"));
  EXPECT_EQ(name.size(), kName.size() + 1 + 16 + 4);
  EXPECT_EQ(classifyCacheFileName(name), CacheFileKind::Artifact);
  EXPECT_EQ(classifyCacheFileName(name + ".tmp-0f3a9c1b"), CacheFileKind::Temp);
  EXPECT_EQ(classifyCacheFileName(kPruneStampName), CacheFileKind::PruneStamp);
  for (const char *foreign :
       {"notes.txt", "x-0123456789abcdef.bin.bak", "x-0123456789ABCDEF.bin",
        "x-0123456789abcde.bin", "9x-0123456789abcdef.bin",
        "a-b-0123456789abcdef.bin", "-0123456789abcdef.bin", ".bin",
        "x-0123456789abcdef.bin.tmp-", "llvmcache.timestamp",
        "fmhajit-prune.stamp.old"})
    EXPECT_EQ(classifyCacheFileName(foreign), CacheFileKind::Foreign)
        << foreign;
}

/// The environment's config; fails the test when it cannot be read.
CacheConfig envConfig() {
  llvm::Expected<CacheConfig> config = CacheConfig::fromEnvironment();
  EXPECT_TRUE(bool(config)) << llvm::toString(config.takeError());
  return config ? std::move(*config) : CacheConfig();
}

TEST(CacheConfigTest, ReadsTheEnvironment) {
  ScopedEnv env;
  env.set("FMHAJIT_CACHE_MAX_SIZE", nullptr);
  env.set("FMHAJIT_CACHE_DIR", "/tmp/explicit");
  env.set("XDG_CACHE_HOME", "/tmp/xdg");
  env.set("HOME", "/tmp/home");
  env.set("FMHAJIT_CACHE", nullptr);
  EXPECT_EQ(envConfig().dir, "/tmp/explicit");
  EXPECT_TRUE(envConfig().disk);
  env.set("FMHAJIT_CACHE_DIR", "");
  EXPECT_EQ(envConfig().dir, "/tmp/xdg/fmhajit");
  env.set("XDG_CACHE_HOME", "relative/is/ignored");
  EXPECT_EQ(envConfig().dir, "/tmp/home/.cache/fmhajit");
  for (const char *off : {"0", "off", "OFF", "false", "no"}) {
    env.set("FMHAJIT_CACHE", off);
    EXPECT_FALSE(envConfig().disk) << off;
  }
  env.set("FMHAJIT_CACHE", "1");
  EXPECT_TRUE(envConfig().disk);
}

TEST(CacheConfigTest, CreateNeedsADirectoryOnlyForTheDisk) {
  CacheConfig config;
  config.dir = "";
  auto noDir = KernelCache::create(config);
  ASSERT_FALSE(bool(noDir));
  EXPECT_NE(llvm::toString(noDir.takeError()).find("FMHAJIT_CACHE_DIR"),
            std::string::npos);
  config.disk = false;
  EXPECT_TRUE(bool(KernelCache::create(config)));
  config.dir = "relative/./dir";
  auto relative = llvm::cantFail(KernelCache::create(config));
  EXPECT_TRUE(llvm::sys::path::is_absolute(relative->directory()));
  EXPECT_TRUE(
      llvm::StringRef(relative->directory()).ends_with("/relative/dir"));
}

} // namespace
