//===- Profile.cpp - Named kernel sets ------------------------------------===//
#include "specs/Profile.h"
#include "specs/ArchTable.h"
#include "specs/EmbeddedData.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "specs/SpecParser.h"
#include "specs/Validate.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/JSON.h"

using namespace fmhajit;
using llvm::StringRef;
namespace json = llvm::json;

namespace {
using Group = std::vector<std::pair<std::string, std::vector<std::string>>>;

struct Profile {
  ProfileInfo info;
  std::vector<Group> groups;
};

std::string scalarText(const json::Value &v) {
  if (auto s = v.getAsString())
    return s->str();
  if (auto i = v.getAsInteger())
    return std::to_string(*i);
  return "";
}

llvm::Expected<Profile> readProfile(const EmbeddedFile &file) {
  llvm::Expected<json::Value> parsed = json::parse(file.text);
  if (!parsed)
    return makeError(ErrorKind::Spec, "specs/" + file.path + ": " +
                                          llvm::toString(parsed.takeError()));
  const json::Object *o = parsed->getAsObject();
  if (!o || !o->getString("name") || !o->getArray("groups"))
    return makeError(ErrorKind::Spec,
                     "specs/" + file.path + ": needs 'name' and 'groups'");
  Profile p;
  p.info.name = o->getString("name")->str();
  p.info.description = o->getString("description").value_or("").str();
  for (const json::Value &g : *o->getArray("groups")) {
    Group group;
    for (const auto &[key, values] : *g.getAsObject()) {
      std::vector<std::string> texts;
      for (const json::Value &v : *values.getAsArray())
        texts.push_back(scalarText(v));
      group.emplace_back(key.str(), std::move(texts));
    }
    p.groups.push_back(std::move(group));
  }
  return p;
}

std::vector<Profile> loadProfiles() {
  std::vector<Profile> out;
  for (const EmbeddedFile &f : embeddedFiles("profiles/")) {
    llvm::Expected<Profile> p = readProfile(f);
    if (!p) // embedded at build time: a bad file is a bug the tests catch
      llvm::report_fatal_error(p.takeError());
    out.push_back(std::move(*p));
  }
  return out;
}

/// Calls \p emit for each spec of the product of \p group's values.
void forEachInGroup(const Group &group, size_t key, KernelSpec spec,
                    const std::function<void(const KernelSpec &)> &emit) {
  if (key == group.size())
    return emit(spec);
  for (const std::string &value : group[key].second) {
    KernelSpec next = spec;
    if (llvm::Error err = setSpecKey(next, group[key].first, value))
      llvm::report_fatal_error(std::move(err)); // embedded data: a bug
    forEachInGroup(group, key + 1, next, emit);
  }
}
} // namespace

std::vector<ProfileInfo> fmhajit::listProfiles() {
  std::vector<ProfileInfo> out;
  for (const Profile &p : loadProfiles())
    out.push_back(p.info);
  return out;
}

llvm::Expected<std::vector<KernelSpec>>
fmhajit::expandProfile(StringRef name, std::optional<StringRef> target) {
  std::vector<Profile> profiles = loadProfiles();
  // "a,b": each profile named, in that order.
  llvm::SmallVector<StringRef> names;
  name.split(names, ',');
  std::vector<const Profile *> chosen;
  for (StringRef wanted : names) {
    auto it = llvm::find_if(profiles, [&](const Profile &p) {
      return p.info.name == wanted.trim();
    });
    if (it == profiles.end()) {
      std::vector<std::string> known;
      for (const Profile &p : profiles)
        known.push_back(p.info.name);
      return makeError(ErrorKind::Spec,
                       "profile=" + wanted.trim() + ": unknown profile; use " +
                           llvm::join(known, ", ") + ", or several: a,b");
    }
    chosen.push_back(&*it);
  }
  if (target && !findArch(*target))
    return makeError(ErrorKind::Spec, "target=" + *target +
                                          ": unknown target; use one of " +
                                          allArchNames());
  std::vector<KernelSpec> specs;
  llvm::StringSet<> seen;
  for (const ArchInfo &arch : allArchs()) {
    if (target && arch.name != *target)
      continue;
    KernelSpec base;
    base.target = arch.name;
    for (const Profile *profile : chosen)
      for (const Group &group : profile->groups)
        forEachInGroup(group, 0, base, [&](const KernelSpec &s) {
          llvm::Expected<KernelSpec> resolved = validateSpec(s);
          if (!resolved) {
            llvm::consumeError(resolved.takeError());
            return;
          }
          if (seen.insert(encodeName(*resolved)).second)
            specs.push_back(*resolved);
        });
  }
  return specs;
}
