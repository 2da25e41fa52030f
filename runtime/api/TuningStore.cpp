//===- TuningStore.cpp - Autotuning winners, remembered on disk -----------===//
#include "runtime/api/TuningStore.h"
#include "compiler/CacheFile.h"
#include "runtime/api/Registry.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/xxhash.h"

using namespace fmhajit;
namespace json = llvm::json;

static std::string pow2(int64_t n) {
  return std::to_string(llvm::PowerOf2Ceil(uint64_t(std::max<int64_t>(n, 1))));
}

std::string fmhajit::tuningBucket(const LoweredProblem &l, unsigned threads) {
  const AttentionProblem &a = l.problem;
  return featureKey(l.features) + " sq" + pow2(a.maxSeqlenQ()) + " sk" +
         pow2(a.maxSeqlenK()) + " bh" + pow2(a.batch * a.headsQ) + " t" +
         std::to_string(threads);
}

std::string TuningStore::pathFor(llvm::StringRef bucket) const {
  std::string hex;
  llvm::raw_string_ostream(hex)
      << llvm::format_hex_no_prefix(llvm::xxh3_64bits(bucket), 16);
  return dir + "/tune-" + hex + ".json";
}

std::optional<TuningRecord> TuningStore::load(llvm::StringRef bucket) const {
  auto buffer = llvm::MemoryBuffer::getFile(pathFor(bucket));
  if (!buffer)
    return std::nullopt;
  llvm::Expected<json::Value> parsed = json::parse((*buffer)->getBuffer());
  if (!parsed) { // a damaged file is a miss: the next tuning rewrites it
    llvm::consumeError(parsed.takeError());
    return std::nullopt;
  }
  const json::Object *o = parsed->getAsObject();
  if (!o || o->getString("bucket") != bucket ||
      o->getString("fingerprint") != fingerprint || !o->getString("winner"))
    return std::nullopt;
  TuningRecord record;
  record.winner = o->getString("winner")->str();
  if (const json::Array *timings = o->getArray("timings"))
    for (const json::Value &t : *timings)
      if (const json::Object *row = t.getAsObject())
        record.timings.push_back({row->getString("kernel").value_or("").str(),
                                  row->getNumber("ms").value_or(0)});
  return record;
}

llvm::Error TuningStore::save(llvm::StringRef bucket,
                              const TuningRecord &record) const {
  json::Array timings;
  for (const TunedTiming &t : record.timings)
    timings.push_back(json::Object{{"kernel", t.kernel}, {"ms", t.ms}});
  json::Object o{{"bucket", bucket},
                 {"fingerprint", fingerprint},
                 {"winner", record.winner},
                 {"timings", std::move(timings)}};
  std::string text;
  llvm::raw_string_ostream(text)
      << llvm::formatv("{0:2}", json::Value(std::move(o))) << "\n";
  return writeCacheFile(pathFor(bucket), "", text);
}
