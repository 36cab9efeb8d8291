//! Values carried across barriers (see "Regions, skeleton and thread loops" in the docs of
//! `regions`): liveness over the parts, one state word per thread for each non-uniform value
//! live across a barrier, its save at the barrier's stop and its reload at the head of each
//! thread loop it is live into. Uniform values need no state: they flow in SSA form.

use super::parts::Parts;
use super::uniformity::Divergence;
use crate::step::state::{load_slot, store_slot, SlotAlloc};
use nacre_ir::analysis::live_in;
use nacre_ir::FunctionBuilder;
use nacre_ir::{BinaryOp, Block, Function, Type, Value};
use std::collections::{BTreeMap, HashMap};

/// Liveness over the parts, and the state words of the values carried across barriers.
pub(super) struct Carried {
    /// Part → the values live into it.
    live: HashMap<Block, Vec<Value>>,
    /// Value → its state word (from 0: thread loops have no phase).
    slots: BTreeMap<Value, usize>,
    /// State words per thread.
    words: usize,
}

impl Carried {
    /// Liveness over the parts (a barrier's part flows into the part after it), and one state
    /// word per non-uniform value live across a barrier; `None` if a non-uniform value that
    /// is not carried across a barrier is live into a loop's entry.
    pub(super) fn find(
        g: &Function,
        parts: &Parts,
        div: &Divergence,
        entries: &[Block],
    ) -> Option<Carried> {
        let live = live_in(g, &parts.list, |b| match parts.waits.get(&b) {
            Some(&k) => vec![parts.resumes[k - 1]],
            None => g.successors(b),
        });
        let mut carried = Carried {
            live,
            slots: BTreeMap::new(),
            words: 0,
        };
        let mut alloc = SlotAlloc::new(0);
        for &r in &parts.resumes {
            for &v in carried.live.get(&r).map(Vec::as_slice).unwrap_or(&[]) {
                if div.uniform(v) {
                    continue;
                }
                carried
                    .slots
                    .entry(v)
                    .or_insert_with(|| alloc.take(g.values[v].ty));
            }
        }
        carried.words = alloc.words();
        for &e in entries {
            if carried
                .live_at(e)
                .iter()
                .any(|v| !div.uniform(*v) && !carried.slots.contains_key(v))
            {
                return None;
            }
        }
        Some(carried)
    }

    /// The values live into part `p`.
    pub(super) fn live_at(&self, p: Block) -> &[Value] {
        self.live.get(&p).map(Vec::as_slice).unwrap_or(&[])
    }

    /// State words per thread.
    pub(super) fn words(&self) -> usize {
        self.words
    }

    /// Whether the loop entered at `e` with `body` reloads or saves state words.
    fn uses_state(&self, parts: &Parts, e: Block, body: &[Block]) -> bool {
        self.words() > 0
            && (self.live_at(e).iter().any(|v| self.slots.contains_key(v))
                || body.iter().any(|p| {
                    parts.waits.get(p).is_some_and(|&k| {
                        self.live_at(parts.resumes[k - 1])
                            .iter()
                            .any(|v| self.slots.contains_key(v))
                    })
                }))
    }

    /// Emits the head of a thread loop's share of the state: the address of thread `t`'s
    /// state words (from the state area at `base`), if the loop entered at `e` with `body`
    /// uses them, and the reloads of the values live into `e` (original → reload).
    pub(super) fn reload(
        &self,
        em: &mut FunctionBuilder<'_>,
        parts: &Parts,
        (e, body): (Block, &[Block]),
        base: Value,
        t: Value,
    ) -> (Option<Value>, Vec<(Value, Value)>) {
        let words = self.words() as u64;
        let state = self.uses_state(parts, e, body).then(|| {
            let t64 = em.cast(t, Type::U64);
            let stride = em.const_u64(words * 8);
            let off = em.binary(BinaryOp::Mul, t64, stride);
            em.binary(BinaryOp::Add, base, off)
        });
        let mut reloads = Vec::new();
        if let Some(state) = state {
            for &v in self.live_at(e) {
                if let Some(&slot) = self.slots.get(&v) {
                    let ty = em.value_type(v);
                    reloads.push((v, load_slot(em, state, slot, ty)));
                }
            }
        }
        (state, reloads)
    }

    /// The values to save at barrier `k`: value, state word, type.
    pub(super) fn saves(&self, g: &Function, parts: &Parts, k: usize) -> Vec<(Value, usize, Type)> {
        self.live_at(parts.resumes[k - 1])
            .iter()
            .filter_map(|&v| self.slots.get(&v).map(|&s| (v, s, g.values[v].ty)))
            .collect()
    }
}

/// Emits the saves of `saves` (see [`Carried::saves`]) into the thread's state words at
/// `state`, if the loop has any.
pub(super) fn save(
    em: &mut FunctionBuilder<'_>,
    state: Option<Value>,
    saves: Vec<(Value, usize, Type)>,
) {
    if let Some(state) = state {
        for (v, slot, ty) in saves {
            store_slot(em, state, slot, v, ty);
        }
    }
}
