//===- ActionTableTest.cpp - Every action has a runtime entry point -------===//
//
// pipe/Support/Actions.def names the runtime entry point of each action and
// pipe/Runtime/Comm.h lists the transport ABI's; the lowering emits calls to
// them and the JIT resolves them. This looks every entry
// up in the symbols the runtime library exports (the test binary links it
// with its symbols exported), so an action added to the table without an
// entry point in the runtime fails here, by name, rather than when a JIT-ed
// or dlopen-ed program first runs it.
//
//===----------------------------------------------------------------------===//

#include "pipe/Runtime/Program.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

namespace {

struct TableEntry {
  const char *kind;
  const char *symbol;
};

constexpr TableEntry kEntries[] = {
#define PIPE_ACTION(KIND, MNEMONIC, OP, ENTRY, COMPUTE, TOKEN)                 \
  {"action " #KIND, "pipe_rt_" #ENTRY},
#include "pipe/Support/Actions.def"
#define PIPE_RT_COMM_ENTRY(NAME) {"transport ABI", #NAME},
    PIPE_RT_COMM_ENTRIES(PIPE_RT_COMM_ENTRY)
#undef PIPE_RT_COMM_ENTRY
};

TEST(ActionTable, EveryActionHasARuntimeEntry) {
  // Keeps the runtime's action entry points linked into this binary.
  volatile auto anchor = &pipe_rt_session_create;
  (void)anchor;
  for (const TableEntry &entry : kEntries)
    EXPECT_NE(dlsym(RTLD_DEFAULT, entry.symbol), nullptr)
        << entry.kind << ": the runtime exports no " << entry.symbol;
}

} // namespace
