//! Grid-stride loops unrolled before their yields: [`unroll_strided_loops`].
//!
//! In [`CpuMode::Grid`](crate::step::lower::CpuMode) a grid- or block-stride loop yields at
//! its back edge (`stride_loops`), so that each round of the state machine runs one iteration
//! of every thread, as a warp would. The price is a yield per iteration: the thread saves its
//! live values, the round moves to the next thread, and later reloads them. For a loop whose
//! body is a few instructions (a histogram's `local[data[i] & 255] += 1`) that is most of the
//! work. Unrolled [`UNROLL`] times, the loop yields once per [`UNROLL`] iterations: each copy
//! keeps the loop's test (any copy may leave), each copy's latch goes on to the next copy's
//! header and the last one back to the loop's header, where the yield goes. A thread then
//! touches [`UNROLL`] elements a grid apart before the next thread takes over: as many cache
//! lines of one set, which stay cached for the next thread (which reads the neighbouring
//! elements), where a whole thread's loop would evict them.
//!
//! A loop qualifies when it is innermost, its one latch passes `p + s` back to a header
//! parameter `p` (`s` computed from the grid or block size), it holds no barrier, collective,
//! call or shared array (each copy would declare an array of its own), and it is at most
//! [`MAX_INSTS`] instructions. Values defined in the loop and used after it get one
//! definition per copy, reconnected by SSA repair.

use super::stride_loops::{advances_by_size, sized_values};
use crate::unroll::loop_blocks;
use nacre_ir::analysis::{compute_loops, DominatorTree};
use nacre_ir::transform::repair_everywhere;
use nacre_ir::transform::{copy_blocks, Variable};
use nacre_ir::{Block, Function, InstKind, Value};
use std::collections::{HashMap, HashSet};

/// Copies of a qualifying loop's body.
pub const UNROLL: usize = 8;

/// The most instructions a loop may have to be unrolled.
pub const MAX_INSTS: usize = 48;

/// Unrolls the grid-stride loops of `f` that qualify (module docs), except those headed by a
/// block of `skip`; returns the new latches
/// (each unrolled loop's last copy's), where the yields go: their back edge passes the last
/// copy's advance, which `stride_loops` does not recognise as the header's own.
pub(crate) fn unroll_strided_loops(f: &mut Function, skip: &HashSet<Block>) -> Vec<Block> {
    let mut done = skip.clone();
    let mut latches = Vec::new();
    while let Some(lp) = StridedLoop::find(f, &done) {
        done.insert(lp.header);
        latches.push(lp.unroll(f));
    }
    latches
}

/// A loop that qualifies (module docs).
struct StridedLoop {
    header: Block,
    /// The header, then its other blocks, in layout order.
    blocks: Vec<Block>,
    latch: Block,
}

impl StridedLoop {
    /// The first qualifying loop not in `done`.
    fn find(f: &Function, done: &HashSet<Block>) -> Option<StridedLoop> {
        let dom = DominatorTree::compute(f);
        let sized = sized_values(f, dom.reverse_postorder());
        if sized.is_empty() {
            return None;
        }
        let loops = compute_loops(f);
        let preds = f.predecessors();
        loops.headers.iter().copied().find_map(|header| {
            if done.contains(&header) {
                return None;
            }
            let innermost = !loops
                .headers
                .iter()
                .any(|&h| h != header && loops.contains(header, h));
            let (blocks, latch) = loop_blocks(f, &loops, &preds, header)?;
            let insts = blocks.iter().flat_map(|&b| &f.blocks[b].insts);
            let plain = insts.clone().all(|&i| {
                let k = &f.insts[i].kind;
                // A shared array declared in the loop would be one array per copy.
                let excluded = matches!(
                    k,
                    InstKind::Barrier
                        | InstKind::Call(..)
                        | InstKind::CallExtern(..)
                        | InstKind::SharedAlloc { .. }
                );
                !excluded && !k.is_collective()
            });
            let small = insts.count() <= MAX_INSTS;
            let t = f.terminator(latch)?;
            let InstKind::Jump(ref back) = f.insts[t].kind else {
                return None;
            };
            let strided = back
                .args
                .iter()
                .zip(&f.blocks[header].params)
                .any(|(&arg, &p)| advances_by_size(f, &sized, arg, p));
            (innermost && plain && small && strided && back.block == header).then_some(
                StridedLoop {
                    header,
                    blocks,
                    latch,
                },
            )
        })
    }

    /// Chains [`UNROLL`] copies of the loop (module docs); returns the new latch.
    fn unroll(self, f: &mut Function) -> Block {
        let mut copies = vec![self.blocks.clone()];
        let mut maps = vec![HashMap::new()];
        for _ in 1..UNROLL {
            let c = copy_blocks(f, &self.blocks, &HashMap::new(), true);
            copies.push(self.blocks.iter().map(|b| c.blocks[b]).collect());
            maps.push(c.values);
        }
        let at = self.position(self.latch);
        for k in 0..UNROLL {
            let (latch, own) = (copies[k][at], copies[k][0]);
            let next = copies[(k + 1) % UNROLL][0];
            if let Some(t) = f.terminator(latch) {
                for call in f.insts[t].kind.successors_mut() {
                    if call.block == own {
                        call.block = next;
                    }
                }
            }
        }
        let end = f
            .layout
            .iter()
            .rposition(|b| self.blocks.contains(b))
            .map_or(f.layout.len(), |i| i + 1);
        let added: Vec<Block> = copies[1..].iter().flatten().copied().collect();
        f.layout.splice(end..end, added);
        self.reconnect(f, &maps, &copies);
        copies[UNROLL - 1][at]
    }

    fn position(&self, b: Block) -> usize {
        self.blocks.iter().position(|&x| x == b).unwrap_or(0)
    }

    /// Every value the loop defines now has one definition per copy: reconnects the uses
    /// after the loop (those in the copies are the copies' own).
    fn reconnect(&self, f: &mut Function, maps: &[HashMap<Value, Value>], copies: &[Vec<Block>]) {
        let mut vars = Vec::new();
        for (pos, &b) in self.blocks.iter().enumerate() {
            let mut defined: Vec<Value> = f.blocks[b].params.clone();
            defined.extend(f.blocks[b].insts.iter().filter_map(|&i| f.insts[i].result));
            for v in defined {
                vars.push(Variable {
                    value: v,
                    redefs: (1..UNROLL).map(|k| (copies[k][pos], maps[k][&v])).collect(),
                });
            }
        }
        repair_everywhere(f, &vars);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_host::{kernel, launch_once};
    use nacre_ir::analysis::compute_loops;
    use nacre_ir::{
        verify, BinaryOp, CmpOp, Dim, FuncKind, FunctionBuilder, GpuIndex, InstKind, Module,
        Scalar, Type,
    };

    /// `k(out, n)`: `c = 0; for (p = tid; p < n; p += blockDim) { out[p] = c; c += 1 }` then
    /// `out[0] = c` (a value of the loop used after it); with `barrier`, a barrier in the body,
    /// with `shared`, a shared array declared in it.
    fn strided(barrier: bool, shared: bool) -> Module {
        let mut m = Module::new();
        let p32 = Type::ptr(Scalar::U32);
        let k = m.add_function(FunctionBuilder::build(
            "k",
            FuncKind::Kernel,
            &[p32, Type::U32],
            None,
            |b, a| {
                let tid = b.gpu_index(GpuIndex::ThreadIdx, Dim::X);
                let step = b.gpu_index(GpuIndex::BlockDim, Dim::X);
                let zero = b.const_u32(0);
                let header = b.create_block();
                let body = b.create_block();
                let exit = b.create_block();
                b.jump(header, vec![tid, zero]);
                b.switch_to_block(header);
                let p = b.append_block_param(header, Type::U32);
                let c = b.append_block_param(header, Type::U32);
                let go = b.cmp(CmpOp::Lt, p, a[1]);
                b.branch(go, body, vec![], exit, vec![]);
                b.switch_to_block(body);
                let at = b.elem_ptr(a[0], p);
                b.store(at, c);
                if barrier {
                    b.barrier();
                }
                if shared {
                    let s = b.shared_alloc(Scalar::U32, 32);
                    let zero = b.const_u32(0);
                    let at = b.elem_ptr(s, zero);
                    b.store(at, c);
                }
                let next = b.binary(BinaryOp::Add, p, step);
                let one = b.const_u32(1);
                let c1 = b.binary(BinaryOp::Add, c, one);
                b.jump(header, vec![next, c1]);
                b.switch_to_block(exit);
                let first = b.elem_ptr(a[0], zero);
                b.store(first, c);
                b.ret(None);
            },
        ));
        launch_once(&mut m, k, &[p32, Type::U32], [1, 1, 1], [64, 1, 1]);
        m
    }

    #[test]
    fn a_small_strided_loop_becomes_one_loop_of_eight_copies() {
        let mut m = verify(strided(false, false)).unwrap().into_inner();
        let latches = unroll_strided_loops(kernel(&mut m), &HashSet::new());
        assert_eq!(latches.len(), 1);
        let m = verify(m).expect("the unrolled kernel verifies");
        let k = m
            .module()
            .functions
            .values()
            .find(|f| f.kind == FuncKind::Kernel)
            .unwrap();
        let loops = compute_loops(k);
        assert_eq!(loops.headers.len(), 1, "{k}");
        let stores = k
            .live_insts()
            .filter(|d| matches!(d.kind, InstKind::Store(..)))
            .count();
        assert_eq!(stores, UNROLL + 1, "{k}");
        // The returned latch closes the loop.
        let back = k.successors(latches[0]);
        assert!(back.contains(&loops.headers[0]), "{k}");
    }

    #[test]
    fn loops_with_barriers_or_shared_arrays_stay() {
        for (barrier, shared) in [(true, false), (false, true)] {
            let mut m = verify(strided(barrier, shared)).unwrap().into_inner();
            assert!(unroll_strided_loops(kernel(&mut m), &HashSet::new()).is_empty());
        }
    }
}
