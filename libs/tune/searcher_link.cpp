#include "libs/tune/searcher_link.hpp"

#include <fmt/format.h>

namespace tunebus {

Result<nlohmann::json> ExpectReply(Result<nlohmann::json> reply, const char* type,
                                   const char* peer) {
  if (!reply.ok()) return reply;
  if (!reply->is_object() || reply->value("type", "") != type) {
    return Status::InvalidArgument(
        fmt::format("the {} answered {} where {} was expected", peer,
                    reply->is_object() ? reply->value("type", "?") : reply->dump(), type));
  }
  return reply;
}

}  // namespace tunebus
