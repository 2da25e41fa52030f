//===- ArchTable.cpp - Per-target capabilities from specs/arch/*.json -----===//
#include "specs/ArchTable.h"
#include "specs/EmbeddedData.h"
#include "specs/Keys.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/JSON.h"

using namespace fmhajit;
namespace json = llvm::json;

const PipelineInfo *ArchInfo::pipeline(Pipeline p) const {
  auto it = pipelines.find(p);
  return it == pipelines.end() ? nullptr : &it->second;
}

bool ArchInfo::hasDType(DType t) const { return llvm::is_contained(dtypes, t); }

bool ArchInfo::hasHeadDim(unsigned d) const {
  return llvm::is_contained(headDims, d);
}

const TileConfig *ArchInfo::defaultTile(Pipeline p, unsigned d,
                                        DType dtype) const {
  const PipelineInfo *info = pipeline(p);
  if (!info)
    return nullptr;
  for (const TileConfig &t : info->tiles)
    if (t.serves(d, dtype))
      return &t;
  return nullptr;
}

std::vector<const TileConfig *> ArchInfo::defaultTiles(Pipeline p, unsigned d,
                                                       DType dtype) const {
  std::vector<const TileConfig *> rows;
  const TileConfig *first = defaultTile(p, d, dtype);
  if (first)
    for (const TileConfig &t : pipeline(p)->tiles)
      if (t.maxD == first->maxD && t.serves(d, dtype))
        rows.push_back(&t);
  return rows;
}

// The tables are part of the build: a malformed one is a bug caught by the
// first test that loads them, so it aborts with the file and field named.
[[noreturn]] static void badTable(llvm::StringRef file, llvm::StringRef what) {
  llvm::report_fatal_error(llvm::Twine("specs/") + file + ": " + what);
}

static unsigned readUnsigned(const json::Object &o, llvm::StringRef key,
                             llvm::StringRef file, bool required = true) {
  if (auto v = o.getInteger(key))
    return static_cast<unsigned>(*v);
  if (required)
    badTable(file, "missing integer '" + key.str() + "'");
  return 0;
}

std::optional<std::vector<DType>>
fmhajit::parseDTypeList(const json::Array *list) {
  std::vector<DType> out;
  for (const json::Value &v : list ? *list : json::Array()) {
    auto t = v.getAsString() ? parseKey<DType>(*v.getAsString()) : std::nullopt;
    if (!t)
      return std::nullopt;
    out.push_back(*t);
  }
  return out;
}

static std::vector<DType> readDTypes(const json::Array *a,
                                     llvm::StringRef file) {
  std::optional<std::vector<DType>> dtypes = parseDTypeList(a);
  if (!dtypes)
    badTable(file, "unknown dtype in a dtypes list");
  return *dtypes;
}

static PipelineInfo readPipeline(const json::Object &o, llvm::StringRef file) {
  PipelineInfo info;
  info.dtypes = readDTypes(o.getArray("dtypes"), file);
  if (auto shape = o.getString("shape"))
    info.shape = shape->str();
  if (const json::Array *mult = o.getArray("tile_multiple")) {
    info.bmMultiple =
        static_cast<unsigned>((*mult)[0].getAsInteger().value_or(1));
    info.bnMultiple =
        static_cast<unsigned>((*mult)[1].getAsInteger().value_or(1));
  }
  for (const json::Value &v : *o.getArray("tiles")) {
    const json::Object &t = *v.getAsObject();
    TileConfig tile;
    tile.maxD = readUnsigned(t, "max_d", file);
    tile.dtypes = readDTypes(t.getArray("dtypes"), file);
    // A row gives every tile key, spelled as in specs.
#define SPEC_TILE(Name, Letter, Help) tile.Name = readUnsigned(t, #Name, file);
#include "specs/SpecKeys.def"
    info.tiles.push_back(tile);
  }
  return info;
}

static Backend readBackend(llvm::StringRef s, llvm::StringRef file) {
  if (s == "host")
    return Backend::Host;
  if (s == "nvptx")
    return Backend::Nvptx;
  if (s == "amdgpu")
    return Backend::Amdgpu;
  badTable(file, "unknown backend '" + s.str() + "'");
}

static ArchInfo readArch(const EmbeddedFile &file) {
  llvm::Expected<json::Value> parsed = json::parse(file.text);
  if (!parsed)
    badTable(file.path, llvm::toString(parsed.takeError()));
  const json::Object &o = *parsed->getAsObject();
  ArchInfo a;
  a.name = o.getString("name").value_or("").str();
  a.backend = readBackend(o.getString("backend").value_or(""), file.path);
  a.triple = o.getString("triple").value_or("").str();
  a.cpu = o.getString("cpu").value_or("").str();
  a.vectorBits = readUnsigned(o, "vector_bits", file.path, false);
  a.minPtx = readUnsigned(o, "min_ptx", file.path, false);
  a.gridDependency = o.getBoolean("grid_dependency").value_or(false);
  a.waveSize = readUnsigned(o, "wave_size", file.path);
  a.sharedBytes = readUnsigned(o, "shared_bytes", file.path);
  a.maxWarps = readUnsigned(o, "max_warps", file.path);
  a.maxStages = readUnsigned(o, "max_stages", file.path);
  a.registersPerThread =
      readUnsigned(o, "registers_per_thread", file.path, false);
  a.registerFileBytes =
      readUnsigned(o, "register_file_bytes", file.path, false);
  a.dtypes = readDTypes(o.getArray("dtypes"), file.path);
  for (const json::Value &v : *o.getArray("head_dims"))
    a.headDims.push_back(static_cast<unsigned>(*v.getAsInteger()));
  for (const auto &[key, value] : *o.getObject("pipelines")) {
    auto p = parseKey<Pipeline>(key.str());
    if (!p)
      badTable(file.path, "unknown pipeline '" + key.str() + "'");
    a.pipelines[*p] = readPipeline(*value.getAsObject(), file.path);
  }
  for (const json::Value &v : *o.getArray("auto_order"))
    a.autoOrder.push_back(*parseKey<Pipeline>(*v.getAsString()));
  return a;
}

llvm::ArrayRef<ArchInfo> fmhajit::allArchs() {
  static const std::vector<ArchInfo> archs = [] {
    std::vector<ArchInfo> out;
    for (const EmbeddedFile &f : embeddedFiles("arch/"))
      out.push_back(readArch(f));
    return out;
  }();
  return archs;
}

const ArchInfo *fmhajit::findArch(llvm::StringRef name) {
  for (const ArchInfo &a : allArchs())
    if (a.name == name)
      return &a;
  return nullptr;
}

std::string fmhajit::allArchNames() {
  std::string out;
  for (const ArchInfo &a : allArchs())
    out += (out.empty() ? "" : ", ") + a.name;
  return out;
}
