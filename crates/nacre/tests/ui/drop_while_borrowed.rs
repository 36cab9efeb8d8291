// Use after free and drop during a launch cannot be written with the safe call: it borrows the
// memory of every pointer argument for the whole call (which returns only when its kernels
// have finished), so the memory can be neither freed, nor moved to another thread, nor
// resized, nor touched elsewhere meanwhile (a raw pointer, which carries no borrow, is not an
// argument of the safe call at all). Each function below is what a user would try; none
// compiles.
use nacre::gpu::{global_id_x, launch, Array, Block, Grid};
use nacre::prelude::*;
use nacre::kernel;

#[kernel]
fn mark(out: Ptr<u32>) {
    out[global_id_x()] = 1u32;
}

#[jit]
fn run_mark(out: Ptr<u32>) {
    launch(mark, Grid::new(1u32), Block::new(64u32), (out,));
}

type F = Compiled<(Ptr<u32>,), ()>;

/// The array is dropped while a borrow for the call is alive.
fn drop_then_call(f: &F) {
    let mut a = Array::<u32>::alloc_unified(64).unwrap();
    let r = &mut a;
    drop(a);
    let _ = f.call(r);
}

/// The array is freed explicitly while borrowed.
fn free_then_call(f: &F) {
    let a = Array::<u32>::alloc_unified(64).unwrap();
    let r = &a;
    a.free().unwrap();
    let _ = f.call(r);
}

/// The array is moved to another thread, which drops it, while the call borrows it.
fn drop_on_another_thread_during_the_call(f: &F) {
    let mut a = Array::<u32>::alloc_unified(64).unwrap();
    let r = &mut a;
    let t = std::thread::spawn(move || drop(a));
    let _ = f.call(r);
    t.join().unwrap();
}

/// The memory is written by this thread while a launch on another thread uses it.
fn touch_during_the_call(f: &F) {
    let mut v = vec![0u32; 64];
    std::thread::scope(|s| {
        s.spawn(|| f.call(&mut v));
        v[0] = 7;
    });
}

/// The vector is resized (its buffer reallocated) while a slice of it is lent.
fn resize_then_call(f: &F) {
    let mut v = vec![0u32; 64];
    let s = &mut v[..];
    v.push(1);
    let _ = f.call(s);
}

fn main() {
    let _ = run_mark;
    let _ = (
        drop_then_call,
        free_then_call,
        drop_on_another_thread_during_the_call,
        touch_during_the_call,
        resize_then_call,
    );
}
