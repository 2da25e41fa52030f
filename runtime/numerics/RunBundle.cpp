//===- RunBundle.cpp - What `fmhajit run --save DIR` writes ---------------===//
#include "runtime/numerics/RunBundle.h"
#include "runtime/numerics/Npy.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "specs/Keys.h"
#include "specs/SpecParser.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include <cassert>
#include <iterator>

using namespace fmhajit;
using llvm::StringRef;
using llvm::json::Array;
using llvm::json::Value;

template <typename T>
static Value listOrNull(const std::vector<T> &values, bool present) {
  if (!present)
    return nullptr;
  Array list;
  for (const T &v : values)
    list.push_back(v);
  return list;
}

// dropout=1: the run-time arguments that made the mask (Dropout.h), p as
// the float the kernels were given, widened exactly; null without dropout.
static Value dropoutJson(const KernelSpec &spec, const DropoutParams &d) {
  if (!spec.dropout)
    return nullptr;
  return llvm::json::Object{{"p", static_cast<double>(d.p)},
                            {"seed", d.seed},
                            {"offset", static_cast<int64_t>(d.offset)}};
}

StringRef fmhajit::variantTensorFile(size_t slot) {
  // Names that outlive a BundleArray; a variant has up to four slots
  // (kMaxVariantTensors, ir/KernelAbi.h).
  static const char *const kFiles[] = {
      "variant_tensor0.npy", "variant_tensor1.npy", "variant_tensor2.npy",
      "variant_tensor3.npy"};
  assert(slot < std::size(kFiles) && "the API refuses more tensors");
  return kFiles[slot];
}

// The files of the variant's tensors, in slot order; null where the run
// gave none.
static Value variantTensorsJson(const AttentionProblem &problem) {
  if (problem.variantTensors.empty())
    return nullptr;
  Array files;
  for (size_t slot = 0; slot < problem.variantTensors.size(); ++slot)
    files.push_back(variantTensorFile(slot).str());
  return files;
}

llvm::json::Object fmhajit::runMetadata(const KernelSpec &spec,
                                        const AttentionProblem &problem) {
  bool window = spec.mask == Mask::Window;
  bool alibi = spec.bias == Bias::Alibi;
  return llvm::json::Object{
      {"spec", printSpec(spec)},
      {"name", encodeName(spec)},
      {"dtype", keyOf(spec.dtype)},
      {"mask", keyOf(spec.mask)},
      {"heads_q", problem.headsQ},
      {"heads_kv", problem.headsKv},
      // The float the kernel was given, widened exactly.
      {"scale", static_cast<double>(problem.resolvedScale())},
      {"softcap", spec.softcap ? static_cast<double>(problem.softcap) : 0.0},
      {"window_left", window ? problem.windowLeft : -1},
      {"window_right", window ? problem.windowRight : -1},
      {"alibi_slopes", listOrNull(problem.resolvedAlibiSlopes(), alibi)},
      {"sinks", listOrNull(problem.sinks, spec.sink)},
      {"cu_seqlens_q", listOrNull(problem.cuSeqlensQ(), spec.varlen)},
      {"cu_seqlens_k", listOrNull(problem.cuSeqlensK(), spec.varlen)},
      {"variant",
       spec.variant.empty() ? Value(nullptr) : Value(problem.variantSource)},
      {"variant_tensors", variantTensorsJson(problem)},
      {"dropout", dropoutJson(spec, problem.dropout)},
  };
}

// The order, for people reading the file; llvm::json::Object itself
// would print its keys sorted.
static const char *const kMetadataKeys[] = {
    "spec",         "name",         "dtype",        "mask",
    "heads_q",      "heads_kv",     "scale",        "softcap",
    "window_left",  "window_right", "alibi_slopes", "sinks",
    "cu_seqlens_q", "cu_seqlens_k", "variant",      "variant_tensors",
    "dropout"};

using MetaEntries = llvm::ArrayRef<std::pair<std::string, Value>>;

static llvm::Error writeJsonFile(StringRef path, MetaEntries meta) {
  return writeFileAtomically(path, [&](llvm::raw_ostream &os) {
    {
      llvm::json::OStream json(os, 2);
      json.object([&] {
        for (const auto &[key, value] : meta)
          json.attribute(key, value);
      });
    }
    os << "\n";
  });
}

static llvm::Error writeMetadata(StringRef path,
                                 const llvm::json::Object &meta) {
  assert(meta.size() == std::size(kMetadataKeys) && "a key is not printed");
  std::vector<std::pair<std::string, Value>> ordered;
  for (const char *key : kMetadataKeys)
    ordered.emplace_back(key, *meta.get(key));
  return writeJsonFile(path, ordered);
}

static std::string pathIn(StringRef dir, StringRef file) {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, file);
  return std::string(path);
}

llvm::Error fmhajit::writeBundle(StringRef dir,
                                 llvm::ArrayRef<BundleArray> arrays,
                                 MetaEntries meta) {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return makeError(ErrorKind::Io,
                     "cannot create directory '" + dir + "': " + ec.message());
  for (const BundleArray &a : arrays)
    if (llvm::Error err = writeNpy(pathIn(dir, a.file), a.data, a.shape))
      return err;
  return writeJsonFile(pathIn(dir, "meta.json"), meta);
}

llvm::Error fmhajit::writeRunBundle(StringRef dir, const KernelSpec &spec,
                                    const AttentionProblem &problem,
                                    const RunTensors &tensors) {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return makeError(ErrorKind::Io,
                     "cannot create directory '" + dir + "': " + ec.message());
  auto pathOf = [&](StringRef file) {
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, file);
    return std::string(path);
  };
  struct Entry {
    StringRef file;
    llvm::ArrayRef<float> data;
    llvm::SmallVector<int64_t, 4> shape;
  };
  Entry entries[] = {
      {"q.npy", tensors.q, problem.qShape()},
      {"k.npy", tensors.k, problem.kShape()},
      {"v.npy", tensors.v, problem.vShape()},
      {"o.npy", tensors.o, problem.oShape()},
      {"lse.npy", tensors.lse, problem.lseShape()},
      {"bias.npy",
       problem.bias,
       {problem.batch, problem.headsQ, problem.seqlenQ, problem.seqlenK}}};
  for (const Entry &e : entries) {
    if ((e.file == "lse.npy" && !spec.lse) ||
        (e.file == "bias.npy" && spec.bias != Bias::Elementwise))
      continue;
    if (llvm::Error err = writeNpy(pathOf(e.file), e.data, e.shape))
      return err;
  }
  for (size_t slot = 0; slot < problem.variantTensors.size(); ++slot) {
    const std::vector<float> &t = problem.variantTensors[slot];
    if (llvm::Error err =
            writeNpy(pathOf(variantTensorFile(slot)), t, {int64_t(t.size())}))
      return err;
  }
  return writeMetadata(pathOf("meta.json"), runMetadata(spec, problem));
}
