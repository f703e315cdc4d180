// Heap settings for processes that move checkpoint chunks (proto::kCheckpointChunkBytes, 4 MiB):
// the checkpoint-store and the trial-worker.
//
// Each chunk passes through several buffers of its size (a RocksDB read, the reply's vector, its
// msgpack encoding, the ZeroMQ frame; on the worker the tar pipe's buffer and the decoded
// reply). glibc serves allocations above its mmap threshold with mmap(2) and hands them back on
// free, and trims the heap's top above its trim threshold, so at the defaults every such buffer
// is mapped, page-faulted and zeroed by the kernel again: a quarter of the store's CPU per
// restored checkpoint (docs/explanation/performance/checkpoints.md).
#pragma once

namespace tunebus::service {

/// Keeps chunk-sized buffers in the heap for reuse: glibc's mmap threshold to 32 MiB (bytes;
/// proto::kMaxMessageBytes, the largest frame a service takes) and its trim threshold to 128 MiB
/// (bytes freed at the top of the heap kept for the next chunks), through mallopt(3). Call once at
/// the start of main, before any thread starts. The cost: up to 128 MiB of freed heap may stay
/// resident.
void KeepChunkBuffersInHeap();

}  // namespace tunebus::service
