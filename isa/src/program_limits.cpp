// The registers and sync flags a program names, against how many a scalar unit has: the
// simulator refuses a program its config cannot run, and the compiler refuses to emit one.
#include <fmt/format.h>

#include "vtpu/isa/program.h"

namespace vtpu::isa {

std::optional<Violation> first_register_or_flag_past(const std::vector<Bundle>& code, uint32_t registers,
                                                     uint32_t flags) {
  for (size_t i = 0; i < code.size(); ++i)
    for (const SlotDef& sd : table().slots) {
      const Operation& op = code[i].at(sd.id);
      if (op.is_nop()) continue;
      for (size_t k = 1; k < sd.fields.size(); ++k) {
        const FieldDef& fd = sd.fields[k];
        int64_t v = op.fields[k];
        bool used = false;
        for (const OperandDef& o : op.def->operands)
          for (auto fn : o.fields) used |= fn == fd.name;
        if (!used) continue;
        if (fd.kind == FieldKind::Reg && v >= int64_t(registers))
          return Violation{i, sd.id,
                           fmt::format("field '{}' names r{}, but the scalar unit has {} registers, r0..r{} "
                                       "(core.scalar.registers)",
                                       fd.name, v, registers, registers - 1)};
        if (fd.kind == FieldKind::Flag && v > int64_t(flags))
          return Violation{i, sd.id,
                           fmt::format("field '{}' names f{}, but the config has {} sync flags, f1..f{} "
                                       "(core.scalar.sync_flags)",
                                       fd.name, v, flags, flags)};
      }
    }
  return std::nullopt;
}

}  // namespace vtpu::isa
