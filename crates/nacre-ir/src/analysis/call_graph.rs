//! The call graph of a module and its recursive functions.
//!
//! An edge `f -> g` is a live [`InstKind::Call`] of `g` in `f` (an instruction of a laid-out
//! block). Kernel launches are not edges: a launch hands the kernel to a runtime and never
//! re-enters the launching function's stack. Calls of external functions are not edges either
//! (the IR cannot see what they call).
//!
//! A function is *recursive* when it lies on a cycle of the graph: it calls itself, or it is in
//! a strongly connected component of more than one function. The components are found with
//! Tarjan's algorithm, run with an explicit stack (no host recursion, so deep call chains in
//! large modules cannot overflow the compiler's own stack), in time linear in the number of
//! functions and calls.
//!
//! Native backends use [`CallGraph::is_recursive`] to decide which functions check the
//! remaining machine stack on entry: every unbounded chain of native frames passes through a
//! recursive function, so checking only those bounds the stack while non-recursive functions
//! pay nothing.
//!
//! Like the other analyses, this tolerates malformed input: calls of functions that do not
//! exist are ignored.

use crate::entities::FuncId;
use crate::instructions::InstKind;
use crate::module::Module;
use cranelift_entity::EntityRef;

/// Marks a function not yet visited by Tarjan's algorithm.
const UNVISITED: u32 = u32::MAX;

/// The call graph of a module: each function's callees, its strongly connected component, and
/// whether it is recursive. Computed by [`CallGraph::compute`].
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct CallGraph {
    /// The distinct callees of each function, in order of first call, indexed by [`FuncId`].
    callees: Vec<Vec<FuncId>>,
    /// The strongly connected component of each function; components are numbered in the
    /// order Tarjan's algorithm completes them (callees before callers).
    component: Vec<u32>,
    /// Whether each function is on a cycle of the graph.
    recursive: Vec<bool>,
}

impl CallGraph {
    /// The call graph of `module`.
    pub fn compute(module: &Module) -> CallGraph {
        let n = module.functions.len();
        let mut callees: Vec<Vec<FuncId>> = vec![Vec::new(); n];
        let mut self_call = vec![false; n];
        for (id, func) in module.functions.iter() {
            let list = &mut callees[id.index()];
            for data in func.live_insts() {
                if let InstKind::Call(callee, _) = data.kind {
                    if callee.index() >= n {
                        continue;
                    }
                    if callee == id {
                        self_call[id.index()] = true;
                    }
                    if !list.contains(&callee) {
                        list.push(callee);
                    }
                }
            }
        }
        let component = strongly_connected(&callees);
        let mut size = vec![0usize; n];
        for &c in &component {
            size[c as usize] += 1;
        }
        let recursive = (0..n)
            .map(|f| self_call[f] || size[component[f] as usize] > 1)
            .collect();
        CallGraph {
            callees,
            component,
            recursive,
        }
    }

    /// The distinct functions that `f` calls, in order of first call (empty for a function
    /// that is not in the module).
    pub fn callees(&self, f: FuncId) -> &[FuncId] {
        self.callees.get(f.index()).map_or(&[], Vec::as_slice)
    }

    /// Whether `f` is recursive: it calls itself, directly or through other functions of the
    /// module. `false` for a function that is not in the module.
    pub fn is_recursive(&self, f: FuncId) -> bool {
        self.recursive.get(f.index()).copied().unwrap_or(false)
    }

    /// Whether `f` and `g` are in the same strongly connected component (each reaches the
    /// other); `false` if either is not in the module.
    pub fn same_component(&self, f: FuncId, g: FuncId) -> bool {
        match (self.component.get(f.index()), self.component.get(g.index())) {
            (Some(a), Some(b)) => a == b,
            _ => false,
        }
    }

    /// The recursive functions, in id order.
    pub fn recursive_functions(&self) -> impl Iterator<Item = FuncId> + '_ {
        self.recursive
            .iter()
            .enumerate()
            .filter(|(_, &r)| r)
            .map(|(i, _)| FuncId::new(i))
    }

    /// Whether the module has a recursive function.
    pub fn has_recursion(&self) -> bool {
        self.recursive.iter().any(|&r| r)
    }
}

/// The strongly connected component of every node of `graph` (Tarjan's algorithm, with an
/// explicit stack), numbered in completion order.
fn strongly_connected(graph: &[Vec<FuncId>]) -> Vec<u32> {
    let n = graph.len();
    let mut index = vec![UNVISITED; n];
    let mut lowlink = vec![0u32; n];
    let mut on_stack = vec![false; n];
    let mut component = vec![UNVISITED; n];
    let mut stack: Vec<usize> = Vec::new();
    // The depth-first path: a node and how many of its successors have been followed.
    let mut path: Vec<(usize, usize)> = Vec::new();
    let mut next_index = 0u32;
    let mut next_component = 0u32;
    for root in 0..n {
        if index[root] != UNVISITED {
            continue;
        }
        path.push((root, 0));
        index[root] = next_index;
        lowlink[root] = next_index;
        next_index += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(top) = path.len().checked_sub(1) {
            let (node, next) = path[top];
            if let Some(&succ) = graph[node].get(next) {
                path[top].1 += 1;
                let succ = succ.index();
                if index[succ] == UNVISITED {
                    index[succ] = next_index;
                    lowlink[succ] = next_index;
                    next_index += 1;
                    stack.push(succ);
                    on_stack[succ] = true;
                    path.push((succ, 0));
                } else if on_stack[succ] {
                    lowlink[node] = lowlink[node].min(index[succ]);
                }
                continue;
            }
            path.pop();
            if let Some(&(parent, _)) = path.last() {
                lowlink[parent] = lowlink[parent].min(lowlink[node]);
            }
            if lowlink[node] == index[node] {
                while let Some(member) = stack.pop() {
                    on_stack[member] = false;
                    component[member] = next_component;
                    if member == node {
                        break;
                    }
                }
                next_component += 1;
            }
        }
    }
    component
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::FunctionBuilder;
    use crate::function::FuncKind;
    use crate::types::Type;

    /// A module of `n` functions `() -> ()`; function `i` calls each of `calls[i]` in order.
    fn module(calls: &[&[usize]]) -> Module {
        let mut m = Module::new();
        for (i, callees) in calls.iter().enumerate() {
            let f = FunctionBuilder::build(&format!("f{i}"), FuncKind::Host, &[], None, |b, _| {
                for &c in *callees {
                    b.call(FuncId::new(c), Vec::new(), None);
                }
                b.ret(None);
            });
            m.add_function(f);
        }
        m.entry = Some(FuncId::new(0));
        m
    }

    fn recursive(m: &Module) -> Vec<usize> {
        CallGraph::compute(m)
            .recursive_functions()
            .map(|f| f.index())
            .collect()
    }

    #[test]
    fn a_dag_has_no_recursion() {
        let m = module(&[&[1, 2], &[2, 3], &[3], &[]]);
        let g = CallGraph::compute(&m);
        assert!(!g.has_recursion());
        assert_eq!(recursive(&m), Vec::<usize>::new());
        assert_eq!(g.callees(FuncId::new(0)), &[FuncId::new(1), FuncId::new(2)]);
        assert!(!g.same_component(FuncId::new(0), FuncId::new(1)));
    }

    #[test]
    fn a_self_call_is_recursion() {
        let m = module(&[&[1], &[1, 2], &[]]);
        assert_eq!(recursive(&m), vec![1]);
        assert!(CallGraph::compute(&m).has_recursion());
    }

    #[test]
    fn mutual_recursion_marks_the_whole_cycle() {
        // 0 -> 1 -> 2 -> 3 -> 1, and 3 -> 4 (a callee outside the cycle).
        let m = module(&[&[1], &[2], &[3], &[1, 4], &[]]);
        assert_eq!(recursive(&m), vec![1, 2, 3]);
        let g = CallGraph::compute(&m);
        assert!(g.same_component(FuncId::new(1), FuncId::new(3)));
        assert!(!g.same_component(FuncId::new(0), FuncId::new(1)));
        assert!(!g.same_component(FuncId::new(3), FuncId::new(4)));
    }

    #[test]
    fn separate_cycles_are_separate_components() {
        // Two cycles {1, 2} and {3, 4}, the second reached from the first; 5 calls itself.
        let m = module(&[&[1, 5], &[2], &[1, 3], &[4], &[3], &[5]]);
        let g = CallGraph::compute(&m);
        assert_eq!(recursive(&m), vec![1, 2, 3, 4, 5]);
        assert!(g.same_component(FuncId::new(1), FuncId::new(2)));
        assert!(g.same_component(FuncId::new(3), FuncId::new(4)));
        assert!(!g.same_component(FuncId::new(2), FuncId::new(3)));
        assert!(!g.same_component(FuncId::new(5), FuncId::new(0)));
    }

    #[test]
    fn dead_calls_and_unknown_callees_are_ignored() {
        let mut m = module(&[&[1], &[]]);
        // A call of f0 from f1 in a block outside the layout, and a call of a function that
        // does not exist: neither is an edge.
        let f1 = &mut m.functions[FuncId::new(1)];
        let mut b = FunctionBuilder::new(f1);
        let dead = b.create_block();
        b.switch_to_block(dead);
        b.call(FuncId::new(0), Vec::new(), None);
        b.call(FuncId::new(7), Vec::new(), None);
        b.ret(None);
        f1.layout.retain(|&blk| blk != dead);
        assert_eq!(recursive(&m), Vec::<usize>::new());
        assert!(!CallGraph::compute(&m).is_recursive(FuncId::new(9)));
    }

    #[test]
    fn a_long_chain_needs_no_host_recursion() {
        // 100 000 functions in one cycle: the iterative algorithm handles it in place.
        let n = 100_000;
        let mut m = Module::new();
        for i in 0..n {
            let f = FunctionBuilder::build("f", FuncKind::Host, &[], None, |b, _| {
                b.call(FuncId::new((i + 1) % n), Vec::new(), None);
                b.ret(None);
            });
            m.add_function(f);
        }
        let g = CallGraph::compute(&m);
        assert_eq!(g.recursive_functions().count(), n);
        assert!(g.same_component(FuncId::new(0), FuncId::new(n - 1)));
    }

    #[test]
    fn calls_with_values_count() {
        // `fact(n) = fact(n)`: a self-call with an argument and a result.
        let mut m = Module::new();
        let fact = FuncId::new(0);
        let f = FunctionBuilder::build(
            "fact",
            FuncKind::Host,
            &[Type::U64],
            Some(Type::U64),
            |b, p| {
                let r = b.call(fact, vec![p[0]], Some(Type::U64));
                b.ret(r);
            },
        );
        m.add_function(f);
        m.entry = Some(fact);
        assert!(CallGraph::compute(&m).is_recursive(fact));
    }
}
