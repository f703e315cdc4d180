#include "libs/service/chunk_heap.hpp"

#include <malloc.h>

namespace tunebus::service {

void KeepChunkBuffersInHeap() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 128 << 20);
}

void ReturnFreedHeapToTheSystem() {
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 20);
}

}  // namespace tunebus::service
