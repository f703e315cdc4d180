#include <cstdio>
#include <cstdlib>

#include "fuzz/fuzz_targets.hpp"

namespace tunebus::fuzz {

void Check(bool ok, std::string_view what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz check failed: %.*s\n", int(what.size()), what.data());
  std::abort();
}

}  // namespace tunebus::fuzz
