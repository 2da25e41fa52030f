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
  return "m" + std::to_string(bm) + "n" + std::to_string(bn) + "w" +
         std::to_string(warps) + "s" + std::to_string(stages);
}

Tile fmhajit::tileOf(const KernelSpec &spec) {
  return {spec.bm, spec.bn, spec.warps, spec.stages};
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

static void readTiles(const json::Object *tiles, DispatchTable &table) {
  if (!tiles)
    badTable(table.file, "missing object 'tiles'");
  for (const auto &[key, rows] : *tiles) {
    auto p = parseKey<Pipeline>(key.str());
    if (!p || !rows.getAsArray())
      badTable(table.file, "'tiles' maps pipeline names to row lists; got '" +
                               key.str() + "'");
    for (const json::Value &row : *rows.getAsArray())
      table.tiles[*p].push_back(readRow(*row.getAsObject(), table.file));
  }
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
  readTiles(o->getObject("tiles"), table);
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
              row.stages ? row.stages : def->stages};
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

std::optional<TileChoice> DispatchTable::choose(const ArchInfo &arch,
                                                Pipeline p, unsigned d,
                                                DType dtype, Mask mask,
                                                int64_t seqlenQ) const {
  auto rows = tiles.find(p);
  if (rows != tiles.end())
    for (const TileRow &row : rows->second)
      if (row.serves(seqlenQ, d, dtype, mask))
        if (std::optional<Tile> t = completeRow(arch, p, d, dtype, row))
          return TileChoice{*t, describeRow(row) + " (" + file + ")"};
  const TileConfig *def = arch.defaultTile(p, d, dtype);
  if (!def)
    return std::nullopt;
  return TileChoice{{def->bm, def->bn, def->warps, def->stages},
                    "the arch default for d <= " + std::to_string(def->maxD)};
}

std::vector<Tile> DispatchTable::tilesFor(const ArchInfo &arch, Pipeline p,
                                          unsigned d, DType dtype,
                                          Mask mask) const {
  // Exactly the tiles choose() can return for d: one per row boundary, and
  // whatever catches the longest queries.
  std::vector<int64_t> lengths = {INT64_MAX};
  if (auto rows = tiles.find(p); rows != tiles.end())
    for (const TileRow &row : rows->second)
      lengths.insert(lengths.end() - 1, row.maxSeqlenQ);
  std::vector<Tile> out;
  for (int64_t sq : lengths)
    if (std::optional<TileChoice> c = choose(arch, p, d, dtype, mask, sq))
      if (!llvm::is_contained(out, c->tile))
        out.push_back(c->tile);
  return out;
}
