#include "services/scheduler/dashboard/body.hpp"

#include <algorithm>

namespace tunebus::dashboard {

void SetStaticBody(httplib::Response& res, std::string_view body, std::string_view content_type) {
  res.set_content_provider(body.size(), std::string(content_type),
                           [body](size_t offset, size_t length, httplib::DataSink& sink) {
                             return sink.write(body.data() + offset,
                                               std::min(length, body.size() - offset));
                           });
}

void SetBody(httplib::Response& res, std::string body, std::string_view content_type) {
  auto held = std::make_shared<const std::string>(std::move(body));
  res.set_content_provider(held->size(), std::string(content_type),
                           [held](size_t offset, size_t length, httplib::DataSink& sink) {
                             return sink.write(held->data() + offset,
                                               std::min(length, held->size() - offset));
                           });
}

}  // namespace tunebus::dashboard
