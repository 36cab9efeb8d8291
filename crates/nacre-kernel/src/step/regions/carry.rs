//! Values carried across barriers (see "Regions, skeleton and thread loops" in the docs of
//! `regions`): liveness over the parts, one state word per thread for each non-uniform value
//! live across a barrier, its save at the stops of the thread loop that defines it and its
//! reload at the head of each thread loop that uses it. Uniform values need no state: they
//! flow in SSA form.
//!
//! A value keeps its word from its definition to its last use, so a thread loop that a value
//! only passes through (live into it and across its stop, neither used nor defined in it)
//! neither reloads nor saves it: the softmax's sixteen values per thread pass through the
//! eight thread loops of each of its block-wide reductions. A loop whose body defines a value
//! (around a uniform loop with a barrier, the definition can follow the loop's entry) saves
//! it, and then reloads it too: on a path that does not reach the definition, the reload is
//! what the save stores.

use super::parts::Parts;
use super::remat::{self, recomputable};
use super::uniformity::Divergence;
use super::Input;
use crate::step::state::{Lane, SlotAlloc};
use nacre_ir::analysis::live_in;
use nacre_ir::FunctionBuilder;
use nacre_ir::{Block, Function, Type, Value};
use std::collections::{BTreeMap, HashMap, HashSet};

/// Liveness over the parts, and the state words of the values carried across barriers.
pub(super) struct Carried {
    /// Part → the values live into it.
    live: HashMap<Block, Vec<Value>>,
    /// Value → its state word (from 0: thread loops have no phase).
    slots: BTreeMap<Value, usize>,
    /// Values live across a barrier that each thread loop recomputes (see `remat`).
    recomputed: BTreeMap<Value, ()>,
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
        (entries, input): (&[Block], &Input<'_>),
    ) -> Option<Carried> {
        let live = live_in(g, &parts.list, |b| match parts.waits.get(&b) {
            Some(&k) => vec![parts.resumes[k - 1]],
            None => g.successors(b),
        });
        let mut carried = Carried {
            live,
            slots: BTreeMap::new(),
            recomputed: BTreeMap::new(),
            words: 0,
        };
        let mut alloc = SlotAlloc::new(0);
        for &r in &parts.resumes {
            for &v in carried.live.get(&r).map(Vec::as_slice).unwrap_or(&[]) {
                if div.uniform(v) || carried.recomputed.contains_key(&v) {
                    continue;
                }
                if recomputable(input, v) {
                    carried.recomputed.insert(v, ());
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
            if carried.live_at(e).iter().any(|v| {
                !div.uniform(*v)
                    && !carried.slots.contains_key(v)
                    && !carried.recomputed.contains_key(v)
            }) {
                return None;
            }
        }
        Some(carried)
    }

    /// Whether `v` is recomputed by each thread loop instead of saved (see `remat`).
    pub(super) fn recomputes(&self, v: Value) -> bool {
        self.recomputed.contains_key(&v)
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

    /// Emits the reloads, at the head of a thread loop, of the values live into its entry
    /// `e` that its `body` uses or defines (`touched`, see [`touched_in`]; original → reload):
    /// loaded from the thread's elements of the state (`lane`), or recomputed from the loop's
    /// thread indices (`seed`: the kernel's → the loop's). Returns `lane` if the loop uses the
    /// state at all.
    pub(super) fn reload(
        &self,
        em: &mut FunctionBuilder<'_>,
        input: &Input<'_>,
        parts: &Parts,
        (e, body, touched): (Block, &[Block], &HashSet<Value>),
        (lane, seed): (Lane, &HashMap<Value, Value>),
    ) -> (Option<Lane>, Vec<(Value, Value)>) {
        let mut reloads = Vec::new();
        let mut made = seed.clone();
        for &v in self.live_at(e) {
            if self.recomputed.contains_key(&v) {
                reloads.push((v, remat::emit(em, input, v, &mut made)));
            }
        }
        if !self.uses_state(parts, e, body) {
            return (None, reloads);
        }
        for &v in self.live_at(e).iter().filter(|v| touched.contains(v)) {
            if let Some(&slot) = self.slots.get(&v) {
                let ty = em.value_type(v);
                reloads.push((v, lane.load(em, slot, ty)));
            }
        }
        (Some(lane), reloads)
    }

    /// The values to save at barrier `k` of a thread loop whose body defines `defined` (see
    /// [`defined_in`]): value, state word, type.
    pub(super) fn saves(
        &self,
        g: &Function,
        parts: &Parts,
        (k, defined): (usize, &HashSet<Value>),
    ) -> Vec<(Value, usize, Type)> {
        self.live_at(parts.resumes[k - 1])
            .iter()
            .filter(|v| defined.contains(v))
            .filter_map(|&v| self.slots.get(&v).map(|&s| (v, s, g.values[v].ty)))
            .collect()
    }
}

/// The values that `body` uses or defines (see [`defined_in`]).
pub(super) fn touched_in(g: &Function, body: &[Block]) -> HashSet<Value> {
    let mut touched = defined_in(g, body);
    for &p in body {
        for &i in &g.blocks[p].insts {
            g.insts[i].kind.for_each_operand(|v| {
                touched.insert(v);
            });
        }
    }
    touched
}

/// The values that `body` defines: its parts' parameters and results.
pub(super) fn defined_in(g: &Function, body: &[Block]) -> HashSet<Value> {
    let mut defined = HashSet::new();
    for &p in body {
        defined.extend(g.blocks[p].params.iter().copied());
        defined.extend(g.blocks[p].insts.iter().filter_map(|&i| g.insts[i].result));
    }
    defined
}

/// Emits the saves of `saves` (see [`Carried::saves`]) into the thread's elements of the
/// state, if the loop uses it.
pub(super) fn save(
    em: &mut FunctionBuilder<'_>,
    lane: Option<Lane>,
    saves: Vec<(Value, usize, Type)>,
) {
    if let Some(lane) = lane {
        for (v, slot, ty) in saves {
            lane.store(em, slot, v, ty);
        }
    }
}
