//! The context block: how the executor tells a step function which block it runs.
//!
//! A step function (see [`super::lower`]) has the signature `(args: ptr<u64>, ctx: ptr<u64>)
//! -> u32`. `args` holds one `u64` per kernel parameter in the bits encoding of
//! [`nacre_ir::semantics`]; `ctx` points to [`CTX_WORDS`] `u64` words laid out as below. The
//! executor writes them, the step function only reads them. This module is the single
//! definition of the layout, shared by the lowering and the executor.
//!
//! | word | constant | meaning |
//! | --- | --- | --- |
//! | 0, 1, 2 | [`BLOCK_IDX`] | `blockIdx` x, y, z |
//! | 3, 4, 5 | [`BLOCK_DIM`] | `blockDim` x, y, z |
//! | 6, 7, 8 | [`GRID_DIM`] | `gridDim` x, y, z |
//! | 9 | [`BLOCK_THREADS`] | threads per block (`blockDim` x·y·z, at least 1) |
//! | 10 | [`SHARED_BASE`] | address of the block's shared memory ([`super::StepInfo::shared_bytes`] bytes, 16-aligned)|
//! | 11 | [`STATE_BASE`] | address of the per-thread state area ([`super::StepInfo::block_state_words`] words) |
//! | 12 | [`ROUND`] | 0 on a block's first round, then 1, 2, ... |
//! | 13 | [`BARRIERS_OPEN`] | which waiting threads resume this round besides those at a yield: [`WARPS_OPEN`] and [`BARRIERS_OPEN_BIT`] (see [`open_word`]) |
//! | 14, 15 | [`CHUNK_LO`], [`CHUNK_HI`] | collapsed step functions only: the range of the loop index to run |
//! | 16 | [`CHUNK_LIMIT`] | collapsed step functions only: the largest loop bound that cannot wrap |
//! | 17 | [`DYNAMIC_SHARED_BYTES`] | bytes of the launch's dynamic shared memory, which starts [`dynamic_shared_offset`] bytes into the shared memory |
//! | 18 | [`EXCHANGE_BASE`] | address of the block's exchange area for collective operations ([`exchange_bytes`], zeroed before the block's first round; only for kernels with [`super::StepInfo::exchange`]) |
//!
//! Thread indices are not in the context: the step function loops over the threads of the
//! block itself and derives `threadIdx` from its loop counter.
//!
//! The per-thread state area of a state machine holds, for thread `t`, the words
//! `t * state_words .. (t + 1) * state_words`: word [`PHASE_SLOT`] is the thread's resume
//! phase (0: finished, `k`: waiting at barrier or yield `k`) and the other words hold the
//! values that are live across barriers, one value per word. Thread loops per region (see
//! `regions`) have no phase, only the non-uniform values live across barriers, each word an
//! array over the threads ([`super::LANE_STRIDE`] bytes from the next, see `state`).
//!
//! A step function returns the bitwise or of [`AT_BARRIER`], [`AT_YIELD`] and [`AT_WARP`]
//! over the threads that stopped in the round (0 when all have finished). The executor calls
//! it again while the result is nonzero, with [`BARRIERS_OPEN`] set to [`open_word`] of the
//! result. Step functions without a state machine run the whole
//! block in one call and return 0.
//!
//! A collapsed step function (see `collapse`) reads the same context, for one block of one
//! thread, plus the chunk words, and returns one of the results defined there instead.

use nacre_ir::WARP_SIZE;

/// First of three words: the block's index in x, y, z.
pub const BLOCK_IDX: usize = 0;
/// First of three words: threads per block in x, y, z.
pub const BLOCK_DIM: usize = 3;
/// First of three words: blocks per grid in x, y, z.
pub const GRID_DIM: usize = 6;
/// Threads per block (the product of the block dimensions).
pub const BLOCK_THREADS: usize = 9;
/// Address of the block's shared memory.
pub const SHARED_BASE: usize = 10;
/// Address of the per-thread state area.
pub const STATE_BASE: usize = 11;
/// The round of the block: 0 on its first step call.
pub const ROUND: usize = 12;
/// Which waiting threads resume this round besides those at a yield ([`open_word`]): a warp
/// stop opens once no thread of the block is left at a yield (every lane of the warp has
/// then reached it), a barrier once no thread is left at a yield or a warp stop (every
/// thread of the block has then reached a barrier or finished).
pub const BARRIERS_OPEN: usize = 13;
/// Bit of [`BARRIERS_OPEN`]: threads at a warp stop resume.
pub const WARPS_OPEN: u64 = 1;
/// Bit of [`BARRIERS_OPEN`]: threads at a barrier resume.
pub const BARRIERS_OPEN_BIT: u64 = 2;

/// The [`BARRIERS_OPEN`] word of a round after one whose step function returned `stopped`
/// (every stop opens in a block's first round, when nobody waits yet).
pub const fn open_word(stopped: u32) -> u64 {
    if stopped & AT_YIELD != 0 {
        0
    } else if stopped & AT_WARP != 0 {
        WARPS_OPEN
    } else {
        WARPS_OPEN | BARRIERS_OPEN_BIT
    }
}
/// First loop index of the chunk a collapsed step function runs (see `collapse`).
pub const CHUNK_LO: usize = 14;
/// End (exclusive) of the chunk a collapsed step function runs.
pub const CHUNK_HI: usize = 15;
/// The largest loop bound for which a collapsed launch is equivalent: the index type's
/// maximum minus the launch's thread count.
pub const CHUNK_LIMIT: usize = 16;
/// Bytes of the launch's dynamic shared memory.
pub const DYNAMIC_SHARED_BYTES: usize = 17;
/// Address of the block's exchange area (see [`exchange_bytes`]).
pub const EXCHANGE_BASE: usize = 18;
/// Number of context words.
pub const CTX_WORDS: usize = 19;

/// Bytes of one thread's slot in the exchange area: its warp and block sequence numbers (two
/// `u32`), then two 8-byte values it alternates between.
pub const EXCHANGE_SLOT_BYTES: u64 = 24;
/// Counters of voting barriers per block, used in rotation.
pub const VOTE_COUNTERS: u32 = 3;

/// Bytes of one warp's memo of its reductions and votes: two entries (by the warp sequence
/// number's parity), each a `u32` tag (the sequence number plus one) and, 8 bytes in, the
/// result.
pub const WARP_MEMO_BYTES: u64 = 32;

/// Bytes of the voting barriers' counters: [`VOTE_COUNTERS`] `u32`s, rounded to 8 bytes.
pub const VOTE_COUNTER_BYTES: u64 = (VOTE_COUNTERS as u64 * 4).next_multiple_of(8);

/// Bytes of the exchange area of a block of `threads` threads: one slot per thread, the
/// [`VOTE_COUNTERS`] `u32` counters of voting barriers ([`VOTE_COUNTER_BYTES`]), then one
/// memo per warp ([`WARP_MEMO_BYTES`]). The executor zeroes it before each block's first
/// round.
pub const fn exchange_bytes(threads: u64) -> u64 {
    threads * EXCHANGE_SLOT_BYTES
        + VOTE_COUNTER_BYTES
        + threads.div_ceil(WARP_SIZE as u64) * WARP_MEMO_BYTES
}

/// Bit of a step function's result: some thread waits at a barrier.
pub const AT_BARRIER: u32 = 1;
/// Bit of a step function's result: some thread waits at a yield (see
/// [`super::lower`], grid-stride loops).
pub const AT_YIELD: u32 = 2;
/// Bit of a step function's result: some thread waits at a warp stop (a warp collective in
/// a state machine, see `collectives`).
pub const AT_WARP: u32 = 4;

/// The state word holding a thread's resume phase.
pub const PHASE_SLOT: usize = 0;
/// Least alignment, in bytes, of each shared array within the block's shared memory (an array of
/// wider elements is aligned to its element size).
pub const SHARED_ALIGN: u64 = 8;
/// Alignment, in bytes, of the dynamic shared memory within the block's shared memory.
pub const DYNAMIC_SHARED_ALIGN: u64 = 16;

/// Where the dynamic shared memory starts in the block's shared memory, after
/// `static_bytes` bytes of static shared arrays. The block's shared memory must then be 16-byte
/// aligned and hold this many bytes plus the dynamic size.
pub const fn dynamic_shared_offset(static_bytes: u64) -> u64 {
    static_bytes.next_multiple_of(DYNAMIC_SHARED_ALIGN)
}

/// The address `base + offset` (both `u64`) as a pointer of type `ptr`.
pub(crate) fn addr(
    em: &mut nacre_ir::FunctionBuilder<'_>,
    base: nacre_ir::Value,
    offset: u64,
    ptr: nacre_ir::Type,
) -> nacre_ir::Value {
    let a = if offset == 0 {
        base
    } else {
        let k = em.const_u64(offset);
        em.binary(nacre_ir::BinaryOp::Add, base, k)
    };
    em.cast(a, ptr)
}
