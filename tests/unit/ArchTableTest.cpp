//===- ArchTableTest.cpp - The capability tables are sane -----------------===//
//
// Every specs/arch/*.json loads, agrees with its file name, and is usable:
// for each target, pipeline, dtype the pipeline takes and head dim, the
// default tile validates and is the tile validation picks. Profiles expand
// on every target.
//
//===----------------------------------------------------------------------===//
#include "specs/ArchTable.h"
#include "specs/EmbeddedData.h"
#include "specs/EncodedName.h"
#include "specs/Keys.h"
#include "specs/Profile.h"
#include "specs/SpecParser.h"
#include "specs/Validate.h"
#include "tests/unit/SpecTesting.h"
#include "gtest/gtest.h"
#include <algorithm>
#include <set>

using namespace fmhajit;

namespace {

std::vector<std::string> archNames() {
  std::vector<std::string> names;
  for (const ArchInfo &a : allArchs())
    names.push_back(a.name);
  return names;
}

TEST(ArchTables, OneTablePerFileNamedAfterIt) {
  std::vector<EmbeddedFile> files = embeddedFiles("arch/");
  ASSERT_EQ(files.size(), allArchs().size());
  for (size_t i = 0; i < files.size(); ++i)
    EXPECT_EQ(files[i].path, "arch/" + allArchs()[i].name + ".json");
}

TEST(ArchTables, NamesAndTokensAreUnique) {
  std::set<std::string> names, tokens;
  for (const ArchInfo &a : allArchs()) {
    EXPECT_TRUE(names.insert(a.name).second) << a.name;
    EXPECT_TRUE(tokens.insert(targetToken(a.name)).second) << a.name;
  }
}

// The targets the issue promises; a missing one is a lost table.
TEST(ArchTables, EveryPromisedTargetExists) {
  for (const char *t :
       {"host", "x86-64-v3", "x86-64-v4", "sm_80", "sm_86", "sm_89", "sm_90a",
        "sm_100a", "gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1201"})
    EXPECT_NE(findArch(t), nullptr) << t;
}

class ArchTable : public ::testing::TestWithParam<std::string> {
protected:
  const ArchInfo &arch() const { return *findArch(GetParam()); }
};

TEST_P(ArchTable, FactsAreConsistent) {
  const ArchInfo &a = arch();
  EXPECT_GT(a.waveSize, 0u);
  EXPECT_GT(a.sharedBytes, 0u);
  EXPECT_GE(a.maxWarps, 1u);
  EXPECT_GE(a.maxStages, 1u);
  EXPECT_FALSE(a.dtypes.empty());
  EXPECT_FALSE(a.headDims.empty());
  EXPECT_TRUE(std::is_sorted(a.headDims.begin(), a.headDims.end()));
  EXPECT_EQ(a.backend == Backend::Host, a.triple.empty())
      << "only hosts lack a triple";
  ASSERT_FALSE(a.autoOrder.empty());
  for (Pipeline p : a.autoOrder)
    EXPECT_NE(a.pipeline(p), nullptr) << "auto_order names " << keyOf(p).str();
  for (const auto &[p, info] : a.pipelines) {
    EXPECT_NE(p, Pipeline::Auto);
    for (DType t : info.dtypes)
      EXPECT_TRUE(a.hasDType(t))
          << keyOf(p).str() << " takes " << keyOf(t).str();
    ASSERT_FALSE(info.tiles.empty()) << keyOf(p).str();
    EXPECT_GE(info.tiles.back().maxD, a.headDims.back()) << keyOf(p).str();
    // Rows by max_d; rows that share one are tried in order (the later
    // serve specs the earlier's tile rules refuse).
    for (size_t i = 1; i < info.tiles.size(); ++i)
      EXPECT_LE(info.tiles[i - 1].maxD, info.tiles[i].maxD) << keyOf(p).str();
  }
  // Each dtype the target has must be reachable through pipeline=auto.
  for (DType t : a.dtypes)
    EXPECT_TRUE(llvm::any_of(a.autoOrder, [&](Pipeline p) {
      return llvm::is_contained(a.pipeline(p)->dtypes, t);
    })) << keyOf(t).str();
}

// Pipelines are per vendor: wgmma only on sm_90a, mfma only on CDNA, wmma
// only on RDNA3/4, vector only on hosts.
TEST_P(ArchTable, PipelinesMatchTheHardware) {
  const ArchInfo &a = arch();
  bool cdna = a.name == "gfx90a" || a.name == "gfx942" || a.name == "gfx950";
  bool rdna = a.name == "gfx1100" || a.name == "gfx1201";
  EXPECT_EQ(a.pipeline(Pipeline::Wgmma) != nullptr, a.name == "sm_90a");
  EXPECT_EQ(a.pipeline(Pipeline::Mfma) != nullptr, cdna);
  EXPECT_EQ(a.pipeline(Pipeline::Wmma) != nullptr, rdna);
  EXPECT_EQ(a.pipeline(Pipeline::Vector) != nullptr,
            a.backend == Backend::Host);
  EXPECT_EQ(a.pipeline(Pipeline::Mma) != nullptr, a.backend == Backend::Nvptx);
}

TEST_P(ArchTable, DefaultTilesValidateForEveryHeadDimAndPipeline) {
  const ArchInfo &a = arch();
  for (const auto &[p, info] : a.pipelines)
    for (DType t : info.dtypes)
      for (unsigned d : a.headDims) {
        KernelSpec s;
        s.dtype = t;
        s.d = d;
        s.pipeline = p;
        s.target = a.name;
        llvm::Expected<KernelSpec> r = validateSpec(s);
        // fp8's wgmma rows are narrower (WgmmaLayout::checkFp8): whole
        // 32-byte rows, and a later default row where the first's bn does
        // not suit its V transposers.
        bool fp8Wgmma = isFp8(t) && p == Pipeline::Wgmma;
        if (fp8Wgmma && d % 32) {
          EXPECT_FALSE(bool(r)) << printSpec(s);
          if (!r)
            EXPECT_NE(llvm::toString(r.takeError()).find("d="),
                      std::string::npos);
          continue;
        }
        if (!r) {
          ADD_FAILURE() << printSpec(s) << ": "
                        << llvm::toString(r.takeError());
          continue;
        }
        if (fp8Wgmma) {
          auto rows = a.defaultTiles(p, d, s.dtype);
          EXPECT_TRUE(llvm::any_of(rows, [&](const TileConfig *row) {
            return row->bm == r->bm && row->bn == r->bn &&
                   row->warps == r->warps && row->stages == r->stages;
          })) << printSpec(s);
          continue;
        }
        const TileConfig *tile = a.defaultTile(p, d, s.dtype);
        ASSERT_NE(tile, nullptr);
        EXPECT_EQ(r->bm, tile->bm) << printSpec(s);
        EXPECT_EQ(r->bn, tile->bn) << printSpec(s);
        EXPECT_EQ(r->warps, tile->warps) << printSpec(s);
        EXPECT_EQ(r->stages, tile->stages) << printSpec(s);
        EXPECT_LE(tileFootprintBytes(*r, a), a.sharedBytes) << printSpec(s);
      }
}

TEST_P(ArchTable, EveryProfileExpands) {
  for (const ProfileInfo &p : listProfiles()) {
    llvm::Expected<std::vector<KernelSpec>> specs =
        expandProfile(p.name, llvm::StringRef(GetParam()));
    ASSERT_TRUE(bool(specs))
        << p.name << ": " << llvm::toString(specs.takeError());
    EXPECT_FALSE(specs->empty()) << p.name;
    for (const KernelSpec &s : *specs)
      EXPECT_EQ(s.target, GetParam());
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, ArchTable, ::testing::ValuesIn(archNames()),
                         [](const auto &info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST(Profiles, UnknownProfileOrTargetNamesTheKey) {
  llvm::Expected<std::vector<KernelSpec>> p =
      expandProfile("nope", std::nullopt);
  ASSERT_FALSE(bool(p));
  std::vector<std::string> problems = specProblems(p.takeError(), "nope");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("profile=nope"), std::string::npos) << problems[0];
  llvm::Expected<std::vector<KernelSpec>> t =
      expandProfile("all", llvm::StringRef("sm_70"));
  ASSERT_FALSE(bool(t));
  problems = specProblems(t.takeError(), "sm_70");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("target=sm_70"), std::string::npos) << problems[0];
}

TEST(Profiles, TheDocumentedProfilesExist) {
  std::set<std::string> names;
  for (const ProfileInfo &p : listProfiles()) {
    names.insert(p.name);
    EXPECT_FALSE(p.description.empty()) << p.name;
  }
  for (const char *p : {"smoke", "prefill", "decode", "all"})
    EXPECT_TRUE(names.count(p)) << p;
}

} // namespace
