//===- AmdgpuCodeObject.cpp - What an HSA code object declares ------------===//
#include "compiler/AmdgpuCodeObject.h"
#include "specs/Errors.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/BinaryFormat/MsgPackDocument.h"
#include "llvm/Object/ELF.h"

using namespace fmhajit;
using namespace llvm;

static Error malformed(const Twine &why) {
  return makeError(ErrorKind::Jit, "not a valid AMDGPU code object: " + why);
}

/// The metadata note's msgpack bytes.
static Expected<StringRef> metadataBlob(const object::ELF64LEFile &file) {
  auto sections = file.sections();
  if (!sections)
    return malformed(toString(sections.takeError()));
  for (const object::ELF64LE::Shdr &section : *sections) {
    if (section.sh_type != ELF::SHT_NOTE)
      continue;
    Error err = Error::success();
    for (const object::ELF64LE::Note &note : file.notes(section, err))
      if (note.getName() == "AMDGPU" &&
          note.getType() == ELF::NT_AMDGPU_METADATA) {
        consumeError(std::move(err));
        return note.getDescAsStringRef(section.sh_addralign);
      }
    if (err)
      return malformed(toString(std::move(err)));
  }
  return malformed("no NT_AMDGPU_METADATA note");
}

/// A metadata integer (msgpack stores small ones unsigned or signed).
static uint64_t number(msgpack::MapDocNode &map, StringRef key) {
  auto it = map.find(key);
  if (it == map.end())
    return 0;
  msgpack::DocNode &node = it->second;
  if (node.getKind() == msgpack::Type::UInt)
    return node.getUInt();
  if (node.getKind() == msgpack::Type::Int)
    return uint64_t(node.getInt());
  return 0;
}

static std::string text(msgpack::MapDocNode &map, StringRef key) {
  auto it = map.find(key);
  return it != map.end() && it->second.isString() ? it->second.getString().str()
                                                  : "";
}

static CodeObjectKernel readKernel(msgpack::MapDocNode &map) {
  CodeObjectKernel k;
  k.name = text(map, ".name");
  k.symbol = text(map, ".symbol");
  k.kernargSegmentSize = number(map, ".kernarg_segment_size");
  k.kernargSegmentAlign = number(map, ".kernarg_segment_align");
  k.groupSegmentFixedSize = number(map, ".group_segment_fixed_size");
  k.privateSegmentFixedSize = number(map, ".private_segment_fixed_size");
  k.wavefrontSize = number(map, ".wavefront_size");
  k.maxFlatWorkgroupSize = number(map, ".max_flat_workgroup_size");
  k.vgprCount = number(map, ".vgpr_count");
  k.agprCount = number(map, ".agpr_count");
  k.sgprCount = number(map, ".sgpr_count");
  k.vgprSpillCount = number(map, ".vgpr_spill_count");
  k.sgprSpillCount = number(map, ".sgpr_spill_count");
  auto args = map.find(".args");
  if (args != map.end() && args->second.isArray())
    for (msgpack::DocNode &arg : args->second.getArray())
      if (arg.isMap())
        k.args.push_back({number(arg.getMap(), ".offset"),
                          number(arg.getMap(), ".size"),
                          text(arg.getMap(), ".value_kind")});
  return k;
}

Expected<std::vector<CodeObjectKernel>>
fmhajit::readCodeObjectKernels(StringRef codeObject) {
  Expected<object::ELF64LEFile> file = object::ELF64LEFile::create(codeObject);
  if (!file)
    return malformed(toString(file.takeError()));
  if (file->getHeader().e_machine != ELF::EM_AMDGPU)
    return malformed("the ELF machine is not EM_AMDGPU");
  Expected<StringRef> blob = metadataBlob(*file);
  if (!blob)
    return blob.takeError();
  msgpack::Document doc;
  if (!doc.readFromBlob(*blob, /*Multi=*/false) || !doc.getRoot().isMap())
    return malformed("the metadata note is not a msgpack map");
  msgpack::MapDocNode &root = doc.getRoot().getMap();
  auto kernels = root.find("amdhsa.kernels");
  if (kernels == root.end() || !kernels->second.isArray())
    return malformed("the metadata has no amdhsa.kernels list");
  std::vector<CodeObjectKernel> result;
  for (msgpack::DocNode &kernel : kernels->second.getArray())
    if (kernel.isMap())
      result.push_back(readKernel(kernel.getMap()));
  return result;
}
