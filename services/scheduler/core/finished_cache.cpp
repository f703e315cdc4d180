#include "services/scheduler/core/finished_cache.hpp"

namespace tunebus {

namespace {

// A std::map / std::set node's links and color, besides its value.
constexpr size_t kTreeNodeBytes = 32;

// Characters a string holds on the heap (none while they fit its inline buffer).
size_t HeapBytes(const std::string& s) { return s.capacity() > 15 ? s.capacity() + 1 : 0; }

size_t CheckpointBytes(const CheckpointRef& c) { return sizeof(c) + HeapBytes(c.checkpoint_id); }

}  // namespace

size_t JsonBytes(const nlohmann::json& j) {
  size_t bytes = sizeof(nlohmann::json);
  switch (j.type()) {
    case nlohmann::json::value_t::object:
      bytes += sizeof(nlohmann::json::object_t);
      for (const auto& [key, value] : j.get_ref<const nlohmann::json::object_t&>())
        bytes += kTreeNodeBytes + sizeof(std::string) + HeapBytes(key) + JsonBytes(value);
      break;
    case nlohmann::json::value_t::array:
      bytes += sizeof(nlohmann::json::array_t);
      for (const nlohmann::json& value : j) bytes += JsonBytes(value);
      break;
    case nlohmann::json::value_t::string:
      bytes += sizeof(std::string) + HeapBytes(j.get_ref<const std::string&>());
      break;
    case nlohmann::json::value_t::binary:
      bytes += sizeof(nlohmann::json::binary_t) + j.get_binary().capacity();
      break;
    default:  // numbers, booleans and null are held in the value itself
      break;
  }
  return bytes;
}

size_t TrialBytes(const Trial& t) {
  size_t bytes = sizeof(Trial) + HeapBytes(t.trial_id) + HeapBytes(t.experiment_tag) +
                 HeapBytes(t.worker_id) + HeapBytes(t.last_result_msgpack) + HeapBytes(t.error) +
                 HeapBytes(t.restored_checkpoint_id) + JsonBytes(t.config) - sizeof(t.config);
  for (const auto& [name, units] : t.resources.units_map())
    bytes += kTreeNodeBytes + sizeof(name) + sizeof(units) + HeapBytes(name);
  for (const std::string& gpu : t.gpu_ids) bytes += sizeof(gpu) + HeapBytes(gpu);
  for (const TrialFailure& f : t.failures) bytes += sizeof(f) + HeapBytes(f.error);
  for (const CheckpointRef& c : t.checkpoints) bytes += CheckpointBytes(c);
  for (const CheckpointRef& c : t.requested_checkpoints) bytes += CheckpointBytes(c);
  for (const CheckpointNotStored& c : t.checkpoints_not_stored)
    bytes += sizeof(c) + HeapBytes(c.reason);
  if (t.restore_checkpoint) bytes += HeapBytes(t.restore_checkpoint->checkpoint_id);
  return bytes;
}

}  // namespace tunebus
