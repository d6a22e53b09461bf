//! The counting global allocator behind the allocation checks (design.md §7: no heap allocation in a step
//! after the workspace is built), one implementation for the benchmark binaries and the tests. Each binary or
//! test target installs it itself:
//! ```ignore
//! #[global_allocator]
//! static GLOBAL: torsion_math::alloc_count::CountingAlloc = torsion_math::alloc_count::CountingAlloc;
//! ```
//! and reads [`thread_allocations`] around the code measured. The count is per thread, so a test harness's
//! other threads (seen once on a loaded CI machine) do not leak into it.
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The system allocator, counting each `alloc` and `realloc` of the calling thread.
pub struct CountingAlloc;

thread_local! {
    // const-initialised, no destructor: safe to touch inside the allocator, even during thread teardown
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

fn count() {
    ALLOCS.with(|c| c.set(c.get() + 1));
}

// SAFETY: forwards every call to `System` unchanged; counting touches only a const thread-local `Cell`.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        count();
        unsafe { System.realloc(p, l, n) }
    }
}

/// Heap allocations (`alloc` + `realloc`) made so far by the calling thread; 0 forever unless [`CountingAlloc`]
/// is the global allocator.
pub fn thread_allocations() -> usize {
    ALLOCS.with(|c| c.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[global_allocator]
    static GLOBAL: CountingAlloc = CountingAlloc;

    #[test]
    fn counts_this_threads_allocations_and_reallocations() {
        let a0 = thread_allocations();
        let mut v: Vec<u64> = Vec::with_capacity(2);
        assert_eq!(thread_allocations() - a0, 1);
        v.extend([1, 2, 3]); // grows: one realloc
        assert_eq!(thread_allocations() - a0, 2);
        // another thread's 1000 allocations are not this thread's (spawning itself allocates a few here)
        let a1 = thread_allocations();
        std::thread::scope(|s| {
            s.spawn(|| (0..1000).map(|i| vec![0u8; 64 + i].len()).sum::<usize>());
        });
        assert!(thread_allocations() - a1 < 100, "{}", thread_allocations() - a1);
        let a1 = thread_allocations();
        v.push(4);
        assert_eq!(thread_allocations(), a1, "no allocation within capacity");
        assert_eq!(v.len(), 4);
    }
}
