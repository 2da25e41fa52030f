//===- NumericsNpyTest.cpp - .npy files and `run --save` bundles ----------===//
#include "runtime/numerics/Npy.h"
#include "runtime/numerics/RunBundle.h"
#include "specs/Errors.h"
#include "specs/SpecParser.h"
#include "specs/Validate.h"
#include "tests/unit/SpecTesting.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"
#include <cmath>
#include <limits>

using namespace fmhajit;
using llvm::SmallString;

namespace {

/// A fresh directory, removed with everything in it at the end of the test.
class TempDir {
public:
  TempDir() {
    EXPECT_FALSE(
        llvm::sys::fs::createUniqueDirectory("fmhajit-numerics", path));
  }
  ~TempDir() { llvm::sys::fs::remove_directories(path); }
  std::string file(llvm::StringRef name) const {
    SmallString<256> p(path);
    llvm::sys::path::append(p, name);
    return std::string(p);
  }

private:
  SmallString<256> path;
};

std::string messageOf(llvm::Error err) {
  Problems problems = takeProblems(std::move(err));
  EXPECT_EQ(problems.kind, ErrorKind::Io);
  return problems.messages.empty() ? "" : problems.messages.front();
}

TEST(Npy, HeaderIsNumpysV1) {
  std::string h = npyHeader({2, 3});
  EXPECT_EQ(h.size() % 64, 0u);
  EXPECT_EQ(h.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_EQ(size_t(uint8_t(h[8])) | size_t(uint8_t(h[9])) << 8, h.size() - 10);
  llvm::StringRef dict = "{'descr': '<f4', 'fortran_order': False, "
                         "'shape': (2, 3), }";
  EXPECT_EQ(h.substr(10, dict.size()), dict);
  EXPECT_EQ(h.substr(10 + dict.size()),
            std::string(h.size() - 11 - dict.size(), ' ') + "\n");
  EXPECT_NE(npyHeader({5}).find("'shape': (5,), }"), std::string::npos);
  EXPECT_NE(npyHeader({}).find("'shape': (), }"), std::string::npos);
}

TEST(Npy, RoundTripsEveryBit) {
  TempDir dir;
  std::vector<float> data = {
      1.5f,          -0.0f,  std::numeric_limits<float>::infinity(),
      std::nanf(""), 1e-40f, -3.25f};
  ASSERT_FALSE(writeNpy(dir.file("a.npy"), data, {2, 1, 3}));
  llvm::Expected<NpyArray> back = readNpy(dir.file("a.npy"));
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(back->shape, (std::vector<int64_t>{2, 1, 3}));
  ASSERT_EQ(back->data.size(), data.size());
  for (size_t i = 0; i < data.size(); ++i)
    EXPECT_EQ(llvm::bit_cast<uint32_t>(back->data[i]),
              llvm::bit_cast<uint32_t>(data[i]));
  auto file = llvm::MemoryBuffer::getFile(dir.file("a.npy"));
  ASSERT_TRUE(bool(file));
  EXPECT_EQ((*file)->getBufferSize(),
            npyHeader({2, 1, 3}).size() + 4 * data.size());
}

TEST(Npy, ReaderRejectsTruncatedAndForeignFiles) {
  TempDir dir;
  ASSERT_FALSE(writeNpy(dir.file("a.npy"), {1, 2, 3}, {3}));
  auto file = llvm::MemoryBuffer::getFile(dir.file("a.npy"));
  ASSERT_TRUE(bool(file));
  std::string bytes = (*file)->getBuffer().str();
  auto rewrite = [&](const std::string &text) {
    std::error_code ec;
    llvm::raw_fd_ostream os(dir.file("b.npy"), ec);
    os << text;
  };
  rewrite(bytes.substr(0, bytes.size() - 1));
  EXPECT_NE(messageOf(readNpy(dir.file("b.npy")).takeError())
                .find("expected 12 data bytes, found 11"),
            std::string::npos);
  std::string f8 = bytes;
  f8.replace(f8.find("<f4"), 3, "<f8");
  rewrite(f8);
  EXPECT_NE(messageOf(readNpy(dir.file("b.npy")).takeError()).find("'<f4'"),
            std::string::npos);
  EXPECT_NE(messageOf(readNpy(dir.file("missing.npy")).takeError())
                .find("missing.npy"),
            std::string::npos);
}

TEST(Npy, WriteFailureNamesThePath) {
  TempDir dir;
  std::string path = dir.file("no/such/dir/a.npy");
  EXPECT_NE(messageOf(writeNpy(path, {1}, {1})).find(path), std::string::npos);
}

//===-- Run bundles -------------------------------------------------------===//

struct Bundle {
  std::vector<float> q, k, v, o, lse;
  explicit Bundle(const AttentionProblem &p)
      : q(numElements(p.qShape()), 1), k(numElements(p.kShape()), 2),
        v(numElements(p.vShape()), 3), o(numElements(p.oShape()), 4),
        lse(numElements(p.lseShape()), 5) {}
  RunTensors tensors(bool withLse) const {
    return {q, k, v, o,
            withLse ? llvm::ArrayRef<float>(lse) : llvm::ArrayRef<float>()};
  }
};

/// The parsed meta.json at \p path (an empty object on failure).
llvm::json::Object readMeta(const std::string &path) {
  auto file = llvm::MemoryBuffer::getFile(path);
  if (!file) {
    ADD_FAILURE() << path << ": " << file.getError().message();
    return {};
  }
  llvm::Expected<llvm::json::Value> meta =
      llvm::json::parse((*file)->getBuffer());
  if (!meta) {
    ADD_FAILURE() << llvm::toString(meta.takeError());
    return {};
  }
  return std::move(*meta->getAsObject());
}

TEST(RunBundle, VarlenAlibiLse) {
  KernelSpec spec = resolvedSpec("family=fwd,dtype=fp32,d=64,mask=window,"
                                 "bias=alibi,softcap=1,lse=1,varlen=1");
  AttentionProblem p = AttentionProblem::forSpec(spec);
  p.batch = 2, p.headsQ = 4, p.headsKv = 2, p.softcap = 30;
  p.windowLeft = 8, p.windowRight = -1;
  p.seqlensQ = {3, 5}, p.seqlensK = {7, 2};
  ASSERT_EQ(takeProblems(p.validate(spec)).messages.size(), 0u);
  TempDir dir;
  Bundle data(p);
  ASSERT_FALSE(
      writeRunBundle(dir.file("out/run"), spec, p, data.tensors(true)));

  llvm::Expected<NpyArray> q = readNpy(dir.file("out/run/q.npy"));
  ASSERT_TRUE(bool(q)) << llvm::toString(q.takeError());
  EXPECT_EQ(q->shape, (std::vector<int64_t>{8, 4, 64}));
  llvm::Expected<NpyArray> lse = readNpy(dir.file("out/run/lse.npy"));
  ASSERT_TRUE(bool(lse)) << llvm::toString(lse.takeError());
  EXPECT_EQ(lse->shape, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(lse->data.front(), 5.0f);

  llvm::json::Object m = readMeta(dir.file("out/run/meta.json"));
  EXPECT_EQ(m.size(), 17u);
  EXPECT_EQ(*m.get("sinks"), nullptr); // no sink=1
  EXPECT_EQ(*m.getString("name"), "fmha_fwd_fp32_d64_window_alibi_sc_lse_vl"
                                  "_m192n64w1s1_vector_host");
  EXPECT_EQ(*m.getString("dtype"), "fp32");
  EXPECT_EQ(*m.getString("mask"), "window");
  EXPECT_EQ(*m.getInteger("heads_q"), 4);
  EXPECT_EQ(*m.getInteger("heads_kv"), 2);
  EXPECT_EQ(*m.getNumber("scale"), double(0.125f));
  EXPECT_EQ(*m.getNumber("softcap"), 30.0);
  EXPECT_EQ(*m.getInteger("window_left"), 8);
  EXPECT_EQ(*m.getInteger("window_right"), -1);
  EXPECT_EQ(m.getArray("alibi_slopes")->size(), 4u);
  EXPECT_EQ(*(*m.getArray("alibi_slopes"))[0].getAsNumber(), 0.25);
  EXPECT_TRUE(*m.getArray("cu_seqlens_q") == llvm::json::Array({0, 3, 8}));
  EXPECT_TRUE(*m.getArray("cu_seqlens_k") == llvm::json::Array({0, 7, 9}));
  llvm::Expected<KernelSpec> again = parseSpec(*m.getString("spec"));
  ASSERT_TRUE(bool(again));
  EXPECT_EQ(*again, spec);
}

TEST(RunBundle, PlainSpecHasNullsAndNoLse) {
  KernelSpec spec = resolvedSpec("family=fwd,dtype=bf16,d=32,mask=causal");
  AttentionProblem p = AttentionProblem::forSpec(spec);
  p.batch = 2, p.seqlenQ = 3, p.seqlenK = 5;
  TempDir dir;
  Bundle data(p);
  ASSERT_FALSE(writeRunBundle(dir.file("run"), spec, p, data.tensors(false)));
  EXPECT_FALSE(llvm::sys::fs::exists(dir.file("run/lse.npy")));
  llvm::json::Object m = readMeta(dir.file("run/meta.json"));
  EXPECT_EQ(m.size(), 17u);
  for (const char *key :
       {"alibi_slopes", "sinks", "cu_seqlens_q", "cu_seqlens_k", "variant",
        "variant_tensors", "dropout"})
    EXPECT_EQ(*m.get(key), nullptr) << key;
  EXPECT_EQ(*m.getNumber("softcap"), 0.0);
  EXPECT_EQ(*m.getInteger("window_left"), -1);
  llvm::Expected<NpyArray> o = readNpy(dir.file("run/o.npy"));
  ASSERT_TRUE(bool(o));
  EXPECT_EQ(o->shape, (std::vector<int64_t>{2, 3, 1, 32}));
  EXPECT_EQ(o->data.front(), 4.0f);
}

// A variant's run-time tensors: one flat .npy per slot, listed in slot
// order.
TEST(RunBundle, VariantTensorsAreWrittenAndListed) {
  KernelSpec spec = resolvedSpec("family=fwd,dtype=fp32,d=32");
  AttentionProblem p = AttentionProblem::forSpec(spec);
  p.variantTensors = {{1.5f, -2.0f, 3.0f}, {7.0f}};
  TempDir dir;
  Bundle data(p);
  ASSERT_FALSE(writeRunBundle(dir.file("run"), spec, p, data.tensors(false)));
  llvm::json::Object m = readMeta(dir.file("run/meta.json"));
  EXPECT_TRUE(
      *m.getArray("variant_tensors") ==
      llvm::json::Array({"variant_tensor0.npy", "variant_tensor1.npy"}));
  for (size_t slot = 0; slot < 2; ++slot) {
    llvm::Expected<NpyArray> t =
        readNpy(dir.file("run/variant_tensor" + std::to_string(slot) + ".npy"));
    ASSERT_TRUE(bool(t)) << llvm::toString(t.takeError());
    EXPECT_EQ(t->shape,
              (std::vector<int64_t>{int64_t(p.variantTensors[slot].size())}));
    EXPECT_EQ(t->data, p.variantTensors[slot]);
  }
}

// dropout=1: the bundle says how its mask was made, p as the float the
// kernel got and a seed above 2^53 exactly (a double would round it).
TEST(RunBundle, DropoutRecordsPSeedAndOffset) {
  KernelSpec spec = resolvedSpec("family=fwd,dtype=fp32,d=32,dropout=1");
  AttentionProblem p = AttentionProblem::forSpec(spec);
  p.dropout = {0.1f, (uint64_t(1) << 60) + 3, 4294967295u};
  TempDir dir;
  Bundle data(p);
  ASSERT_FALSE(writeRunBundle(dir.file("run"), spec, p, data.tensors(false)));
  llvm::json::Object m = readMeta(dir.file("run/meta.json"));
  const llvm::json::Object *d = m.getObject("dropout");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->size(), 3u);
  EXPECT_EQ(*d->getNumber("p"), double(0.1f));
  EXPECT_EQ(d->get("seed")->getAsUINT64(), (uint64_t(1) << 60) + 3);
  EXPECT_EQ(*d->getInteger("offset"), 4294967295);
}

TEST(RunBundle, UnwritableDirectoryIsAnIoError) {
  TempDir dir;
  ASSERT_FALSE(writeNpy(dir.file("file"), {1}, {1}));
  KernelSpec spec = resolvedSpec("family=fwd,dtype=fp32,d=32");
  AttentionProblem p = AttentionProblem::forSpec(spec);
  Bundle data(p);
  std::string message = messageOf(
      writeRunBundle(dir.file("file/run"), spec, p, data.tensors(false)));
  EXPECT_NE(message.find("file/run"), std::string::npos) << message;
}

} // namespace
