//===- DispatchTable.cpp - The dispatcher's data: specs/dispatch/*.json ---===//
#include "runtime/api/DispatchTable.h"
#include "specs/EmbeddedData.h"
#include "specs/Keys.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/JSON.h"

using namespace fmhajit;
namespace json = llvm::json;

std::string Tile::str() const {
  return (vPretranspose ? "vpt_m" : "m") + std::to_string(bm) + "n" +
         std::to_string(bn) + "w" + std::to_string(warps) + "s" +
         std::to_string(stages);
}

Tile fmhajit::tileOf(const KernelSpec &spec) {
  return {spec.bm, spec.bn, spec.warps, spec.stages, spec.v_pretranspose};
}

// The tables are part of the build: a malformed one is a bug that the unit
// tests catch on first load, so it aborts naming the file and the field.
[[noreturn]] static void badTable(llvm::StringRef file,
                                  const llvm::Twine &what) {
  llvm::report_fatal_error("specs/" + file + ": " + what);
}

static unsigned readUnsigned(const json::Object &o, llvm::StringRef key,
                             llvm::StringRef file, bool required) {
  if (auto v = o.getInteger(key); v && *v >= 0)
    return unsigned(*v);
  if (required)
    badTable(file, "a tile row needs a whole number '" + key + "'");
  return 0;
}

static TileRow readRow(const json::Object &o, llvm::StringRef file) {
  TileRow row;
  if (auto sq = o.getInteger("max_seqlen_q"))
    row.maxSeqlenQ = *sq;
  row.maxD = readUnsigned(o, "max_d", file, true);
  row.bm = readUnsigned(o, "bm", file, true);
  row.bn = readUnsigned(o, "bn", file, true);
  row.warps = readUnsigned(o, "warps", file, false);
  row.stages = readUnsigned(o, "stages", file, false);
  row.vPretranspose = o.getBoolean("v_pretranspose").value_or(false);
  std::optional<std::vector<DType>> dtypes =
      parseDTypeList(o.getArray("dtypes"));
  if (!dtypes)
    badTable(file, "unknown dtype in a tile row's 'dtypes'");
  row.dtypes = std::move(*dtypes);
  if (const json::Array *masks = o.getArray("masks"))
    for (const json::Value &name : *masks) {
      std::optional<Mask> mask = name.getAsString()
                                     ? parseKey<Mask>(name.getAsString()->str())
                                     : std::nullopt;
      if (!mask)
        badTable(file, "unknown mask in a tile row's 'masks'");
      row.masks.push_back(*mask);
    }
  return row;
}

bool TileRow::serves(int64_t seqlenQ, unsigned d, DType dtype,
                     Mask mask) const {
  return seqlenQ <= maxSeqlenQ && d <= maxD && rowServesDType(dtypes, dtype) &&
         (masks.empty() || llvm::is_contained(masks, mask));
}

using TileRows = std::map<Pipeline, std::vector<TileRow>>;

static TileRows readTiles(const json::Object &tiles, llvm::StringRef file) {
  TileRows out;
  for (const auto &[key, rows] : tiles) {
    auto p = parseKey<Pipeline>(key.str());
    if (!p || !rows.getAsArray())
      badTable(file, "tile tables map pipeline names to row lists; got '" +
                         key.str() + "'");
    for (const json::Value &row : *rows.getAsArray())
      out[*p].push_back(readRow(*row.getAsObject(), file));
  }
  return out;
}

// A ratio of 1 has nothing to pack: a table asking for it is a mistake.
static std::optional<PackGqaRule> readPackGqa(const json::Object *pack,
                                              llvm::StringRef file) {
  if (!pack)
    return std::nullopt;
  std::optional<int64_t> sq = pack->getInteger("max_seqlen_q");
  std::optional<int64_t> ratio = pack->getInteger("min_ratio");
  if (!sq || !ratio || *ratio < 2)
    badTable(file, "'pack_gqa' needs 'max_seqlen_q' and a 'min_ratio' of at "
                   "least 2");
  return PackGqaRule{*sq, *ratio};
}

static void readFile(const EmbeddedFile &f,
                     std::map<std::string, DispatchTable> &out) {
  llvm::Expected<json::Value> parsed = json::parse(f.text);
  if (!parsed)
    badTable(f.path, llvm::toString(parsed.takeError()));
  const json::Object *o = parsed->getAsObject();
  if (!o || !o->getArray("targets") || !o->getArray("profiles"))
    badTable(f.path, "needs 'targets', 'profiles' and 'tiles'");
  DispatchTable table;
  table.file = f.path.str();
  for (const json::Value &v : *o->getArray("profiles"))
    table.profiles.push_back(v.getAsString().value_or("").str());
  if (!o->getObject("tiles"))
    badTable(f.path, "missing object 'tiles'");
  table.tiles = readTiles(*o->getObject("tiles"), f.path);
  if (const json::Object *split = o->getObject("split_tiles"))
    table.splitTiles = readTiles(*split, f.path);
  if (const json::Object *d = o->getObject("decode"))
    table.decode = DecodeRule{d->getInteger("max_seqlen_q").value_or(0),
                              d->getInteger("min_seqlen_k").value_or(0)};
  table.packGqa = readPackGqa(o->getObject("pack_gqa"), f.path);
  for (const json::Value &v : *o->getArray("targets")) {
    std::string target = v.getAsString().value_or("").str();
    if (!findArch(target) || out.count(target))
      badTable(f.path,
               "target '" + target + "' is unknown or in two dispatch files");
    out[target] = table;
  }
}

const DispatchTable &DispatchTable::forTarget(llvm::StringRef target) {
  static const std::map<std::string, DispatchTable> tables = [] {
    std::map<std::string, DispatchTable> out;
    for (const EmbeddedFile &f : embeddedFiles("dispatch/"))
      readFile(f, out);
    return out;
  }();
  static const DispatchTable fallback = [] {
    DispatchTable t;
    t.profiles = {"dispatch"};
    return t;
  }();
  auto it = tables.find(target.str());
  return it == tables.end() ? fallback : it->second;
}

// A row's missing warps/stages come from the arch default for the head dim.
static std::optional<Tile> completeRow(const ArchInfo &arch, Pipeline p,
                                       unsigned d, DType dtype,
                                       const TileRow &row) {
  const TileConfig *def = arch.defaultTile(p, d, dtype);
  if (!def)
    return std::nullopt;
  return Tile{row.bm, row.bn, row.warps ? row.warps : def->warps,
              row.stages ? row.stages : def->stages, row.vPretranspose};
}

// What selects \p row, as the plan's explanation names it: "seqlen_q <= 16,
// d <= 256", then the dtypes and masks it is limited to, if any.
static std::string describeRow(const TileRow &row) {
  std::string out = row.maxSeqlenQ == INT64_MAX
                        ? std::string("any seqlen_q")
                        : "seqlen_q <= " + std::to_string(row.maxSeqlenQ);
  out += ", d <= " + std::to_string(row.maxD);
  auto list = [&](const char *what, const auto &keys) {
    if (keys.empty())
      return;
    out += std::string(", ") + what + " ";
    for (size_t i = 0; i < keys.size(); ++i)
      out += (i ? "/" : "") + keyOf(keys[i]).str();
  };
  list("dtypes", row.dtypes);
  list("masks", row.masks);
  return out;
}

// The first row of \p rows' list for \p p that serves the problem.
static std::optional<TileChoice> firstServing(const TileRows &rows,
                                              const std::string &file,
                                              const ArchInfo &arch, Pipeline p,
                                              unsigned d, DType dtype,
                                              Mask mask, int64_t seqlenQ) {
  auto list = rows.find(p);
  if (list != rows.end())
    for (const TileRow &row : list->second)
      if (row.serves(seqlenQ, d, dtype, mask))
        if (std::optional<Tile> t = completeRow(arch, p, d, dtype, row))
          return TileChoice{*t, describeRow(row) + " (" + file + ")"};
  return std::nullopt;
}

std::optional<TileChoice> DispatchTable::choose(const ArchInfo &arch,
                                                Pipeline p, unsigned d,
                                                DType dtype, Mask mask,
                                                int64_t seqlenQ) const {
  if (auto row = firstServing(tiles, file, arch, p, d, dtype, mask, seqlenQ))
    return row;
  const TileConfig *def = arch.defaultTile(p, d, dtype);
  if (!def)
    return std::nullopt;
  return TileChoice{{def->bm, def->bn, def->warps, def->stages},
                    "the arch default for d <= " + std::to_string(def->maxD)};
}

std::optional<TileChoice>
DispatchTable::chooseSplitTile(const ArchInfo &arch, Pipeline p, unsigned d,
                               DType dtype, Mask mask, int64_t seqlenQ) const {
  auto row = firstServing(splitTiles, file, arch, p, d, dtype, mask, seqlenQ);
  if (row)
    row->row = "split_tiles: " + row->row;
  return row;
}

// The query lengths at which \p rows' list for \p p changes its row.
static std::vector<int64_t> rowBoundaries(const TileRows &rows, Pipeline p) {
  std::vector<int64_t> lengths;
  if (auto list = rows.find(p); list != rows.end())
    for (const TileRow &row : list->second)
      lengths.push_back(row.maxSeqlenQ);
  return lengths;
}

std::vector<Tile> DispatchTable::tilesFor(const ArchInfo &arch, Pipeline p,
                                          unsigned d, DType dtype, Mask mask,
                                          bool withSplitTiles) const {
  // Exactly the tiles choose() can return for d: one per row boundary, and
  // whatever catches the longest queries.
  std::vector<int64_t> lengths = rowBoundaries(tiles, p);
  lengths.push_back(INT64_MAX);
  std::vector<Tile> out;
  auto add = [&](const std::optional<TileChoice> &c) {
    if (c && !llvm::is_contained(out, c->tile))
      out.push_back(c->tile);
  };
  for (int64_t sq : lengths)
    add(choose(arch, p, d, dtype, mask, sq));
  if (withSplitTiles)
    for (int64_t sq : rowBoundaries(splitTiles, p))
      add(chooseSplitTile(arch, p, d, dtype, mask, sq));
  return out;
}
