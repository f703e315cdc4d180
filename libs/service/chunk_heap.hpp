// glibc heap settings, one call at the start of main. Processes that move checkpoint chunks
// (proto::kCheckpointChunkBytes, 4 MiB), the checkpoint-store and the trial-worker, keep
// chunk-sized buffers; the scheduler and tunectl (whose `up` and `run` embed every service)
// return freed memory to the system.
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

/// Returns freed memory to the system: glibc's mmap threshold fixed at 1 MiB and its trim
/// threshold at 1 MiB (bytes), through mallopt(3). At glibc's defaults both thresholds rise
/// with the largest buffer freed (up to 32 and 64 MiB), and malloc_trim(3) never shrinks the top
/// of a thread's arena, so one replay of a 12,000-trial journal left ~20 MB of free heap
/// resident in the reading threads' arenas (docs/explanation/performance/memory.md). The cost: a
/// buffer over 1 MiB is mapped and page-faulted anew each time. Call once at the start of main,
/// before any thread starts.
void ReturnFreedHeapToTheSystem();

}  // namespace tunebus::service
